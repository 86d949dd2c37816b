import Dispatch
import MoodLedger
import Synchronization

/// The push: due items in batches whose attempts are appended together, their requests sent as tasks of the run
/// (at most `concurrency` in flight, across batches), their outcomes appended together. Two batches
/// are in flight at once: the next batch's attempts are appended and its requests sent while the previous batch's
/// answers come in, so the connections never wait for a batch boundary.
extension SyncEngine {
    /// A batch on its way: its requests in flight, their verdicts as they come.
    struct InFlight: Sendable {
        let batch: [Sending]
        let answers: Task<[SyncVerdict], Never>

        /// Waits for every answer.
        func wait() async -> [SyncVerdict] { await answers.value }
    }

    /// A counting semaphore for tasks: requests in flight at once, across a run's batches. A task waiting for a slot
    /// holds no thread; slots are handed out in the order they were asked for.
    final class Slots: Sendable {
        private struct State {
            var free: Int
            var waiting: [CheckedContinuation<Void, Never>] = []
        }
        private let state: Mutex<State>

        init(_ count: Int) { state = Mutex(State(free: count)) }

        func acquire() async {
            await withCheckedContinuation { continuation in
                let taken = state.withLock { state in
                    guard state.free > 0 else {
                        state.waiting.append(continuation)
                        return false
                    }
                    state.free -= 1
                    return true
                }
                if taken { continuation.resume() }
            }
        }

        func release() {
            state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard !state.waiting.isEmpty else {
                    state.free += 1
                    return nil
                }
                return state.waiting.removeFirst()
            }?.resume()
        }
    }

    /// Starts `work` for each of `count` requests, each once it holds one of the `concurrency` slots: their results,
    /// in order.
    func inFlight<T: Sendable>(
        _ count: Int, _ work: @escaping @Sendable (Int) async -> T
    ) -> Task<[T], Never> {
        executor.task { [slots] in
            await withTaskGroup(of: (Int, T).self) { group in
                for index in 0..<count {
                    await slots.acquire()
                    group.addTask {
                        defer { slots.release() }
                        return (index, await work(index))
                    }
                }
                var results = [T?](repeating: nil, count: count)
                for await (index, result) in group { results[index] = result }
                return results.map { $0! }
            }
        }
    }

    /// Set once the credentials were refused: what is not sent yet is not sent.
    final class StopFlag: Sendable { let value = Atomic<Bool>(false) }

    /// What one run has spent on each entry (`Specs/sync.md`, *Bounded work*): attempts and merges, and the entries
    /// whose send failed (not sent again in this run, `--now` or not).
    struct RunBook {
        var attempts: [EntryID: Int] = [:]
        var merges: [EntryID: Int] = [:]
        var failed: Set<EntryID> = []
        /// Merges of this run with conflicts: the `MoodLedger-Replaces` value their next send carries.
        var replaces: [EntryID: String] = [:]

        /// Notes a merge: its conflicting fields replace the server's revision's values when sent.
        mutating func noteMerge(_ merge: SyncMerge) {
            let fields = merge.conflicts.subtracting(.existence).names
            if merge.merged != nil, merge.theirs != nil, !fields.isEmpty {
                replaces[merge.entryID] = "\(merge.serverRevision); fields=" + fields.joined(separator: ",")
            } else {
                replaces[merge.entryID] = nil
            }
        }

        /// Whether the run may send `id` once more.
        func allows(_ id: EntryID, maximumAttempts: Int) -> Bool {
            !failed.contains(id) && attempts[id, default: 0] < maximumAttempts
        }
    }

    func push(into report: inout SyncReport, once: Bool, book: inout RunBook) async throws {
        var passes = 0
        // `once`: one pass, and another only for what a merge left to send.
        var merged = true
        let stop = StopFlag()
        while passes < configuration.maximumPasses && (!once || passes == 0 || merged) {
            passes += 1
            merged = false
            // The pass's candidates, read once; each batch re-checks its items against the state it appends to.
            let now = ledger.options.clock()
            let spent = book
            let most = configuration.maximumAttemptsPerRun
            let planner = self.planner
            var candidates = ledger.read { planner.dueItems(in: $0, now: now, limit: .max) }.filter {
                spent.allows($0.entryID, maximumAttempts: most)
            }[...]
            if candidates.isEmpty { break }
            var previous: InFlight?
            while !candidates.isEmpty || previous != nil {
                // A cancelled run begins no new batch: the one in flight is answered and recorded.
                let halt = stop.value.load(ordering: .relaxed) || cancelRequested.load(ordering: .relaxed)
                let batch = halt ? [] : try appendAttempts(from: &candidates, book: &book)
                if halt || stop.value.load(ordering: .relaxed) { candidates = [] }
                let current =
                    batch.isEmpty ? nil : batches ? launchBatched(batch, stop: stop) : launch(batch, stop: stop)
                if let previous {
                    let outcome = try appendOutcomes(
                        previous.batch, await previous.wait(), book: &book, into: &report)
                    if outcome.merged { merged = true }
                    if let untrusted = outcome.untrusted {
                        stop.value.store(true, ordering: .relaxed)
                        if let current {
                            _ = try appendOutcomes(current.batch, await current.wait(), book: &book, into: &report)
                        }
                        throw SyncError(.untrusted, untrusted)
                    }
                    if let unauthorized = outcome.unauthorized {
                        stop.value.store(true, ordering: .relaxed)
                        if let current {
                            _ = try appendOutcomes(current.batch, await current.wait(), book: &book, into: &report)
                        }
                        throw SyncError(
                            .unauthorized,
                            "the server refused the credentials (\(unauthorized))")
                    }
                }
                previous = current
            }
            // Re-check: changes written during the pass, and merged versions, are due now and go out in the same run.
        }
    }

    /// Attempts: the next batch of still-due items, chosen and appended against the current state as one batch. Each
    /// request is built from the entry as it is here, so a success's version is known exactly (the next merge's base).
    private func appendAttempts(from candidates: inout ArraySlice<Due>, book: inout RunBook) throws -> [Sending] {
        let replaces = book.replaces
        var batch: [Sending] = []
        var remaining = candidates
        // What carries this batch of attempts: the transport, and the batch route with the request's size.
        let route = batches ? ", batch route: \(configuration.batchRequestItems) items a request" : ""
        var fields: [(String, JSONValue)] = [("carrier", .string(transport.carrier + route))]
        if batches { fields.append(("batch_items", .int(Int64(max(1, configuration.batchRequestItems))))) }
        // The boot clock when these attempts were made: a failure streak is measured by it (no wall-clock jump moves
        // it), across runs of the same boot.
        if let boot = configuration.bootClock() {
            fields += [("boot", .string(boot.boot)), ("boot_ms", .int(boot.milliseconds))]
        }
        let carrier = Attachment(.carrier, payload: Array(JSONValue.object(fields).serialized().utf8))
        let planner = self.planner
        let limit = configuration.batchSize
        _ = try ledger.execute(attaching: { events, _ in events.isEmpty ? [] : [carrier] }) { state, now in
            let planned = planner.attempts(from: candidates, in: state, now: now, limit: limit, replaces: replaces)
            batch = planned.batch
            remaining = planned.rest
            return (planned.events, .none, false)
        }
        candidates = remaining
        // What earlier attempts of a create (or of a deleted entry's create) sent: one pass over the log a batch.
        let needing = Set(batch.filter { planner.needsSentVersions($0.item) }.map(\.item.entryID))
        if !needing.isEmpty {
            let sent = try ledger.attemptedVersions(of: needing)
            for index in batch.indices { batch[index].item.sent = sent[batch[index].item.entryID] ?? [] }
        }
        for sending in batch {
            book.attempts[sending.item.entryID, default: 0] += 1
            book.replaces[sending.item.entryID] = nil
        }
        return batch
    }

    /// Sends a batch, each request once it holds one of the `concurrency` slots.
    private func launch(_ batch: [Sending], stop: StopFlag) -> InFlight {
        InFlight(
            batch: batch,
            answers: inFlight(batch.count) { [self] index in
                if stop.value.load(ordering: .relaxed) {
                    return .retry(
                        status: nil, error: "not sent: the run stopped (credentials refused)", retryAfter: nil)
                }
                let verdict = await deliver(batch[index].item, key: batch[index].key, entry: batch[index].entry)
                if case .unauthorized = verdict { stop.value.store(true, ordering: .relaxed) }
                if SyncPlanner.untrusted(verdict) != nil { stop.value.store(true, ordering: .relaxed) }
                return verdict
            })
    }

    /// The outcomes of a batch, appended together: successes, failures, and merges with the server's version where a
    /// conditional send found it changed (their bases read in one pass over the log).
    ///
    /// Long because the whole batch's outcomes are appended as one batch of events: successes, failures, parkings and
    /// merges are built together from the two passes over the log they need.
    private func appendOutcomes(
        _ batch: [Sending], _ verdicts: [SyncVerdict], book: inout RunBook,
        into report: inout SyncReport
    ) throws -> (merged: Bool, unauthorized: String?, untrusted: String?) {
        // What the planner needs from the log: the bases of entries to merge, and how long the failures of items at
        // the attempt limit have lasted (one pass over the log each, for the whole batch).
        var evidence = SyncPlanner.Evidence(mergesSoFar: book.merges)
        evidence.bases = try ledger.syncBases(
            of: Set(
                zip(batch, verdicts).compactMap { sending, verdict -> EntryID? in
                    switch verdict {
                    case .stale, .recreated: return sending.item.entryID
                    default: return nil
                    }
                }))
        let bootNow = configuration.bootClock()
        let streaks = try ledger.failureStreaks(
            of: Set(
                zip(batch, verdicts).compactMap { sending, verdict -> EntryID? in
                    guard sending.item.attempts + 1 >= SyncPolicy.maximumAttempts else { return nil }
                    switch verdict {
                    case .retry, .stale: return sending.item.entryID
                    default: return nil
                    }
                }))
        evidence.heard = takeHeardAccounts()
        let planner = self.planner
        var planned = (verdicts: verdicts, outcomes: SyncPlanner.Outcomes())
        _ = try ledger.execute { state, now in
            for (id, streak) in streaks { evidence.failingFor[id] = streak.elapsed(now: now, bootNow: bootNow) }
            planned = self.random.withLock {
                planner.outcomes(of: batch, verdicts, in: state, now: now, evidence: evidence, random: &$0)
            }
            return (planned.outcomes.events, .none, false)
        }
        let (outcomes, result) = planned
        if let (reason, requeued) = result.accountChange {
            report.serverWentBack = true
            report.wentBack = report.wentBack ?? reason
            report.requeued += requeued
            report.requeuedAtPush += requeued
        }
        for merge in result.merges { book.noteMerge(merge) }
        let allowed = book.merges
        for (sending, verdict) in zip(batch, outcomes) {
            let id = sending.item.entryID
            if let reason = result.wentBack[id] {
                report.requeuedAtPush += 1
                report.requeued += 1
                report.serverWentBack = true
                report.wentBack = report.wentBack ?? reason
                continue
            }
            let merged: Bool
            if case .stale = verdict, allowed[id, default: 0] < configuration.maximumMergesPerRun {
                book.merges[id, default: 0] += 1
                merged = true
            } else {
                merged = false
            }
            if !merged, !SyncPlanner.delivered(verdict) { book.failed.insert(id) }
            tally(sending.item, verdict, merged: merged, into: &report)
        }
        report.sent += batch.count
        report.conflicts += result.conflicts
        return (!result.merges.isEmpty, result.unauthorized, outcomes.lazy.compactMap(SyncPlanner.untrusted).first)
    }

    /// Counts one item's outcome: every sent item lands in exactly one of delivered, merged, retry and parked.
    private func tally(_ item: Due, _ verdict: SyncVerdict, merged: Bool, into report: inout SyncReport) {
        if case .stale = verdict, !merged {
            report.retrying += 1
            report.failures.append(
                .init(
                    entryID: item.entryID,
                    error: planner.staleAgain, parked: false))
            return
        }
        switch verdict {
        case .delivered: report.delivered += 1
        case .retry(_, let error, _):
            report.retrying += 1
            report.failures.append(.init(entryID: item.entryID, error: error, parked: false))
        case .park(_, let error):
            report.parked += 1
            report.failures.append(.init(entryID: item.entryID, error: error, parked: true))
        case .unauthorized(let error):
            report.retrying += 1
            report.failures.append(.init(entryID: item.entryID, error: error, parked: false))
        case .stale:
            report.merged += 1
        case .recreated:
            report.delivered += 1
        }
    }
}
