import EventLog
import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

@Suite("Outbox")
struct OutboxTests {
    func open(_ dir: TemporaryDirectory, _ clock: ManualClock = ManualClock()) throws -> Ledger {
        try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock))
    }

    func items(_ ledger: Ledger, _ id: EntryID, includeSynced: Bool = true) -> [SyncDestination: OutboxItem] {
        Dictionary(
            uniqueKeysWithValues: ledger.state.outboxItems(includeSynced: includeSynced)
                .filter { $0.entryID == id }.map { ($0.destination, $0) })
    }

    @Test("Coalescing: create+update → one create; create+delete before sync → nothing; after sync → update/delete")
    func coalescing() throws {
        let dir = TemporaryDirectory("ledger")
        let ledger = try open(dir)
        defer { ledger.close() }
        // create + update → still one pending create (sent with the latest data).
        let a = try ledger.log(MoodDraft(valence: 0.2)).entry.id
        try ledger.update(a, MoodChanges(valence: 0.4))
        #expect(items(ledger, a)[.backend]?.operation == .create)
        #expect(items(ledger, a)[.healthkit]?.operation == .create)
        // create + delete before any success → nothing to send.
        try ledger.recordSyncAttempt(a, to: .backend)
        try ledger.recordSyncFailure(a, to: .backend, SyncFailure(status: 500, error: "boom", retryable: true))
        try ledger.delete(a)
        #expect(items(ledger, a).isEmpty)
        // synced, then updated → update; then deleted → delete; delete succeeds → gone.
        let b = try ledger.log(MoodDraft(valence: -0.5)).entry.id
        try ledger.recordSyncAttempt(b, to: .backend)
        try ledger.recordSyncSuccess(b, to: .backend, remoteID: "srv-1")
        #expect(items(ledger, b)[.backend]?.status == "synced")
        #expect(items(ledger, b, includeSynced: false)[.backend] == nil)
        try ledger.editLabels(b, .add("calm"))
        #expect(items(ledger, b)[.backend]?.operation == .update)
        #expect(items(ledger, b)[.healthkit]?.operation == .create)
        try ledger.delete(b)
        #expect(items(ledger, b)[.backend]?.operation == .delete)
        #expect(items(ledger, b)[.healthkit] == nil, "never reached HealthKit: nothing to delete there")
        try ledger.recordSyncAttempt(b, to: .backend)
        try ledger.recordSyncSuccess(b, to: .backend, remoteID: "srv-1")
        #expect(items(ledger, b).isEmpty)
    }

    @Test("An edit during an in-flight create leaves an update pending after the create succeeds")
    func editDuringAttempt() throws {
        let dir = TemporaryDirectory("ledger")
        let ledger = try open(dir)
        defer { ledger.close() }
        let id = try ledger.log(MoodDraft(valence: 0.1)).entry.id
        try ledger.recordSyncAttempt(id, to: .backend)
        try ledger.update(id, MoodChanges(valence: 0.9))
        try ledger.recordSyncSuccess(id, to: .backend, remoteID: "r")
        #expect(items(ledger, id)[.backend]?.operation == .update)
        #expect(items(ledger, id)[.backend]?.status == "pending")
    }

    @Test("Backoff comes from the recorded attempts; non-retryable failures park the item")
    func backoff() throws {
        let dir = TemporaryDirectory("ledger")
        let clock = ManualClock()
        let ledger = try open(dir, clock)
        let id = try ledger.log(MoodDraft(valence: 0.1)).entry.id
        var expected: [Int64] = []
        for attempt in 1...5 {
            try ledger.recordSyncAttempt(id, to: .backend)
            try ledger.recordSyncFailure(
                id, to: .backend, SyncFailure(status: 503, error: "unavailable", retryable: true))
            let item = items(ledger, id)[.backend]!
            #expect(item.attempts == attempt)
            #expect(item.status == "pending")
            #expect(item.nextAttemptAt == clock.now + 30_000 << Int64(attempt - 1))
            expected.append(item.nextAttemptAt!)
            clock.advance(1000)
        }
        #expect(OutboxState.backoffMilliseconds(afterAttempts: 30) == 6 * 3_600_000)
        try ledger.recordSyncAttempt(id, to: .backend)
        try ledger.recordSyncFailure(id, to: .backend, SyncFailure(status: 400, error: "bad request", retryable: false))
        #expect(items(ledger, id)[.backend]?.status == "failed")
        #expect(items(ledger, id)[.backend]?.nextAttemptAt == nil)
        #expect(items(ledger, id)[.backend]?.lastError == "bad request")
        // A new edit gives it another chance.
        try ledger.update(id, MoodChanges(valence: 0.3))
        #expect(items(ledger, id)[.backend]?.status == "pending")
        ledger.close()
        // Replay gives the same answers (the outbox is state, not a trigger).
        var cold = ledgerOptions(clock: clock)
        cold.useSnapshots = false
        let replayed = try Ledger.open(at: dir.path, options: cold)
        let replayedItems = replayed.state.outboxItems()
        replayed.close()
        let warm = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock))
        #expect(warm.state.outboxItems() == replayedItems)
        #expect(replayedItems.first { $0.entryID == id && $0.destination == .backend }?.attempts == 6)
        warm.close()
    }

    @Test("HealthKit entries never go back to HealthKit; backend entries never back to the backend")
    func sourceRules() throws {
        let dir = TemporaryDirectory("ledger")
        let ledger = try open(dir)
        defer { ledger.close() }
        let hk = try ledger.log(MoodDraft(valence: 0.5, source: .healthkit, sourceID: "HK-MOOD-1")).entry.id
        let backend = try ledger.log(MoodDraft(valence: 0.5, source: .backend, sourceID: "srv-9")).entry.id
        let imported = try ledger.log(MoodDraft(valence: 0.5, source: .import, sourceID: "daylio-1")).entry.id
        #expect(Set(items(ledger, hk).keys) == [.backend])
        #expect(Set(items(ledger, backend).keys) == [.healthkit])
        #expect(Set(items(ledger, imported).keys) == [.backend, .healthkit])
        // A change pulled from the backend is not sent back there, but goes on to HealthKit.
        let manual = try ledger.log(MoodDraft(valence: 0.1)).entry.id
        try ledger.recordSyncSuccess(manual, to: .backend, remoteID: "srv-10")
        try ledger.recordSyncSuccess(manual, to: .healthkit, remoteID: "hk-10")
        var remote = ledger.entry(manual)!
        remote.valence = -0.4
        try ledger.applyRemote(RemoteChange(origin: .backend, remoteID: "srv-10", entry: remote, entryID: manual))
        #expect(ledger.entry(manual)?.valence == -0.4)
        #expect(items(ledger, manual)[.backend]?.status == "synced")
        #expect(items(ledger, manual)[.healthkit]?.operation == .update)
    }
}
