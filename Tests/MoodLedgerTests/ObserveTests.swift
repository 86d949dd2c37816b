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
            let fresh = try ledger.read(at: .seq(value[0])) { $0.entries.count }
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
        let task = Task {
            for try await _ in ledger.observe(EntryQuery()) {}
        }
        #expect(await waitUntilAsync { ledger.observationCount == 1 })
        task.cancel()
        _ = await task.result
        #expect(await waitUntilAsync { ledger.observationCount == 0 })
        // A loop that breaks.
        for try await _ in ledger.observe(EntryQuery()) { break }
        #expect(await waitUntilAsync { ledger.observationCount == 0 })
        // Closing the ledger finishes the sequence.
        let values = Atomic<Int>(0)
        let closing = Task {
            for try await _ in ledger.observe({ $0.seq }) { values.add(1, ordering: .relaxed) }
        }
        #expect(await waitUntilAsync { values.load(ordering: .relaxed) == 1 })
        ledger.close()
        try await closing.value
        #expect(values.load(ordering: .relaxed) == 1)
        #expect(await waitUntilAsync { ledger.observationCount == 0 })
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

    @Test("LiveQuery keeps its value current on the main actor and stops when released")
    @MainActor
    func liveQuery() async throws {
        let dir = TemporaryDirectory("observe-live")
        let ledger = try Self.open(dir)
        defer { ledger.close() }
        _ = try await ledger.log(MoodDraft(valence: 0.1, labels: ["calm"]))
        var live: LiveQuery<EntryPage>? = LiveQuery(ledger, EntryQuery(limit: 5))
        #expect(await waitUntilAsync { live?.value.total == 1 })
        // Observation tells a view when the value changes.
        let changed = Mutex(false)
        withObservationTracking {
            _ = live?.value
        } onChange: {
            changed.withLock { $0 = true }
        }
        _ = try await ledger.log(MoodDraft(valence: 0.2, labels: ["calm"]))
        #expect(await waitUntilAsync { live?.value.total == 2 })
        #expect(changed.withLock { $0 })
        #expect(ledger.observationCount == 1)
        live = nil
        #expect(await waitUntilAsync { ledger.observationCount == 0 })
    }
}

/// Waits for `condition`, yielding between looks, for at most a minute (a bound that only a hang reaches).
func waitUntilAsync(isolation: isolated (any Actor)? = #isolation, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return condition()
}
