import EventLog
import Foundation
import TestSupport
import Testing

/// Crash atomicity of batches, crafted records whose checksums are valid, and repair that tells the whole truth.
@Suite("Batches, crafted values and honest repair")
struct HostileLogTests {
    /// A log of batches of the given sizes; returns each batch's records' payloads and the file offsets where
    /// each batch ends.
    func makeBatches(_ dir: String, sizes: [Int]) throws -> (batches: [[[UInt8]]], ends: [Int64]) {
        var configuration = EventLog.Configuration()
        configuration.lockWaitMilliseconds = 2000
        let log = try EventLog.open(directory: dir, configuration: configuration)
        defer { log.close() }
        var batches: [[[UInt8]]] = []
        var ends: [Int64] = [log.endOffset]
        for (b, size) in sizes.enumerated() {
            let payloads = (0..<size).map { i in
                (0..<(3 + (i * 5) % 17)).map { UInt8(truncatingIfNeeded: $0 + b * 31 + i) }
            }
            try log.append(payloads.map { PendingRecord(type: 1, payload: $0) })
            batches.append(payloads)
            ends.append(log.endOffset)
        }
        return (batches, ends)
    }

    @Test("A crash anywhere inside a multi-record batch leaves none or all of it (cut at every byte)")
    func batchAllOrNothing() throws {
        let dir = TemporaryDirectory()
        let (batches, ends) = try makeBatches(dir.path, sizes: [2, 5, 1, 4, 3])
        let path = dir.sub("events.log")
        let original = Bytes.read(path)
        for cut in Int(ends[1])...original.count {
            Bytes.write(Array(original[0..<cut]), to: path)
            let whole = ends.lastIndex { $0 <= Int64(cut) }!  // batches wholly before the cut
            let (log, read) = try readPayloads(dir.path)
            #expect(read == Array(batches[0..<whole].joined()), "cut at \(cut)")
            #expect((log.recoveryNotice == nil) == (Int64(cut) == ends[whole]), "cut at \(cut)")
            #expect(log.endOffset == ends[whole], "cut at \(cut): trimmed back to the batch's start")
            log.close()
            #expect(Bytes.read(path).count == Int(ends[whole]))
        }
        // A read-only reader of a cut file sees no part of the cut batch either.
        Bytes.write(Array(original[0..<Int(ends[2] - 5)]), to: path)
        let (reader, read) = try readPayloads(dir.path, access: .readOnly)
        #expect(read == batches[0])
        reader.close()
    }

    @Test("Every record of a batch but the last carries the continues flag; single appends carry none")
    func batchFlagsOnDisk() throws {
        let dir = TemporaryDirectory()
        let (_, ends) = try makeBatches(dir.path, sizes: [3, 1])
        let bytes = Bytes.read(dir.sub("events.log"))
        var offset = 48
        var flags: [UInt16] = []
        while offset < Int(ends.last!) {
            flags.append(UInt16(bytes[offset + 14]) | UInt16(bytes[offset + 15]) << 8)
            offset += 32 + Int(Bytes.u64(Array(bytes[(offset + 8)..<(offset + 12)]) + [0, 0, 0, 0]))
        }
        #expect(flags == [1, 1, 0, 0])
    }

    /// A log file: a header with `baseSeq`, then the given records.
    func craft(_ dir: TemporaryDirectory, baseSeq: UInt64 = 0, _ records: [[UInt8]]) {
        try? FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let header = LogFormat.FileHeader(
            fileID: Array(repeating: 7, count: 16), baseSeq: baseSeq,
            maxPayload: UInt32(LogFormat.maximumPayloadSize))
        Bytes.write(header.encoded() + records.joined(), to: dir.sub("events.log"))
    }

    func expectCorrupt(_ dir: TemporaryDirectory, _ fragment: String, _ comment: Comment) throws {
        var configuration = EventLog.Configuration()
        configuration.createIfMissing = false
        #expect(comment) {
            _ = try EventLog.open(directory: dir.path, configuration: configuration)
        } throws: { error in
            (error as? EventLogError)?.code == .corrupted && "\(error)".contains(fragment)
        }
        let report = try EventLog.verify(directory: dir.path)
        #expect(!report.ok, comment)
        _ = try EventLog.repair(directory: dir.path, mode: .salvage)
        #expect(try EventLog.verify(directory: dir.path).ok, comment)
    }

    @Test("Values at the edges of their types with valid checksums are corruption, never a trap")
    func craftedValues() throws {
        let t: Int64 = 1_700_000_000_000_000
        let cases: [(UInt64, [[UInt8]], String)] = [
            (UInt64.max, [], "base_seq"),
            (UInt64(Int64.max), [], "base_seq"),
            (
                0,
                [
                    LogFormat.encodeRecord(seq: 1, type: 1, recordedAt: t, payload: [1]),
                    LogFormat.encodeRecord(seq: UInt64.max, type: 1, recordedAt: t, payload: [2])
                ], "seq"
            ),
            (0, [LogFormat.encodeRecord(seq: 1, type: 1, recordedAt: Int64.max, payload: [1])], "recorded_at"),
            (0, [LogFormat.encodeRecord(seq: 1, type: 1, recordedAt: Int64.min, payload: [1])], "recorded_at"),
            (0, [LogFormat.encodeRecord(seq: 1, type: 1, flags: 0x8000, recordedAt: t, payload: [1])], "flags"),
            (
                0, [LogFormat.encodeRecord(seq: 1, type: LogFormat.lostRecordType, recordedAt: t, payload: [1, 2])],
                "lost record"
            ),
            (
                2,
                [
                    LogFormat.encodeRecord(
                        seq: 3, type: LogFormat.lostRecordType, recordedAt: t,
                        payload: [2, 0, 0, 0, 0, 0, 0, 0])
                ], "lost range"
            )
        ]
        for (n, (base, records, fragment)) in cases.enumerated() {
            let dir = TemporaryDirectory()
            craft(dir, baseSeq: base, records)
            try expectCorrupt(dir, fragment, "case \(n)")
        }
    }

    @Test("A seq gap of 2⁴⁰ is salvaged as one lost range record, not one record per seq")
    func lostRange() throws {
        let dir = TemporaryDirectory()
        let t: Int64 = 1_700_000_000_000_000
        let far: UInt64 = 1 << 40
        craft(
            dir,
            [
                LogFormat.encodeRecord(seq: 1, type: 1, recordedAt: t, payload: [1]),
                LogFormat.encodeRecord(seq: far, type: 1, recordedAt: t + 1, payload: [2])
            ])
        let report = try EventLog.repair(directory: dir.path, mode: .salvage)
        #expect(report.lostSeqs == [2...(far - 1)])
        let (log, read) = try readPayloads(dir.path)
        #expect(read == [[1], withUnsafeBytes(of: (far - 1).littleEndian, Array.init), [2]])
        #expect(log.lastSeq == far)
        #expect(try log.append(type: 1, payload: [3]) == far + 1)
        log.close()
        #expect(try EventLog.verify(directory: dir.path).ok)
    }

    @Test("A damaged last record is reported lost by salvage and by truncate")
    func damagedLastRecord() throws {
        for mode in [EventLog.RepairMode.salvage, .truncate] {
            let dir = TemporaryDirectory()
            try makeLog(at: dir.path, count: 3)
            var bytes = Bytes.read(dir.sub("events.log"))
            bytes[bytes.count - 1] ^= 0x01
            Bytes.write(bytes, to: dir.sub("events.log"))
            let report = try EventLog.repair(directory: dir.path, mode: mode)
            #expect(report.lostSeqs == [3...3], "\(mode)")
            #expect(try EventLog.verify(directory: dir.path).ok)
            let (log, _) = try readPayloads(dir.path)
            // Salvage keeps seq 3 as a lost record, so the next append cannot reuse the number.
            #expect(log.lastSeq == (mode == .salvage ? 3 : 2), "\(mode)")
            log.close()
        }
    }

    @Test("Salvage of time going backwards leaves a log that verifies; a second salvage has nothing to do")
    func timeBackwards() throws {
        let dir = TemporaryDirectory()
        let t: Int64 = 1_700_000_000_000_000
        craft(
            dir,
            [
                LogFormat.encodeRecord(seq: 1, type: 1, recordedAt: t, payload: [1]),
                LogFormat.encodeRecord(seq: 2, type: 1, recordedAt: t + 10, payload: [2]),
                LogFormat.encodeRecord(seq: 3, type: 1, recordedAt: t + 5, payload: [3]),
                LogFormat.encodeRecord(seq: 4, type: 1, recordedAt: t + 6, payload: [4]),
                LogFormat.encodeRecord(seq: 5, type: 1, recordedAt: t + 20, payload: [5])
            ])
        let report = try EventLog.repair(directory: dir.path, mode: .salvage)
        #expect(report.lostSeqs == [3...4])
        #expect(try EventLog.verify(directory: dir.path).ok)
        let again = try EventLog.repair(directory: dir.path, mode: .salvage)
        #expect(again.backupPath == nil && again.lostSeqs.isEmpty)
        let (log, read) = try readPayloads(dir.path)
        #expect(read == [[1], [2], [4, 0, 0, 0, 0, 0, 0, 0], [5]])
        log.close()
    }

    @Test("A repair whose backup copy fails leaves no partial events.log.broken-* file and the log untouched")
    func failedBackup() throws {
        let dir = TemporaryDirectory()
        try makeLog(at: dir.path, count: 5)
        var bytes = Bytes.read(dir.sub("events.log"))
        bytes[bytes.count - 1] ^= 0x01
        Bytes.write(bytes, to: dir.sub("events.log"))
        let io = FaultInjectingIO()
        io.plan.withLock {
            $0.failNextWrite = .noSpace
            $0.bytesBeforeFailure = 100
        }
        #expect(throws: EventLogError.self) { try EventLog.repair(directory: dir.path, mode: .salvage, io: io) }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(!names.contains { $0.hasPrefix("events.log.") }, "\(names)")
        #expect(Bytes.read(dir.sub("events.log")) == bytes)
    }
}

@Suite("Removing trees")
struct RemoveTreeTests {
    @Test("removeTree never follows a symbolic link to a directory: the link goes, the target stays")
    func symlinkNotFollowed() throws {
        let dir = TemporaryDirectory("tree")
        let outside = TemporaryDirectory("outside")
        try FileManager.default.createDirectory(atPath: dir.sub("a/b"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: outside.path, withIntermediateDirectories: true)
        Bytes.write([1, 2, 3], to: outside.sub("precious"))
        Bytes.write([4], to: dir.sub("a/b/file"))
        try FileManager.default.createSymbolicLink(atPath: dir.sub("a/link"), withDestinationPath: outside.path)
        try AtomicFile.removeTree(dir.path)
        #expect(!FileManager.default.fileExists(atPath: dir.path))
        #expect(Bytes.read(outside.sub("precious")) == [1, 2, 3], "the link's target is untouched")
    }
}
