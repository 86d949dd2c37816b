import Dispatch
import MoodLedger
import Synchronization

/// The push: due items in batches whose attempts are appended together, their requests sent on the engine's
/// request queue (at most `concurrency` in flight, across batches), their outcomes appended together. Two batches
/// are in flight at once: the next batch's attempts are appended and its requests sent while the previous batch's
/// answers come in, so the connections never wait for a batch boundary.
extension SyncEngine {
    /// A batch on its way: its requests in flight, their verdicts as they come.
    final class InFlight: @unchecked Sendable {
        // @unchecked Sendable: `batch` never changes; the verdicts are written under a Mutex, each slot once, and
        // read after the group is done.
        let batch: [Sending]
        let verdicts: Mutex<[SyncVerdict?]>
        let group = DispatchGroup()

        init(_ batch: [Sending]) {
            self.batch = batch
            verdicts = Mutex(Array(repeating: nil, count: batch.count))
        }

        /// Waits for every answer.
        func wait() -> [SyncVerdict] {
            group.wait()
            return verdicts.withLock { $0.map { $0! } }
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

    func push(into report: inout SyncReport, once: Bool, book: inout RunBook) throws {
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
            var candidates = ledger.read { dueItems(in: $0, now: now, limit: .max) }.filter {
                spent.allows($0.entryID, maximumAttempts: most)
            }[...]
            if candidates.isEmpty { break }
            var previous: InFlight?
            while !candidates.isEmpty || previous != nil {
                let batch =
                    stop.value.load(ordering: .relaxed) ? [] : try appendAttempts(from: &candidates, book: &book)
                if stop.value.load(ordering: .relaxed) { candidates = [] }
                let current =
                    batch.isEmpty ? nil : batches ? launchBatched(batch, stop: stop) : launch(batch, stop: stop)
                if let previous {
                    let outcome = try appendOutcomes(previous.batch, previous.wait(), book: &book, into: &report)
                    if outcome.merged { merged = true }
                    if let untrusted = outcome.untrusted {
                        stop.value.store(true, ordering: .relaxed)
                        if let current {
                            _ = try appendOutcomes(current.batch, current.wait(), book: &book, into: &report)
                        }
                        throw SyncError(.untrusted, untrusted)
                    }
                    if let unauthorized = outcome.unauthorized {
                        stop.value.store(true, ordering: .relaxed)
                        if let current {
                            _ = try appendOutcomes(current.batch, current.wait(), book: &book, into: &report)
                        }
                        throw SyncError(
                            .unauthorized,
                            "the server refused the credentials (\(unauthorized)); "
                                + "check MOODLEDGER_API_KEY and MOODLEDGER_TOKEN or --credentials FILE")
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
        _ = try ledger.execute(attaching: { events, _ in events.isEmpty ? [] : [carrier] }) { state, now in
            batch = []
            remaining = candidates
            var events: [MoodEvent] = []
            while let candidate = remaining.first, batch.count < self.configuration.batchSize {
                remaining.removeFirst()
                guard var item = self.stillDue(candidate.entryID, in: state, now: now),
                    self.dialect.held(item.operation, entry: state.entries[item.entryID]) == nil
                else { continue }
                item.replaces = replaces[item.entryID]
                let key = self.key(for: item, in: state)
                events.append(.syncAttempted(item.entryID, .backend, item.operation, key: key))
                batch.append((item, key, state.entries[item.entryID]))
            }
            return (events, .none, false)
        }
        candidates = remaining
        assert(Set(batch.map(\.item.entryID)).count == batch.count, "a batch of attempts names each entry once")
        for sending in batch {
            book.attempts[sending.item.entryID, default: 0] += 1
            book.replaces[sending.item.entryID] = nil
        }
        return batch
    }

    /// Sends a batch on the request queue; each request waits for one of the `concurrency` slots.
    private func launch(_ batch: [Sending], stop: StopFlag) -> InFlight {
        let flight = InFlight(batch)
        for index in batch.indices {
            flight.group.enter()
            slots.wait()
            requests.async { [self] in
                let verdict: SyncVerdict
                if stop.value.load(ordering: .relaxed) {
                    verdict = .retry(
                        status: nil, error: "not sent: the run stopped (credentials refused)", retryAfter: nil)
                } else {
                    verdict = deliver(batch[index].item, key: batch[index].key, entry: batch[index].entry)
                    if case .unauthorized = verdict { stop.value.store(true, ordering: .relaxed) }
                    if Self.untrusted(verdict) != nil { stop.value.store(true, ordering: .relaxed) }
                }
                flight.verdicts.withLock { $0[index] = verdict }
                slots.signal()
                flight.group.leave()
            }
        }
        return flight
    }

    /// The outcomes of a batch, appended together: successes, failures, and merges with the server's version where a
    /// conditional send found it changed (their bases read in one pass over the log).
    ///
    /// Long because the whole batch's outcomes are appended as one batch of events: successes, failures, parkings and
    /// merges are built together from the two passes over the log they need.
    private func appendOutcomes(
        _ batch: [Sending], _ outcomes: [SyncVerdict], book: inout RunBook,
        into report: inout SyncReport
    ) throws -> (merged: Bool, unauthorized: String?, untrusted: String?) {
        // Each attempt appended has exactly one outcome: the zips below would drop the rest silently.
        precondition(outcomes.count == batch.count, "one verdict per request of the batch")
        let outcomes = refusingClaimedIDs(batch, outcomes)
        let stale = Set(
            zip(batch, outcomes).compactMap { sending, verdict -> EntryID? in
                switch verdict {
                case .stale, .recreated: return sending.item.entryID
                default: return nil
                }
            })
        let bases = try ledger.syncBases(of: stale)
        // Items at the attempt limit whose send failed for a transient reason: parked only when their failures also
        // span the minimum time (one pass over the log for all of them).
        let bootNow = configuration.bootClock()
        let streaks = try ledger.failureStreaks(
            of: Set(
                zip(batch, outcomes).compactMap { sending, verdict -> EntryID? in
                    guard sending.item.attempts + 1 >= SyncPolicy.maximumAttempts else { return nil }
                    switch verdict {
                    case .retry, .stale: return sending.item.entryID
                    default: return nil
                    }
                }))
        var unauthorized: String?
        var mergedHere = 0
        var conflicts = 0
        var wentBack: [EntryID: String] = [:]
        var newMerges: [SyncMerge] = []
        var accountChange: (reason: String, requeued: Int)?
        let allowed = book.merges
        _ = try ledger.execute { state, now in
            var events: [MoodEvent] = []
            mergedHere = 0
            conflicts = 0
            newMerges = []
            for (sending, verdict) in zip(batch, outcomes) {
                let id = sending.item.entryID
                switch verdict {
                case .stale(_, let revision, _) where revision > 0 && revision < sending.item.revision:
                    // The server's revision went below one it gave: it was restored (or lost data). Never merged
                    // against (its If-Match would fail for good): created again from here, compared in full.
                    let reason =
                        "the server's revision went back from \(sending.item.revision) to \(revision): restored from a backup?"
                    wentBack[id] = reason
                    events.append(.syncRequeued(id, .backend, reason: reason))
                case .stale(let theirs, let revision, let remoteID)
                where allowed[id, default: 0] < self.configuration.maximumMergesPerRun:
                    let merge = Self.merge(
                        id, here: state.entries[id], theirs: theirs, revision: revision,
                        remoteID: remoteID, base: bases[id])
                    events.append(.syncMerged(merge))
                    newMerges.append(merge)
                    mergedHere += 1
                    if !merge.conflicts.isEmpty { conflicts += 1 }
                case .recreated(let remoteID, let revision):
                    let here = state.entries[id]
                    events.append(
                        .syncMerged(
                            SyncMerge(
                                entryID: id, remoteID: remoteID, serverRevision: 0,
                                baseRevision: bases[id]?.revision ?? 0, base: bases[id]?.entry,
                                here: here, theirs: nil, merged: here)))
                    events.append(.syncSucceeded(id, .backend, remoteID: remoteID, revision: revision))
                default:
                    events.append(
                        self.event(
                            for: sending.item, verdict, in: state, now: now,
                            failingFor: streaks[id]?.elapsed(now: now, bootNow: bootNow),
                            unauthorized: &unauthorized))
                }
            }
            // The account the answers came from: recorded the first time; another one re-queues what the old one
            // acknowledged (this batch's deliveries included).
            let account = self.accountEvents(
                in: state,
                delivered: zip(batch, outcomes).compactMap { Self.delivered($1) ? $0.item.entryID : nil })
            events += account.events
            accountChange = account.changed.map { ($0, account.events.count - 1) }
            return (events, .none, false)
        }
        if let (reason, requeued) = accountChange {
            report.serverWentBack = true
            report.wentBack = report.wentBack ?? reason
            report.requeued += requeued
            report.requeuedAtPush += requeued
        }
        for merge in newMerges { book.noteMerge(merge) }
        for (sending, verdict) in zip(batch, outcomes) {
            let id = sending.item.entryID
            if let reason = wentBack[id] {
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
            if !merged, !Self.delivered(verdict) { book.failed.insert(id) }
            tally(sending.item, verdict, merged: merged, into: &report)
        }
        report.sent += batch.count
        report.conflicts += conflicts
        return (mergedHere > 0, unauthorized, outcomes.lazy.compactMap(Self.untrusted).first)
    }

    /// The merge of an entry with the destination's current version (`Specs/sync.md`, *Merging*): here against the
    /// base, field by field; a deletion here stays a deletion (it reaches the server last); a deletion there is undone
    /// by a change here.
    static func merge(
        _ id: EntryID, here: MoodEntry?, theirs: MoodEntry?, revision: UInt64, remoteID: String?,
        base: SyncBase?
    ) -> SyncMerge {
        // A remote's single-entry answer carries no typed flag: a valence that is exactly the typed score here or in
        // the base is that score, not a change (*Merging*: compared like with like).
        var theirs = theirs
        if var version = theirs, version.enteredScore == nil, let valence = version.valence,
            let score = [base?.entry?.enteredScore, here?.enteredScore].compactMap({ $0 }).first(where: {
                Valence.from(score: $0) == valence
            })
        {
            version.enteredScore = score
            theirs = version
        }
        let merged: MoodEntry?
        if let here, let theirs {
            merged = ThreeWayMerge.merge(base: base?.entry, here: here, theirs: theirs)
        } else {
            merged = here
        }
        return SyncMerge(
            entryID: id, remoteID: remoteID, serverRevision: revision, baseRevision: base?.revision ?? 0,
            base: base?.entry, here: here, theirs: theirs, merged: merged)
    }

    /// The refusal of a verdict whose connection failed on the remote's certificate or host name.
    static func untrusted(_ verdict: SyncVerdict) -> String? {
        if case .retry(nil, let error, _) = verdict, error.hasPrefix("tls: ") { return String(error.dropFirst(5)) }
        return nil
    }

    /// Whether a verdict delivered the item.
    static func delivered(_ verdict: SyncVerdict) -> Bool {
        switch verdict {
        case .delivered, .recreated: return true
        default: return false
        }
    }

    /// The outcome event of one item. A transient failure parks the item only when it is the
    /// ``SyncPolicy/maximumAttempts``-th in a row and the first of them is at least ``SyncPolicy/parkAfterMilliseconds``
    /// old (`failingFor`, ms, by the boot clock within a boot): a short outage never parks anything, however often
    /// `--now` runs, and however the wall clock jumps.
    private func event(
        for item: Due, _ verdict: SyncVerdict, in state: LedgerState, now: Int64, failingFor: Int64?,
        unauthorized: inout String?
    ) -> MoodEvent {
        let attempts =
            (state.outbox.record(OutboxKey(entryID: item.entryID, destination: .backend))?.attempts ?? item.attempts + 1)
        let givingUp =
            attempts >= SyncPolicy.maximumAttempts && (failingFor ?? 0) >= SyncPolicy.parkAfterMilliseconds
        switch verdict {
        case .delivered(let remoteID, let revision):
            return .syncSucceeded(item.entryID, .backend, remoteID: remoteID, revision: revision)
        case .retry(let status, let error, let retryAfter):
            if givingUp {
                return .syncFailed(
                    item.entryID, .backend,
                    SyncFailure(
                        status: status,
                        error:
                            "gave up after \(attempts) attempts over \(Self.span(failingFor ?? 0)): \(error)",
                        retryable: false))
            }
            // A refused certificate or host name is not the item's fault and no outage: due at once, as soon as
            // the trust is fixed (the run stops with exit 78 meanwhile).
            let next =
                Self.untrusted(verdict) != nil
                ? now
                : random.withLock {
                    SyncPolicy.nextAttempt(now: now, attempts: attempts, retryAfter: retryAfter, using: &$0)
                }
            return .syncFailed(
                item.entryID, .backend, SyncFailure(status: status, error: error, retryable: true, nextAttemptAt: next))
        case .park(let status, let error):
            return .syncFailed(item.entryID, .backend, SyncFailure(status: status, error: error, retryable: false))
        case .unauthorized(let error):
            unauthorized = error
            // Not the item's fault: retryable now, once the credentials are fixed.
            return .syncFailed(
                item.entryID, .backend, SyncFailure(status: 401, error: error, retryable: true, nextAttemptAt: now))
        case .stale, .recreated:
            // Merged as often as a run allows and still refused: the server's version moves under us; later.
            let error =
                "HTTP 412: the entry changed on the server again after \(configuration.maximumMergesPerRun) merges in this run"
            if givingUp {
                return .syncFailed(
                    item.entryID, .backend,
                    SyncFailure(status: 412, error: "gave up after \(attempts) attempts: \(error)", retryable: false))
            }
            let next = random.withLock {
                SyncPolicy.nextAttempt(now: now, attempts: attempts, retryAfter: nil, using: &$0)
            }
            return .syncFailed(
                item.entryID, .backend, SyncFailure(status: 412, error: error, retryable: true, nextAttemptAt: next))
        }
    }

    /// Deliveries whose server id another entry already holds (a record here, or an earlier item of this batch)
    /// are not taken: two entries never share a server id, so a later delete of one never removes the other's copy
    /// (`Specs/sync.md`, *What the client refuses*). Each becomes a retryable failure naming the rule.
    func refusingClaimedIDs(_ batch: [Sending], _ outcomes: [SyncVerdict]) -> [SyncVerdict] {
        var claimed: [String: EntryID] = [:]
        // The entry's own id needs no look-up: ids are unique here. Other ids (server-assigned) are looked up once.
        let given = Set(
            zip(batch, outcomes).compactMap { sending, verdict -> String? in
                guard case .delivered(let remoteID, _) = verdict, remoteID != sending.item.entryID.description
                else { return nil }
                return remoteID
            })
        guard !given.isEmpty else { return outcomes }
        ledger.read { state in
            for (key, record) in state.outbox.records where key.destination == .backend {
                if let remoteID = record.remoteID, given.contains(remoteID) { claimed[remoteID] = key.entryID }
            }
        }
        var result = outcomes
        for (index, (sending, verdict)) in zip(batch, outcomes).enumerated() {
            guard case .delivered(let remoteID, _) = verdict, remoteID != sending.item.entryID.description else {
                continue
            }
            if let holder = claimed[remoteID], holder != sending.item.entryID {
                result[index] = .retry(
                    status: nil,
                    error: "the server answered with id \(ConsoleText.escaped(String(remoteID.prefix(64)))), which "
                        + "entry \(holder) already holds: not taken (two entries never share a server id)",
                    retryAfter: nil)
            } else {
                claimed[remoteID] = sending.item.entryID
            }
        }
        return result
    }

    /// A duration in words, rounded down: "26 hours", "3 days".
    static func span(_ milliseconds: Int64) -> String {
        let hours = max(0, milliseconds) / 3_600_000
        return hours >= 48 ? "\(hours / 24) days" : hours == 1 ? "1 hour" : "\(hours) hours"
    }

    /// Counts one item's outcome: every sent item lands in exactly one of delivered, merged, retry and parked.
    private func tally(_ item: Due, _ verdict: SyncVerdict, merged: Bool, into report: inout SyncReport) {
        if case .stale = verdict, !merged {
            report.retrying += 1
            report.failures.append(
                .init(
                    entryID: item.entryID,
                    error:
                        "HTTP 412: the entry changed on the server again after \(configuration.maximumMergesPerRun) merges in this run",
                    parked: false))
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
