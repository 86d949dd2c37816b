import EventLog
import Foundation
import Platform
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// The index of each entry's records (`Specs/ledger.md`, *An entry's records*): its filters, its equivalence under
/// replay, and the reads and erasures that go through it answering as a read of the whole log does.
@Suite("An entry's records", .serialized)
struct RecordIndexTests {
    @Test("A block's filter never says no to an id its records name, and says yes to few others")
    func filter() {
        var random = SeededRandom()
        var index = RecordIndex()
        var named: [[EntryID]] = []
        for block in 0..<4 {
            // A block of 1,024 records naming up to 1,024 distinct ids.
            let ids = (0..<1_024).map { _ in EntryID.random(using: &random) }
            for (offset, id) in ids.enumerated() { index.note(id, seq: UInt64(block * 1_024 + offset + 1)) }
            named.append(ids)
        }
        for (block, ids) in named.enumerated() {
            #expect(
                ids.allSatisfy { index.mayName(RecordIndex.Probe($0), block: block) },
                "block \(block), seed \(random.seed)")
        }
        let others = (0..<50_000).map { _ in EntryID.random(using: &random) }
        let wrong = others.filter { index.mayName(RecordIndex.Probe($0), block: 1) }.count
        // About 1 in 1,400 at 1,024 ids per block: 36 expected of 50,000.
        #expect(wrong < 150, "\(wrong) of 50,000 other ids pass a full block's filter, seed \(random.seed)")
        #expect(!index.mayName(RecordIndex.Probe(others[0]), block: 9), "a block past the last holds nothing")
        #expect(index.ranges(mayNaming: [named[2][5]], through: .max).contains { $0.contains(2_049 + 5) })
    }

    /// A ledger of a few thousand events (several blocks), with snapshots partway through blocks.
    static func ledger(_ dir: TemporaryDirectory, steps: Int) throws -> (Ledger, Workload, Ledger.Options) {
        let clock = ManualClock()
        var workload = Workload(random: SeededRandom(), clock: clock)
        let options = ledgerOptions(clock: clock, snapshotInterval: 1_500)
        let ledger = try Ledger.open(at: dir.path, options: options)
        for _ in 0..<steps { try workload.step(ledger) }
        return (ledger, workload, options)
    }

    @Test("live == full replay == snapshot + tail == time travel, for the index across several blocks")
    func equivalence() throws {
        let dir = TemporaryDirectory("ledger")
        let (ledger, workload, options) = try Self.ledger(dir, steps: 4_000)
        var recorded: [UInt64: RecordIndex] = [:]
        var replaying = workload
        for step in 0..<1_500 {
            try replaying.step(ledger)
            if step % 250 == 0 { recorded[ledger.state.seq] = ledger.state.records }
        }
        let live = ledger.state
        #expect(live.records.blockCount >= 4, "\(live.seq) events")
        for (seq, expected) in recorded {
            #expect(try ledger.state(at: .seq(seq)).records == expected, "time travel to \(seq)")
        }
        ledger.close()
        let warm = try Ledger.open(at: dir.path, options: options)
        #expect(warm.eventLog.resumedFromCheckpoint)
        #expect(warm.state.records.image != nil, "the warm open reads the filters through its snapshot")
        #expect(warm.state.records == live.records)
        // The sparse index came with the snapshot: complete without reading the records before the checkpoint.
        let positions = try #require(warm.eventLog.knownIndexPositions(through: .max))
        warm.close()
        var cold = options
        cold.useSnapshots = false
        let replayed = try Ledger.open(at: dir.path, options: cold)
        defer { replayed.close() }
        #expect(replayed.state.records == live.records)
        #expect(try replayed.eventLog.indexPositions(through: .max) == positions)
    }

    @Test(
        "An entry's history and events read through the index equal a read of the whole log, before and after erasures")
    func readsAndErasures() throws {
        let dir = TemporaryDirectory("ledger")
        var (ledger, workload, options) = try Self.ledger(dir, steps: 3_000)
        ledger.close()
        ledger = try Ledger.open(at: dir.path, options: options)
        for _ in 0..<300 { try workload.step(ledger) }  // a tail past the snapshot
        defer { ledger.close() }
        let whole = LogHistory(log: ledger.eventLog)
        for id in workload.ids {
            #expect(try ledger.history(of: id) == whole.history(of: id), "history of \(id)")
        }
        let some = Array(workload.ids.prefix(40))
        for (index, id) in some.enumerated() {
            let after = UInt64(index * 50)
            let through = after + 2_500
            #expect(
                try ledger.events(after: after, through: through, filter: EventFilter(entryID: id))
                    == whole.events(after: after, through: through, filter: EventFilter(entryID: id)),
                "events of \(id) in \(after)…\(through)")
        }
        // Erase a few entries, current and deleted, spread over the log: none of their records keeps data.
        let state = ledger.state
        let current = workload.ids.filter { state.entries.contains($0) }
        let deleted = workload.ids.filter { !state.entries.contains($0) }
        let erased = Array(current.prefix(3)) + Array(deleted.prefix(2))
        let others = workload.ids.filter { !erased.contains($0) }
        let before = try Dictionary(uniqueKeysWithValues: others.prefix(30).map { ($0, try ledger.history(of: $0)) })
        let report = try ledger.erase(erased, reason: "test", ignoringDestinations: true)
        #expect(Set(report.erased) == Set(erased))
        try ledger.eventLog.forEach { view in
            guard view.type & LogFormat.safeToIgnoreBit == 0, let id = EventCodec.entryID(inPayload: view.payload),
                erased.contains(id)
            else { return true }
            #expect(
                EventCodec.isRedacted(view.payload) || view.type == EventType.entryErased.rawValue,
                "seq \(view.seq) of erased \(id) keeps its data")
            return true
        }
        for (id, history) in before { #expect(try ledger.history(of: id) == history, "history of \(id) changed") }
        for id in erased {
            #expect(try ledger.history(of: id) == LogHistory(log: ledger.eventLog).history(of: id))
        }
    }

    @Test("Sync bases, failure streaks and attempted versions read through the index equal those of a whole-log read")
    func syncWalks() throws {
        let dir = TemporaryDirectory("ledger")
        var (ledger, workload, options) = try Self.ledger(dir, steps: 3_500)
        ledger.close()
        ledger = try Ledger.open(at: dir.path, options: options)
        defer { ledger.close() }
        for _ in 0..<200 { try workload.step(ledger) }
        // A batch of attempts that straddles a block boundary, dated by its carrier at the batch's end.
        let current = workload.ids.filter { ledger.state.entries.contains($0) }
        let attempted = Array(current.prefix(40))
        let boundary = (ledger.lastSeq / 1_024 + 1) * 1_024
        while ledger.lastSeq + 20 < boundary { try workload.step(ledger) }
        let carrier = Attachment(.carrier, payload: Array(#"{"carrier":"test","boot":"b-1","boot_ms":777}"#.utf8))
        _ = try ledger.commit(attaching: { _, _ in [carrier] }) { _, _ in
            (attempted.map { .syncAttempted($0, .backend, .update, key: "") }, attempted[0], false)
        }
        #expect(ledger.lastSeq > boundary + 1, "the batch crosses seq \(boundary)")
        let all = Set(workload.ids)
        #expect(all.count > 64, "more than 64 ids read the whole log")
        let bases = try ledger.syncBases(of: all)
        let streaks = try ledger.failureStreaksFromLog(of: all)
        let versions = try ledger.attemptedVersions(of: all)
        #expect(attempted.allSatisfy { streaks[$0]?.boot?.milliseconds == 777 || streaks[$0]?.boot == nil })
        #expect(attempted.contains { streaks[$0]?.boot?.milliseconds == 777 }, "some streak began in the batch")
        // The fold (FailureStreaks) answers what the walk reads: live, after a reopen from a snapshot, cold.
        #expect(try ledger.failureStreaks(of: all) == streaks, "the fold equals the walk")
        for (useSnapshots, threshold) in [(true, UInt64.max), (false, UInt64.max), (false, 1)] {
            var reading = options
            reading.readOnly = true
            reading.useSnapshots = useSnapshots
            reading.parallelReplayThreshold = threshold  // 1: the replay decodes on a second thread
            let reopened = try Ledger.open(at: dir.path, options: reading)
            #expect(
                try reopened.failureStreaks(of: all) == streaks,
                "reopened, snapshots \(useSnapshots), pipelined from \(threshold)")
            reopened.close()
        }
        // One id at a time: the ids attempted before the boundary have no record in the carrier's block.
        for id in attempted {
            #expect(
                try ledger.failureStreaksFromLog(of: [id]) == streaks.filter { $0.key == id }, "the streak of \(id)")
        }
        let ordered = workload.ids
        for start in stride(from: 0, to: ordered.count, by: 60) {
            let chunk = Set(ordered[start..<min(ordered.count, start + 60)])
            #expect(try ledger.syncBases(of: chunk) == bases.filter { chunk.contains($0.key) }, "bases from \(start)")
            #expect(
                try ledger.failureStreaksFromLog(of: chunk) == streaks.filter { chunk.contains($0.key) },
                "streaks from \(start)")
            #expect(
                try ledger.attemptedVersions(of: chunk) == versions.filter { chunk.contains($0.key) },
                "versions from \(start)")
        }
    }
}
