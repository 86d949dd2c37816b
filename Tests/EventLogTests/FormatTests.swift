import EventLog
import Foundation
import TestSupport
import Testing

@Suite("Log format")
struct FormatTests {
    @Test("CRC-32C matches the standard check value and LevelDB's mask")
    func crcVectors() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)  // RFC 3720 B.4
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum(Array(0...31)) == 0x46DD_794E)
        let crc: UInt32 = 0x1234_5678
        #expect(CRC32C.mask(crc) == ((crc >> 15) | (crc << 17)) &+ 0xA282_EAD8)
    }

    @Test("Combining the states of two runs gives the state of both, at every split of seeded random inputs")
    func crcCombine() {
        var random = SeededRandom()
        for _ in 0..<200 {
            let count = Int.random(in: 0...5_000, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            let split = Int.random(in: 0...count, using: &random)
            bytes.withUnsafeBytes { all in
                let whole = CRC32C.extend(0xFFFF_FFFF, all)
                let first = CRC32C.extend(0xFFFF_FFFF, UnsafeRawBufferPointer(rebasing: all[..<split]))
                let second = CRC32C.extend(0, UnsafeRawBufferPointer(rebasing: all[split...]))
                #expect(
                    CRC32C.combine(first, second, secondLength: count - split) == whole, "split \(split) of \(count)")
            }
        }
        // Lengths past any test input: a run of zeros from zero stays zero, so combining only carries the first state.
        let first = [UInt8](repeating: 7, count: 100).withUnsafeBytes { CRC32C.extend(0xFFFF_FFFF, $0) }
        let zeros = [UInt8](repeating: 0, count: 3 << 20)
        let whole = zeros.withUnsafeBytes { CRC32C.extend(first, $0) }
        #expect(CRC32C.combine(first, 0, secondLength: zeros.count) == whole)
    }

    @Test("A two-record log is byte for byte Specs/vectors/log-two-records.hex")
    func workedExample() throws {
        let dir = TemporaryDirectory()
        let io = FaultInjectingIO()
        io.plan.withLock { $0.fixedRandom = Array(0..<16) }
        var configuration = EventLog.Configuration()
        configuration.io = io
        let log = try EventLog.open(directory: dir.path, configuration: configuration)
        try log.append([PendingRecord(type: 1, payload: Array("hello".utf8), recordedAt: 1_700_000_000_000_000)])
        try log.append([PendingRecord(type: 2, payload: Array("{}".utf8), recordedAt: 1_700_000_000_000_001)])
        log.close()
        let bytes = Bytes.read(dir.sub("events.log"))
        let vector = Repository.root + "/Specs/vectors/log-two-records.hex"
        if Repository.recordGolden {
            try Bytes.hex(bytes).write(toFile: vector, atomically: true, encoding: .utf8)
        }
        let expected = Bytes.unhex(try String(contentsOfFile: vector, encoding: .utf8))
        #expect(bytes.count == 119)
        #expect(bytes == expected, "re-record with MOODLEDGER_RECORD_GOLDEN=1 only if the format changed on purpose")
    }

    @Test("Files are 0600 and the directory 0700")
    func permissions() throws {
        let dir = TemporaryDirectory()
        let ledger = dir.sub("new")
        try makeLog(at: ledger, count: 1)
        func mode(_ path: String) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as! NSNumber).intValue
        }
        #expect(try mode(ledger) == 0o700)
        #expect(try mode(ledger + "/events.log") == 0o600)
        #expect(try mode(ledger + "/LOCK") == 0o600)
    }

    @Test("Append validates type and size and writes nothing on refusal")
    func appendValidation() throws {
        let dir = TemporaryDirectory()
        let log = try EventLog.open(directory: dir.path)
        #expect(throws: EventLogError.self) { try log.append(type: 0, payload: []) }
        #expect(throws: EventLogError.self) { try log.append(type: 0xFFFF, payload: []) }
        #expect(throws: EventLogError.self) {
            try log.append(type: 1, payload: [UInt8](repeating: 0, count: (1 << 20) + 1))
        }
        #expect(throws: EventLogError.self) { try log.append([]) }
        #expect(log.lastSeq == 0)
        #expect(try log.append(type: 1, payload: [UInt8](repeating: 7, count: 1 << 20)) == 1)
        #expect(log.failure == nil)
    }
}
