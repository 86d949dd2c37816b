import Foundation
import MoodLedger
import Observation
import Synchronization
import TestSupport
import Testing

/// `observe` and `LiveQuery`: the value now, then a value after each commit that changes it, pushed at the commit.
@Suite("Observing a ledger")
struct ObserveTests {
    static func open(_ dir: TemporaryDirectory, readOnly: Bool = false) throws -> Ledger {
        var options = Ledger.Options()
        options.createIfMissing = !readOnly
        options.readOnly = readOnly
        options.durability = .batched
        return try Ledger.open(at: dir.path, options: options)
    }

    @Test("The current page first, then one after each commit that changes it; equal pages are not repeated")
    func pages() async throws {
        let dir = TemporaryDirectory("observe-pages")
        let ledger = try Self.open(dir)
        defer { ledger.close() }
        let calm = try await ledger.log(MoodDraft(valence: 0.3, labels: ["calm"])).entry.id
        var iterator = ledger.observe(EntryQuery(label: try MoodLabel.parse("calm"), limit: 10)).makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.total == 1 && first.entries.first?.id == calm)
        // A commit the page does not show: nothing delivered for it; the next one that changes the page is.
        _ = try await ledger.log(MoodDraft(valence: -0.3, labels: ["sad"]))
        let second = try await ledger.log(MoodDraft(valence: 0.6, labels: ["calm"])).entry.id
        let next = try #require(try await iterator.next())
        #expect(next.total == 2 && next.entries.contains { $0.id == second })
        let calmQuery = EntryQuery(label: try MoodLabel.parse("calm"), limit: 10)
        #expect(next == ledger.read { try? $0.list(calmQuery) })
    }

    @Test("Seeded commits: every value delivered equals a fresh read at its commit, and the last is the final state")
    func valuesEqualFreshReads() async throws {
        var random = SeededRandom()
        let dir = TemporaryDirectory("observe-fresh")
        let ledger = try Self.open(dir)
        defer { ledger.close() }
        let commits = Int.random(in: 20...60, using: &random)
        let stream = ledger.observe { state in [state.seq, UInt64(state.entries.count)] }
        let writer = Task.detached {
            var ids: [EntryID] = []
            for index in 0..<commits {
                if index % 5 == 4, let id = ids.popLast() {
                    try await ledger.delete(id)
                } else {
                    ids.append(try await ledger.log(MoodDraft(valence: Double(index % 10) / 10)).entry.id)
                }
            }
        }
        var seen: [UInt64] = []
        for try await value in stream {
            // Each value is the state at some commit: its count is what a replay to that seq gives.
            let fresh = try await ledger.read(at: .seq(value[0])) { $0.entries.count }
            #expect(value[1] == UInt64(fresh), "seed \(random.seed): at seq \(value[0])")
            seen.append(value[0])
            if value[0] == UInt64(commits) { break }
        }
        try await writer.value
        #expect(seen.last == UInt64(commits), "seed \(random.seed)")
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 < $1 }, "values in commit order, none repeated")
    }

    @Test("Cancelling the task, ending the iteration, or closing the ledger ends an observation: nothing left running")
    func ends() async throws {
        let dir = TemporaryDirectory("observe-ends")
        let ledger = try Self.open(dir)
        _ = try await ledger.log(MoodDraft(valence: 0.1))
        // Running from the moment observe returns; ended by the time the task that iterates it has ended.
        let stream = ledger.observe(EntryQuery())
        #expect(ledger.observationCount == 1)
        let task = Task {
            for try await _ in stream {}
        }
        task.cancel()
        _ = await task.result
        #expect(ledger.observationCount == 0)
        // A loop that breaks.
        for try await _ in ledger.observe(EntryQuery()) { break }
        #expect(ledger.observationCount == 0)
        // Closing the ledger finishes the sequence, after the value it had.
        var iterator = ledger.observe({ $0.seq }).makeAsyncIterator()
        #expect(try await iterator.next() == 1)
        ledger.close()
        #expect(try await iterator.next() == nil)
        #expect(ledger.observationCount == 0)
    }

    @Test("A read-only ledger hears another writer's commits")
    func readOnlyHearsTheWriter() async throws {
        let dir = TemporaryDirectory("observe-readonly")
        let writer = try Self.open(dir)
        defer { writer.close() }
        _ = try await writer.log(MoodDraft(valence: 0.1))
        let reader = try Self.open(dir, readOnly: true)
        defer { reader.close() }
        var iterator = reader.observe { $0.entries.count }.makeAsyncIterator()
        #expect(try await iterator.next() == 1)
        _ = try await writer.log(MoodDraft(valence: 0.2))
        #expect(try await iterator.next() == 2)
    }

    @Test("LiveQuery keeps its value current on the main actor and stops when released", .timeLimit(.minutes(1)))
    @MainActor
    func liveQuery() async throws {
        let dir = TemporaryDirectory("observe-live")
        let ledger = try Self.open(dir)
        defer { ledger.close() }
        _ = try await ledger.log(MoodDraft(valence: 0.1, labels: ["calm"]))
        var live: LiveQuery<EntryPage>? = LiveQuery(ledger, EntryQuery(limit: 5))
        #expect(ledger.observationCount == 1)
        // Observation tells a view when the value changes: each wait below ends at such a change.
        await Self.changes(of: live!) { $0.total == 1 }
        _ = try await ledger.log(MoodDraft(valence: 0.2, labels: ["calm"]))
        await Self.changes(of: live!) { $0.total == 2 }
        // Released while its task waits for the next value: the task is cancelled, and the observation with it.
        live = nil
        #expect(ledger.observationCount == 0)
    }

    /// Returns once `live.value` satisfies `condition`, woken by Observation at each change (never by a timer).
    @MainActor
    static func changes(of live: LiveQuery<EntryPage>, until condition: (EntryPage) -> Bool) async {
        while !condition(live.value) {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                withObservationTracking {
                    _ = live.value
                } onChange: {
                    continuation.resume()
                }
            }
        }
    }
}
