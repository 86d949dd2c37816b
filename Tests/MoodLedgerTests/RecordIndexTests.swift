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
}
