@testable import EventLog
import Foundation
import TestSupport
import Testing

@Suite("Mapped files")
struct MappedFileTests {
    /// A file of `count` bytes whose byte i is a mix of i (a shifted mapping would read other bytes).
    private func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) } }

    @Test("A large file is mapped one page past a 2 MiB boundary (never in 2 MiB pages) and reads its own bytes",
          arguments: [4_096, 2 << 20, (3 << 20) + 123])
    func placedOffHugePages(size: Int) throws {
        let directory = TemporaryDirectory("mapped")
        let path = directory.sub("file")
        let bytes = pattern(size)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let mapped = try AtomicFile.map(path)
        #expect(mapped.bytes.count == size)
        #expect(mapped.bytes.elementsEqual(bytes))
        if size >= 2 << 20 {
            let address = Int(bitPattern: mapped.bytes.baseAddress!)
            #expect(address % (2 << 20) == Int(sysconf(Int32(_SC_PAGESIZE))))
        }
    }

    @Test("A large mapped file cut short under the process reads zeros past the cut and says it is damaged")
    func truncatedLargeFile() throws {
        let directory = TemporaryDirectory("mapped")
        let path = directory.sub("file")
        let size = 3 << 20
        try Data(pattern(size)).write(to: URL(fileURLWithPath: path))
        let mapped = try AtomicFile.map(path)
        #expect(!mapped.isDamaged)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 1 << 20)
        try handle.close()
        #expect(mapped.bytes[(2 << 20) + 17] == 0)
        #expect(mapped.isDamaged)
        #expect(mapped.bytes[17] == pattern(18)[17])
    }
}
