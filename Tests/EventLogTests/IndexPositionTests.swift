import EventLog
import Foundation
import TestSupport
import Testing

/// The sparse index's positions kept by a cache and taken back by an open from a checkpoint, and reads of chosen
/// ranges of records (`Specs/ledger.md`, *An entry's records*).
@Suite("Index positions and ranged reads")
struct IndexPositionTests {
    /// A log of 5,000 records and a checkpoint open at seq 4,097 (itself an indexed record).
    static func checkpointed(
        _ dir: TemporaryDirectory
    ) throws -> (payloads: [[UInt8]], positions: [IndexPosition], log: EventLog) {
        let payloads = try makeLog(at: dir.path, count: 5_000)
        let (whole, _) = try readPayloads(dir.path)
        var located: RecordLocation?
        try whole.forEach(from: 4_097, through: 4_097) {
            located = $0.location
            return false
        }
        let positions = try whole.indexPositions(through: 4_097)
        whole.close()
        var configuration = EventLog.Configuration()
        configuration.checkpoint = located
        configuration.lockWaitMilliseconds = 2000
        let log = try EventLog.open(directory: dir.path, configuration: configuration)
        #expect(log.resumedFromCheckpoint)
        return (payloads, positions, log)
    }

    @Test("Positions through the checkpoint are taken: the index is complete without reading; reads answer as before")
    func adopted() throws {
        let dir = TemporaryDirectory()
        let (payloads, positions, log) = try Self.checkpointed(dir)
        defer { log.close() }
        #expect(positions.map(\.seq) == [1, 1_025, 2_049, 3_073, 4_097])
        #expect(log.knownIndexPositions(through: .max) == nil, "an open from a checkpoint has not read the start")
        #expect(log.adoptIndexPositions(positions))
        #expect(log.knownIndexPositions(through: 4_097) == positions)
        #expect(try log.records(from: 1_500, through: 1_502).map(\.payload) == Array(payloads[1_499..<1_502]))
        #expect(try log.indexPositions(through: .max).count == 5)
    }

    @Test("Positions that are not exactly the index before the checkpoint are not taken", arguments: 0..<5)
    func refused(_ flaw: Int) throws {
        let dir = TemporaryDirectory()
        let (payloads, positions, log) = try Self.checkpointed(dir)
        defer { log.close() }
        var wrong = positions
        switch flaw {
        case 0: wrong.removeLast()  // one short
        case 1: wrong[2].offset += 1  // not where a record starts, still ascending
        case 2: wrong[2].offset = wrong[1].offset  // not ascending
        case 3: wrong[0].offset = 0  // before the first record
        default: wrong[3].seq += 1  // not an indexed seq
        }
        if flaw == 1 {
            // Ascending offsets after the first record are all a cache can be checked for without reading: taken,
            // then dropped when a read finds no record there.
            #expect(log.adoptIndexPositions(wrong))
        } else {
            #expect(!log.adoptIndexPositions(wrong), "flaw \(flaw)")
            #expect(log.knownIndexPositions(through: .max) == nil)
        }
        #expect(try log.records(from: 2_500, through: 2_501).map(\.payload) == Array(payloads[2_499..<2_501]))
        #expect(log.knownIndexPositions(through: 4_097) == positions, "built by reading, as without a cache")
        var seen: [UInt64] = []
        try log.forEach(in: [2_100...2_101]) { view in
            seen.append(view.seq)
            return true
        }
        #expect(seen == [2_100, 2_101])
    }

    @Test("A redaction within ranges from a wrong taken position reads the whole log and changes the right records")
    func redactFromWrongPosition() throws {
        let dir = TemporaryDirectory()
        let (payloads, positions, log) = try Self.checkpointed(dir)
        defer { log.close() }
        var wrong = positions
        wrong[2].offset += 1
        #expect(log.adoptIndexPositions(wrong))
        let report = try #require(
            try log.redactInPlace(within: [2_049...2_051]) { view in
                [UInt8](repeating: 0, count: view.payload.count)
            })
        #expect(report.recordsRewritten == 3)
        let after = try log.records(from: 2_048, through: 2_052).map(\.payload)
        #expect(after[0] == payloads[2_047] && after[4] == payloads[2_051])
        #expect(after[1...3].allSatisfy { $0.allSatisfy { $0 == 0 } })
    }

    /// A log of `count` records, open, with its payloads (the directory lives as long as the caller keeps it).
    static func log(_ count: Int) throws -> (dir: TemporaryDirectory, payloads: [[UInt8]], log: EventLog) {
        let dir = TemporaryDirectory()
        let payloads = try makeLog(at: dir.path, count: count)
        return (dir, payloads, try readPayloads(dir.path).0)
    }

    @Test("forEach(in:) visits exactly the records of the ranges, in order")
    func ranges() throws {
        let (dir, payloads, log) = try Self.log(4_000)
        defer { withExtendedLifetime(dir) { log.close() } }
        let ranges: [ClosedRange<UInt64>] = [1...3, 1_000...1_030, 2_049...3_072, 3_999...UInt64.max]
        var seen: [UInt64] = []
        try log.forEach(in: ranges) { view in
            #expect(Array(view.payload) == payloads[Int(view.seq) - 1])
            seen.append(view.seq)
            return true
        }
        #expect(seen == ranges.flatMap { Array($0.lowerBound...min($0.upperBound, 4_000)) })
        var first: [UInt64] = []
        try log.forEach(in: ranges) { view in
            first.append(view.seq)
            return first.count < 5
        }
        #expect(first == [1, 2, 3, 1_000, 1_001], "returning false stops the whole call")
    }

    @Test("A redaction within ranges reads and changes only their records")
    func redactWithin() throws {
        let (dir, payloads, log) = try Self.log(3_000)
        defer { withExtendedLifetime(dir) { log.close() } }
        let ranges: [ClosedRange<UInt64>] = [10...20, 2_049...2_060]
        var asked: [UInt64] = []
        let report = try #require(
            try log.redactInPlace(within: ranges) { view in
                asked.append(view.seq)
                return view.seq % 2 == 0 ? [UInt8](repeating: 0, count: view.payload.count) : nil
            })
        #expect(asked == Array(10...20) + Array(2_049...2_060))
        #expect(report.recordsRewritten == 6 + 6)
        let after = try log.records().map(\.payload)
        for (index, payload) in after.enumerated() {
            let seq = UInt64(index + 1)
            let changed = ranges.contains { $0.contains(seq) } && seq % 2 == 0
            #expect(payload == (changed ? [UInt8](repeating: 0, count: payload.count) : payloads[index]), "seq \(seq)")
        }
    }
}
