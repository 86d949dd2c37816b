import Foundation
import TestSupport
import Testing

@testable import EventLog
@testable import EventLogFormat
@testable import Platform

@Suite("Mapped files")
struct MappedFileTests {
    /// A file of `count` bytes whose every 4 KiB page starts with its number (a shifted mapping reads other numbers).
    private func write(_ count: Int, to path: String) throws {
        var bytes = [UInt8](repeating: 0xA5, count: count)
        for page in stride(from: 0, to: count - 3, by: 4_096) {
            withUnsafeBytes(of: UInt32(page / 4_096).littleEndian) {
                bytes.replaceSubrange(page..<(page + 4), with: $0)
            }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    @Test(
        "A file of 32 MiB or more is mapped one page past a 2 MiB boundary (never in 2 MiB pages) and reads its own bytes",
        arguments: [4_096, 2 << 20, MappedFile.offBoundaryFrom, MappedFile.offBoundaryFrom + (5 << 20) + 123])
    func placedOffHugePages(size: Int) throws {
        let directory = TemporaryDirectory("mapped")
        let path = directory.sub("file")
        try write(size, to: path)
        let mapped = try AtomicFile.map(path)
        #expect(mapped.bytes.count == size)
        for page in stride(from: 0, to: size - 3, by: 4_096) where page % (1 << 20) == 0 || page + 4_096 >= size - 3 {
            #expect(
                mapped.bytes.loadUnaligned(fromByteOffset: page, as: UInt32.self) == UInt32(page / 4_096).littleEndian)
        }
        #expect(mapped.bytes[size - 1] == 0xA5 || size % 4_096 < 4)
        if size >= MappedFile.offBoundaryFrom {
            let address = Int(bitPattern: mapped.bytes.baseAddress!)
            #expect(address % (2 << 20) == Int(sysconf(Int32(_SC_PAGESIZE))))
        }
    }

    @Test("A large mapped file cut short under the process reads zeros past the cut and says it is damaged")
    func truncatedLargeFile() throws {
        let directory = TemporaryDirectory("mapped")
        let path = directory.sub("file")
        let size = MappedFile.offBoundaryFrom + (1 << 20)
        try write(size, to: path)
        let mapped = try AtomicFile.map(path)
        #expect(!mapped.isDamaged)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: 1 << 20)
        try handle.close()
        #expect(mapped.bytes[(2 << 20) + 17] == 0)
        #expect(mapped.isDamaged)
        #expect(mapped.bytes[17] == 0xA5)
    }
}
