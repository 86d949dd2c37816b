import EventLog
import Foundation
import TestSupport
import Testing

@Suite("Reading")
struct ReadTests {
    @Test("Reading from any seq uses the sparse index and returns exactly the records from there")
    func readFromSeq() throws {
        let dir = TemporaryDirectory()
        let payloads = try makeLog(at: dir.path, count: 3000, payloadSize: { $0 % 17 })
        let (log, _) = try readPayloads(dir.path)
        defer { log.close() }
        for first in [1, 2, 1024, 1025, 1026, 2048, 2049, 2999, 3000] as [UInt64] {
            let records = try log.records(from: first, through: first + 5)
            #expect(records.first?.seq == first)
            #expect(records.map(\.payload) == Array(payloads[Int(first - 1)..<min(3000, Int(first + 5))]))
        }
        #expect(try log.records(from: 3001).isEmpty)
    }

    @Test("Open from a checkpoint scans only the tail; reads before it still work; a stale checkpoint falls back")
    func checkpointOpen() throws {
        let dir = TemporaryDirectory()
        let payloads = try makeLog(at: dir.path, count: 2500)
        let (log, _) = try readPayloads(dir.path)
        let checkpoint = try log.records(from: 2000, through: 2000).first.map {
            RecordLocation(seq: $0.seq, offset: $0.offset, size: $0.size, crc: 0)
        }!
        var located: RecordLocation?
        try log.forEach(from: 2000, through: 2000) {
            located = $0.location; return true
        }
        log.close()
        #expect(located?.offset == checkpoint.offset)

        var configuration = EventLog.Configuration()
        configuration.checkpoint = located
        let resumed = try EventLog.open(directory: dir.path, configuration: configuration)
        #expect(resumed.lastSeq == 2500)
        #expect(try resumed.records(from: 10, through: 12).map(\.payload) == Array(payloads[9..<12]))
        var after: [UInt64] = []
        try resumed.forEach(after: located!) {
            after.append($0.seq); return true
        }
        #expect(after == Array(2001...2500))
        resumed.close()

        configuration.checkpoint = checkpoint  // wrong crc: ignored, full scan
        let fallback = try EventLog.open(directory: dir.path, configuration: configuration)
        #expect(fallback.lastSeq == 2500)
        #expect { try fallback.forEach(after: checkpoint) { _ in true } } throws: {
            ($0 as! EventLogError).code == .corrupted
        }
        fallback.close()
    }

    @Test("lastSeq(atOrBefore:) finds the last record recorded at or before an instant")
    func timeLookup() throws {
        let dir = TemporaryDirectory()
        let log = try EventLog.open(directory: dir.path)
        for i in 0..<3000 {
            try log.append([PendingRecord(type: 1, payload: [], recordedAt: 1_000_000 + Int64(i / 3) * 10)])
        }
        #expect(try log.lastSeq(atOrBefore: 999_999) == 0)
        #expect(try log.lastSeq(atOrBefore: 1_000_000) == 3)
        #expect(try log.lastSeq(atOrBefore: 1_000_005) == 3)
        #expect(try log.lastSeq(atOrBefore: 1_000_000 + 500 * 10) == 1503)
        #expect(try log.lastSeq(atOrBefore: .max) == 3000)
        // Recorded-at never goes backwards, even if the caller's clock does.
        try log.append([PendingRecord(type: 1, payload: [], recordedAt: 5)])
        #expect(try log.records(from: 3001).first?.recordedAt == 1_000_000 + 999 * 10)
        log.close()
    }

    @Test("Read-only open ignores a torn tail without changing the file and refuses appends")
    func readOnly() throws {
        let dir = TemporaryDirectory()
        let payloads = try makeLog(at: dir.path, count: 3)
        let path = dir.sub("events.log")
        let torn = Bytes.read(path) + [1, 2, 3]
        Bytes.write(torn, to: path)
        let (log, read) = try readPayloads(dir.path, access: .readOnly)
        #expect(read == payloads)
        #expect(log.recoveryNotice?.truncated == false)
        #expect { try log.append(type: 1, payload: []) } throws: { ($0 as! EventLogError).code == .notWritable }
        log.close()
        #expect(Bytes.read(path) == torn)
        var configuration = EventLog.Configuration()
        configuration.access = .readOnly
        #expect { _ = try EventLog.open(directory: dir.sub("missing"), configuration: configuration) } throws: {
            ($0 as! EventLogError).code == .notFound
        }
    }

    @Test(
        "open(visiting:) hands over each record its scan reads, in order; a torn batch's records come after lastSeq",
        arguments: [EventLog.Access.readWrite, .readOnly])
    func openVisiting(access: EventLog.Access) throws {
        let dir = TemporaryDirectory()
        let payloads = try makeLog(at: dir.path, count: 40)
        let path = dir.sub("events.log")
        let intact = Bytes.read(path)
        let writer = try EventLog.open(directory: dir.path)
        try writer.append((0..<3).map { PendingRecord(type: 7, payload: [UInt8](repeating: UInt8($0), count: 20)) })
        writer.close()
        // The batch's last record cut short: the scan has passed the first two before it learns the batch is torn.
        Bytes.write(Array(Bytes.read(path).dropLast(5)), to: path)
        var configuration = EventLog.Configuration()
        configuration.access = access
        var visited: [(seq: UInt64, payload: [UInt8])] = []
        let log = try EventLog.open(directory: dir.path, configuration: configuration) {
            visited.append(($0.seq, Array($0.payload)))
        }
        #expect(log.lastSeq == 40)
        #expect(log.recoveryNotice != nil)
        #expect(visited.map(\.seq) == Array(1...42), "every record scanned, in order, the torn batch's two included")
        #expect(visited.prefix(40).map(\.payload) == payloads)
        #expect(try log.records().map(\.payload) == payloads, "the log as opened ends before the torn batch")
        if access == .readWrite { #expect(Bytes.read(path) == intact, "the torn batch was trimmed") }
        log.close()
        // What the visitor throws ends the open and releases the log (a writer can open it at once).
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            _ = try EventLog.open(directory: dir.path, configuration: configuration) { if $0.seq == 3 { throw Stop() } }
        }
        var now = EventLog.Configuration()
        now.lockWaitMilliseconds = 0
        try EventLog.open(directory: dir.path, configuration: now).close()
    }
}
