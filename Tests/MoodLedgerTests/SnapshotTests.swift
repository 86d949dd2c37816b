import EventLog
import Foundation
@testable import MoodLedger
import TestSupport
import Testing

@Suite("Snapshots")
struct SnapshotTests {
    /// A ledger with some history and a snapshot; returns its live state.
    func prepare(_ dir: TemporaryDirectory, steps: Int = 300) throws -> (LedgerState, Ledger.Options) {
        let clock = TestClock()
        var workload = Workload(random: SeededRandom(), clock: clock)
        let options = ledgerOptions(clock: clock, snapshotInterval: 0)
        let ledger = try Ledger.open(at: dir.path, options: options)
        for _ in 0..<steps { try workload.step(ledger) }
        #expect(try ledger.snapshot() == ledger.lastSeq)
        for _ in 0..<20 { try workload.step(ledger) }
        let live = ledger.state
        ledger.close()
        return (live, options)
    }

    @Test("A warm open uses the snapshot and replays only the tail")
    func warmOpenUsesSnapshot() throws {
        let dir = TemporaryDirectory("ledger")
        let (live, options) = try prepare(dir)
        let ledger = try Ledger.open(at: dir.path, options: options)
        defer { ledger.close() }
        #expect(ledger.notices.isEmpty, "\(ledger.notices)")
        #expect(ledger.log.resumedFromCheckpoint)
        #expect(ledger.state == live)
    }
}
