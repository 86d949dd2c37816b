import EventLog
import Foundation
import Platform
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// Mapping a snapshot goes through the `PlatformIO` seam like every other system call: a failed `mmap` is a
/// snapshot skipped with a notice, and the answers come from the log.
@Suite("A snapshot that cannot be mapped")
struct MapFailureTests {
    @Test("A failed mmap skips the snapshot with a notice; the state replayed from the log is the same")
    func mapFails() throws {
        let dir = TemporaryDirectory("map-failure")
        let clock = ManualClock()
        let options = ledgerOptions(clock: clock)
        let ledger = try Ledger.open(at: dir.path, options: options)
        for i in 0..<50 {
            _ = try ledger.log(MoodDraft(valence: Double(i % 10) / 10, labels: ["calm"], notes: "n \(i)"))
            clock.advance(60_000)
        }
        try ledger.snapshot()
        let before = ledger.state
        ledger.close()

        let io = FaultInjectingIO()
        io.plan.withLock { $0.failNextMap = .outOfMemory }
        var faulty = options
        faulty.io = io
        let reopened = try Ledger.open(at: dir.path, options: faulty)
        defer { reopened.close() }
        #expect(reopened.notices.contains { $0.contains("snapshot") && $0.contains("skipped") }, "\(reopened.notices)")
        #expect(reopened.state == before)
        #expect(io.plan.withLock { $0.failNextMap } == nil, "the open did try to map it")
    }
}
