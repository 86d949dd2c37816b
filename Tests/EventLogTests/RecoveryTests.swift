import EventLog
import Foundation
import TestSupport
import Testing

@Suite("Recovery on open")
struct RecoveryTests {
    /// Offsets at which each record starts, and the file end, from a clean log.
    func recordOffsets(_ dir: String) throws -> [Int64] {
        let (log, _) = try readPayloads(dir)
        defer { log.close() }
        return try log.records().map(\.offset) + [log.endOffset]
    }

    @Test("Truncating at every byte of the last three records reopens with exactly the complete records")
    func truncateEverywhere() throws {
        let dir = TemporaryDirectory()
        let payloads = try makeLog(at: dir.path, count: 8)
        let offsets = try recordOffsets(dir.path)
        let original = Bytes.read(dir.sub("events.log"))
        let path = dir.sub("events.log")
        for cut in Int(offsets[offsets.count - 4])..<original.count {
            Bytes.write(Array(original[0..<cut]), to: path)
            let complete = offsets.filter { $0 <= Int64(cut) }.count - 1  // records wholly before the cut
            let (log, read) = try readPayloads(dir.path)
            #expect(read == Array(payloads[0..<complete]), "cut at \(cut)")
            let atBoundary = offsets.contains(Int64(cut))
            #expect(
                (log.recoveryNotice == nil) == atBoundary, "cut at \(cut): \(String(describing: log.recoveryNotice))")
            if let notice = log.recoveryNotice {
                #expect(notice.offset == offsets[complete] && notice.lastSeq == UInt64(complete))
                #expect(notice.bytesRemoved == Int64(cut) - offsets[complete])
            }
            log.close()
            #expect(Bytes.read(path).count == Int(offsets[complete]), "torn tail trimmed on disk")
        }
    }

    @Test("Every single-bit flip is detected as corruption and no open returns other data")
    func flipEveryBit() throws {
        let dir = TemporaryDirectory()
        try makeLog(at: dir.path, count: 4, payloadSize: { 3 + $0 })
        let path = dir.sub("events.log")
        let original = Bytes.read(path)
        let offsets = try recordOffsets(dir.path)
        for byte in 0..<original.count {
            for bit in 0..<8 {
                var damaged = original
                damaged[byte] ^= UInt8(1 << bit)
                Bytes.write(damaged, to: path)
                do {
                    let (log, _) = try readPayloads(dir.path)
                    log.close()
                    Issue.record("flip of bit \(bit) in byte \(byte) went undetected")
                } catch let error as EventLogError {
                    #expect(error.code == .corrupted, "byte \(byte): \(error)")
                    // The error names the damaged record: the last record start at or before the byte.
                    let expectedOffset = byte < 48 ? 0 : offsets.last { $0 <= Int64(byte) }!
                    #expect(error.offset == expectedOffset, "byte \(byte): \(error)")
                    let expectedSeq = byte < 48 ? 0 : UInt64(offsets.firstIndex(of: expectedOffset)! + 1)
                    #expect(error.seq == expectedSeq, "byte \(byte): \(error)")
                }
                #expect(Bytes.read(path) == damaged, "a refused open must not change the file")
            }
        }
    }

    @Test("Zero-filled tails of 1...8192 bytes are trimmed as torn tails")
    func zeroTails() throws {
        let dir = TemporaryDirectory()
        let payloads = try makeLog(at: dir.path, count: 3)
        let path = dir.sub("events.log")
        let clean = Bytes.read(path)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        for zeros in 1...8192 {
            try handle.truncate(atOffset: UInt64(clean.count + zeros))
            let (log, read) = try readPayloads(dir.path)
            #expect(read == payloads)
            #expect(log.recoveryNotice?.reason == "zero-filled tail" || zeros < 32, "\(zeros) zeros")
            #expect(log.recoveryNotice?.bytesRemoved == Int64(zeros))
            log.close()
        }
        #expect(Bytes.read(path) == clean)
    }

    @Test("Zeros followed by a valid record are corruption, not a torn tail")
    func zerosInTheMiddle() throws {
        let dir = TemporaryDirectory()
        try makeLog(at: dir.path, count: 3)
        let offsets = try recordOffsets(dir.path)
        let path = dir.sub("events.log")
        var bytes = Bytes.read(path)
        for i in Int(offsets[1])..<Int(offsets[2]) { bytes[i] = 0 }
        Bytes.write(bytes, to: path)
        #expect { _ = try readPayloads(dir.path) } throws: { error in
            let error = error as! EventLogError
            return error.code == .corrupted && error.offset == offsets[1] && error.seq == 2
        }
    }

    /// Rewrites record `index`'s length and recomputes its header checksum, as a buggy or hostile writer would.
    func forgeLength(_ bytes: inout [UInt8], at offset: Int, length: UInt32) {
        withUnsafeBytes(of: length.littleEndian) { for i in 0..<4 { bytes[offset + 8 + i] = $0[i] } }
        let headerCRC = CRC32C.mask(CRC32C.checksum(Array(bytes[(offset + 8)..<(offset + 32)])))
        withUnsafeBytes(of: headerCRC.littleEndian) { for i in 0..<4 { bytes[offset + 4 + i] = $0[i] } }
    }

    @Test("Garbage lengths are never trusted", arguments: [UInt32(1 << 20) + 1, UInt32.max, UInt32(1 << 31)])
    func garbageLengths(length: UInt32) throws {
        let dir = TemporaryDirectory()
        try makeLog(at: dir.path, count: 3)
        let offsets = try recordOffsets(dir.path)
        let path = dir.sub("events.log")
        var bytes = Bytes.read(path)
        // A length above the maximum with a valid header checksum: the writer never wrote it.
        forgeLength(&bytes, at: Int(offsets[2]), length: length)
        Bytes.write(bytes, to: path)
        #expect { _ = try readPayloads(dir.path) } throws: { error in
            (error as! EventLogError).code == .corrupted && (error as! EventLogError).offset == offsets[2]
        }
    }

    @Test("A length past the end with a valid header checksum is a torn tail; in the middle it is corruption")
    func lengthPastEnd() throws {
        let dir = TemporaryDirectory()
        let payloads = try makeLog(at: dir.path, count: 3)
        let offsets = try recordOffsets(dir.path)
        let path = dir.sub("events.log")
        let original = Bytes.read(path)
        var bytes = original
        forgeLength(&bytes, at: Int(offsets[2]), length: 1000)
        Bytes.write(bytes, to: path)
        let (log, read) = try readPayloads(dir.path)
        #expect(read == Array(payloads[0..<2]))
        #expect(log.recoveryNotice?.reason == "incomplete payload")
        log.close()
        bytes = original
        forgeLength(&bytes, at: Int(offsets[1]), length: 5)  // wrong but within the file: the crc catches it
        Bytes.write(bytes, to: path)
        #expect(throws: EventLogError.self) { _ = try readPayloads(dir.path) }
    }

    @Test("A record longer than the maximum is refused at append time")
    func oversizedRecord() throws {
        let dir = TemporaryDirectory()
        let log = try EventLog.open(directory: dir.path)
        #expect {
            try log.append(type: 1, payload: [UInt8](repeating: 1, count: LogFormat.maximumPayloadSize + 1))
        } throws: { ($0 as! EventLogError).code == .invalidArgument }
        #expect(log.endOffset == 48)
    }

    @Test("A damaged or short file header is refused at offset 0")
    func shortHeader() throws {
        let dir = TemporaryDirectory()
        try makeLog(at: dir.path, count: 1)
        let path = dir.sub("events.log")
        Bytes.write(Array(Bytes.read(path)[0..<20]), to: path)
        #expect { _ = try readPayloads(dir.path) } throws: {
            ($0 as! EventLogError).code == .corrupted && ($0 as! EventLogError).offset == 0
        }
    }
}
