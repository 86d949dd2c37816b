import EventLog
import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

@Suite("Commands")
struct CommandTests {
    @Test("A known source id returns the existing entry and appends nothing")
    func idempotentSourceID() throws {
        let dir = TemporaryDirectory("ledger")
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: ManualClock()))
        defer { ledger.close() }
        let first = try ledger.log(MoodDraft(valence: 0.3, source: .healthkit, sourceID: "HK-MOOD-7"))
        let second = try ledger.log(MoodDraft(valence: -0.9, source: .healthkit, sourceID: "HK-MOOD-7"))
        #expect(first.created && first.appended)
        #expect(!second.created && !second.appended)
        #expect(second.entry == first.entry)
        #expect(ledger.lastSeq == 1)
    }

    @Test("A second daily mood for the same local day updates the first")
    func dailyMoodUpsert() throws {
        let dir = TemporaryDirectory("ledger")
        let clock = ManualClock()
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock))
        defer { ledger.close() }
        let morning = LoggedAt(milliseconds: clock.now - 10 * 3_600_000, utcOffsetMinutes: 60)
        let first = try ledger.log(MoodDraft(valence: 0.2, labels: ["calm"], kind: .dailyMood, loggedAt: morning))
        let evening = LoggedAt(milliseconds: clock.now - 8 * 3_600_000, utcOffsetMinutes: 60)
        let second = try ledger.log(MoodDraft(valence: -0.2, labels: ["drained"], kind: .dailyMood, loggedAt: evening))
        #expect(!second.created && second.appended)
        #expect(second.entry.id == first.entry.id)
        #expect(second.entry.valence == -0.2 && second.entry.labels.map(\.name) == ["drained"])
        #expect(ledger.state.entries.count == 1)
        let seq = ledger.lastSeq
        _ = try ledger.log(MoodDraft(valence: -0.2, labels: ["drained"], kind: .dailyMood, loggedAt: evening))
        #expect(ledger.lastSeq == seq, "an identical daily mood appends nothing")
    }

    @Test("No-op updates and edits append nothing; invalid input appends nothing")
    func noOps() throws {
        let dir = TemporaryDirectory("ledger")
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: ManualClock()))
        defer { ledger.close() }
        let id = try ledger.log(MoodDraft(valence: 0.5, labels: ["happy"], notes: "private words")).entry.id
        let seq = ledger.lastSeq
        try ledger.update(id, MoodChanges(valence: 0.5, notes: .set("  private words ")))
        try ledger.editLabels(id, .add("HAPPY"))
        try ledger.editLabels(id, .remove("sad"))
        try ledger.editAssociations(id, .set([]))
        try ledger.editTags(id, .set([]))
        #expect(ledger.lastSeq == seq)
        #expect { try ledger.update(id, MoodChanges(valence: 2)) } throws: { ($0 as! MoodError).field == "valence" }
        #expect { try ledger.log(MoodDraft(valence: 0.1, notes: String(repeating: "x", count: 501))) } throws: {
            error in
            let error = error as! MoodError
            return error.field == "notes" && !error.description.contains("xxxx")
        }
        #expect { try ledger.update(EntryID.random(), MoodChanges(valence: 0.1)) } throws: {
            ($0 as! MoodError).code == .notFound
        }
        #expect(ledger.lastSeq == seq)
    }

    @Test("HealthKit entries are read-only")
    func healthKitReadOnly() throws {
        let dir = TemporaryDirectory("ledger")
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: ManualClock()))
        defer { ledger.close() }
        let id = try ledger.log(MoodDraft(valence: 0.5, source: .healthkit, sourceID: "HK-1")).entry.id
        for attempt in [
            { _ = try ledger.update(id, MoodChanges(valence: 0.1)) },
            { _ = try ledger.editLabels(id, .add("calm")) },
            { try ledger.delete(id) }
        ] as [() throws -> Void] {
            #expect { try attempt() } throws: { ($0 as! MoodError).code == .readOnly }
        }
        #expect(ledger.lastSeq == 1)
    }

    @Test("history shows every event of an entry with what changed; diff and time travel by instant")
    func historyAndDiff() throws {
        let dir = TemporaryDirectory("ledger")
        let clock = ManualClock()
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock))
        defer { ledger.close() }
        let id = try ledger.log(MoodDraft(score: 4, notes: "first")).entry.id
        let other = try ledger.log(MoodDraft(valence: 0.7)).entry.id
        clock.advance(60_000)
        let middle = clock.now
        clock.advance(60_000)
        try ledger.update(id, MoodChanges(score: 8))
        try ledger.editLabels(id, .set(["grateful"]))
        try ledger.recordSyncAttempt(id, to: .backend)
        try ledger.recordSyncFailure(id, to: .backend, SyncFailure(status: 503, error: "down", retryable: true))
        try ledger.delete(other)
        let history = try ledger.history(of: id)
        #expect(
            history.map(\.event.event.type.name) == [
                "mood.created", "mood.updated", "mood.labels_edited",
                "sync.attempted", "sync.failed"
            ])
        #expect(history[0].changes.contains { $0.field == "score" && $0.after == .int(4) })
        let scoreChange = history[1].changes.first { $0.field == "score" }!
        #expect(scoreChange.before == .int(4) && scoreChange.after == .int(8))
        #expect(history[2].changes.map(\.field).contains("labels"))
        #expect(history[3].changes.isEmpty)

        let before = try ledger.state(at: .instant(middle))
        #expect(before.seq == 2)
        #expect(before.entries[id]?.enteredScore == 4)
        let diff = try ledger.diff(from: .instant(middle), to: .seq(ledger.lastSeq))
        #expect(diff.removed.map(\.id) == [other])
        #expect(diff.changed.map(\.after.id) == [id])
        #expect(diff.outbox.contains { $0.after?.entryID == id && $0.after?.attempts == 1 })
        #expect(try ledger.events(filter: EventFilter(type: .deleted)).map(\.event.entryID) == [other])
    }

    @Test("Async overloads run the same commands")
    func asyncOverloads() async throws {
        let dir = TemporaryDirectory("ledger")
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: ManualClock()))
        defer { ledger.close() }
        let outcome = try await ledger.log(MoodDraft(valence: 0.25))
        #expect(try await ledger.history(of: outcome.entry.id).count == 1)
    }
}

@Suite("Concurrency and durability of the Ledger")
struct LedgerConcurrencyTests {
    @Test("Commands from many tasks at once: every one appended, sequence gap-free, state equal to a replay")
    func concurrentCommands() async throws {
        let dir = TemporaryDirectory("ledger")
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: ManualClock()))
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for i in 0..<25 {
                        _ = try? await ledger.log(MoodDraft(valence: Double((task * 25 + i) % 21 - 10) / 10))
                        _ = try? ledger.state.list(EntryQuery())  // readers run alongside
                    }
                }
            }
        }
        #expect(ledger.lastSeq == 200)
        #expect(try ledger.events().map(\.seq) == Array(1...200))
        let live = ledger.state
        ledger.close()
        var cold = ledgerOptions(clock: ManualClock())
        cold.useSnapshots = false
        let replayed = try Ledger.open(at: dir.path, options: cold)
        #expect(replayed.state == live)
        replayed.close()
    }

    @Test("Batched durability: commands write, sync() makes them durable")
    func batched() throws {
        let dir = TemporaryDirectory("ledger")
        var options = ledgerOptions(clock: ManualClock())
        options.durability = .batched
        let ledger = try Ledger.open(at: dir.path, options: options)
        for i in 0..<10 { try ledger.log(MoodDraft(valence: Double(i) / 10)) }
        #expect(ledger.eventLog.durableSeq == 0)
        #expect(try ledger.flush() == 10)
        ledger.close()
    }
}
