import EventLog
import Foundation
import TestSupport
import Testing

@Suite("Verify and repair")
struct RepairTests {
    /// A 10-record log with record 5 (seq 5) damaged by a flipped payload bit.
    func damagedLog() throws -> (TemporaryDirectory, [[UInt8]], [Int64], [UInt8]) {
        let dir = TemporaryDirectory()
        let payloads = try makeLog(at: dir.path, count: 10)
        let (log, _) = try readPayloads(dir.path)
        let offsets = try log.records().map(\.offset)
        log.close()
        var bytes = Bytes.read(dir.sub("events.log"))
        bytes[Int(offsets[4]) + 33] ^= 0x10
        Bytes.write(bytes, to: dir.sub("events.log"))
        return (dir, payloads, offsets, bytes)
    }

    @Test("verify names the offset and seq of each problem and changes nothing")
    func verifyReports() throws {
        let (dir, _, offsets, bytes) = try damagedLog()
        let report = try EventLog.verify(directory: dir.path)
        #expect(!report.ok)
        #expect(report.records == 9)
        #expect(report.problems == [LogDamage(offset: offsets[4], seq: 5, problem: "record checksum mismatch")])
        #expect(Bytes.read(dir.sub("events.log")) == bytes)
    }

    @Test("repair --truncate keeps a copy and cuts at the damage")
    func truncate() throws {
        let (dir, payloads, offsets, bytes) = try damagedLog()
        let report = try EventLog.repair(directory: dir.path, mode: .truncate)
        #expect(report.keptRecords == 4)
        #expect(report.lostSeqs == [5...10])
        #expect(Bytes.read(report.backupPath!) == bytes, "the damaged file is kept, byte for byte")
        #expect(report.backupPath!.contains("events.log.broken-"))
        let (log, read) = try readPayloads(dir.path)
        #expect(read == Array(payloads[0..<4]))
        #expect(log.endOffset == offsets[4])
        log.close()
    }

    @Test("repair --salvage keeps every valid record after the damage and marks the lost seq")
    func salvage() throws {
        let (dir, payloads, _, bytes) = try damagedLog()
        let report = try EventLog.repair(directory: dir.path, mode: .salvage)
        #expect(report.lostSeqs == [5...5])
        #expect(report.keptRecords == 9)
        #expect(Bytes.read(report.backupPath!) == bytes)
        let (log, _) = try readPayloads(dir.path)
        let records = try log.records()
        #expect(records.map(\.seq) == Array(1...10))
        #expect(records[4].type == LogFormat.lostRecordType && records[4].payload.isEmpty)
        var expected = payloads
        expected[4] = []
        #expect(records.map(\.payload) == expected)
        #expect(try EventLog.verify(directory: dir.path).ok)
        #expect(try log.append(type: 1, payload: [1]) == 11)
        log.close()
        // Repairing a sound log does nothing and makes no copy.
        let again = try EventLog.repair(directory: dir.path, mode: .salvage)
        #expect(again.backupPath == nil && again.problems.isEmpty)
    }

    @Test("salvage survives random damage: every record it keeps is byte-identical to the original")
    func salvageRandomDamage() throws {
        var random = SeededRandom()
        for round in 0..<20 {
            let dir = TemporaryDirectory()
            let payloads = try makeLog(at: dir.path, count: 30)
            var bytes = Bytes.read(dir.sub("events.log"))
            let start = Int.random(in: 0..<bytes.count, using: &random)
            let length = Int.random(in: 1...80, using: &random)
            for i in start..<min(bytes.count, start + length) { bytes[i] = UInt8.random(in: 0...255, using: &random) }
            Bytes.write(bytes, to: dir.sub("events.log"))
            let report = try EventLog.repair(directory: dir.path, mode: .salvage)
            let (log, _) = try readPayloads(dir.path)
            let records = try log.records()
            for record in records where record.type != LogFormat.lostRecordType {
                #expect(record.payload == payloads[Int(record.seq) - 1], "round \(round) seq \(record.seq)")
            }
            let lost = report.lostSeqs.reduce(0) { $0 + $1.count }
            // A lost record stands for one seq (empty payload) or a range (the range's last seq, 8 bytes).
            let marked = records.filter { $0.type == LogFormat.lostRecordType }.reduce(0) { sum, record in
                sum + (record.payload.isEmpty ? 1 : Int(Bytes.u64(record.payload) - record.seq + 1))
            }
            #expect(marked == lost, "round \(round)")
            #expect(try EventLog.verify(directory: dir.path).ok, "round \(round): the repaired log verifies")
            log.close()
        }
    }
}
