import MoodLedger

/// What a batch's answers append: successes, failures, parkings, merges, and what an account change re-queues.
extension SyncPlanner {
    /// The accounts the remote's answers named since the ledger last recorded one, and the latest of them.
    struct HeardAccounts: Sendable {
        var names: Set<String> = []
        var latest: String?
    }

    /// What the runner knows of a batch besides its answers: read from the log before the outcomes are planned.
    struct Evidence {
        /// The base of each entry answered stale or re-created (its last synced version).
        var bases: [EntryID: SyncBase] = [:]
        /// For items at the attempt limit whose send failed again: how long their failures have lasted (ms, by the
        /// boot clock within a boot).
        var failingFor: [EntryID: Int64] = [:]
        /// Merges of each entry earlier in this run.
        var mergesSoFar: [EntryID: Int] = [:]
        /// The accounts the batch's answers named.
        var heard = HeardAccounts()
    }

    /// A batch's outcomes as events, and what the run notes of them.
    struct Outcomes {
        var events: [MoodEvent] = []
        /// The merges appended (their conflicts go with the next send).
        var merges: [SyncMerge] = []
        /// Entries re-queued because the server's revision went back, and why.
        var wentBack: [EntryID: String] = [:]
        /// The credentials' refusal, if an answer was one.
        var unauthorized: String?
        var conflicts = 0
        /// The account changed (the reason) and how many entries that re-queued.
        var accountChange: (reason: String, requeued: Int)?
    }

    /// The events of one batch's answers against `state` (the state they are appended to): each answer checked
    /// against the claims of other entries first (``refusingClaimedIDs(_:_:in:)``), then recorded — a delivery, a
    /// failure (its retry time drawn from `random`), a parking, a merge with the server's version, a re-queue when the
    /// server's revision went back — and the account the answers came from.
    func outcomes<G: RandomNumberGenerator>(
        of batch: [Sending], _ verdicts: [SyncVerdict], in state: LedgerState, now: Int64, evidence: Evidence,
        random: inout G
    ) -> (verdicts: [SyncVerdict], outcomes: Outcomes) {
        // Each attempt appended has exactly one outcome: the zips below would drop the rest silently.
        precondition(verdicts.count == batch.count, "one verdict per request of the batch")
        let verdicts = refusingClaimedIDs(batch, verdicts, in: state)
        var result = Outcomes()
        for (sending, verdict) in zip(batch, verdicts) {
            let id = sending.item.entryID
            let base = evidence.bases[id]
            switch verdict {
            case .stale(_, let revision, _) where revision > 0 && revision < sending.item.revision:
                // The server's revision went below one it gave: it was restored (or lost data). Never merged against
                // (its If-Match would fail for good): created again from here, compared in full.
                let reason =
                    "the server's revision went back from \(sending.item.revision) to \(revision): restored from a backup?"
                result.wentBack[id] = reason
                result.events.append(.syncRequeued(id, .backend, reason: reason))
            case .stale(let theirs, let revision, let remoteID)
            where evidence.mergesSoFar[id, default: 0] < maximumMergesPerRun:
                let merge = Self.merge(
                    id, here: state.entries[id], theirs: theirs, revision: revision, remoteID: remoteID, base: base)
                result.events.append(.syncMerged(merge))
                result.merges.append(merge)
                if !merge.conflicts.isEmpty { result.conflicts += 1 }
            case .recreated(let remoteID, let revision):
                let here = state.entries[id]
                result.events.append(
                    .syncMerged(
                        SyncMerge(
                            entryID: id, remoteID: remoteID, serverRevision: 0, baseRevision: base?.revision ?? 0,
                            base: base?.entry, here: here, theirs: nil, merged: here)))
                result.events.append(.syncSucceeded(id, .backend, remoteID: remoteID, revision: revision))
            default:
                result.events.append(
                    event(
                        for: sending.item, verdict, in: state, now: now, failingFor: evidence.failingFor[id],
                        unauthorized: &result.unauthorized, random: &random))
            }
        }
        // The account the answers came from: recorded the first time; another one re-queues what the old one
        // acknowledged (this batch's deliveries included).
        let account = accountEvents(
            evidence.heard, in: state,
            delivered: zip(batch, verdicts).compactMap { Self.delivered($1) ? $0.item.entryID : nil })
        result.events += account.events
        result.accountChange = account.changed.map { ($0, account.events.count - 1) }
        return (verdicts, result)
    }

    /// The outcome event of one item. A transient failure parks the item only when it is the
    /// ``SyncPolicy/maximumAttempts``-th in a row and the first of them is at least ``SyncPolicy/parkAfterMilliseconds``
    /// old (`failingFor`, ms, by the boot clock within a boot): a short outage never parks anything, however often
    /// `--now` runs, and however the wall clock jumps.
    private func event<G: RandomNumberGenerator>(
        for item: Due, _ verdict: SyncVerdict, in state: LedgerState, now: Int64, failingFor: Int64?,
        unauthorized: inout String?, random: inout G
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
                        error: "gave up after \(attempts) attempts over \(Self.span(failingFor ?? 0)): \(error)",
                        retryable: false))
            }
            // A refused certificate or host name is not the item's fault and no outage: due at once, as soon as the
            // trust is fixed (the run stops with exit 78 meanwhile).
            let next =
                Self.untrusted(verdict) != nil
                ? now : SyncPolicy.nextAttempt(now: now, attempts: attempts, retryAfter: retryAfter, using: &random)
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
            let error = staleAgain
            if givingUp {
                return .syncFailed(
                    item.entryID, .backend,
                    SyncFailure(status: 412, error: "gave up after \(attempts) attempts: \(error)", retryable: false))
            }
            let next = SyncPolicy.nextAttempt(now: now, attempts: attempts, retryAfter: nil, using: &random)
            return .syncFailed(
                item.entryID, .backend, SyncFailure(status: 412, error: error, retryable: true, nextAttemptAt: next))
        }
    }

    /// Why an item still refused after the run's merges waits.
    var staleAgain: String {
        "HTTP 412: the entry changed on the server again after \(maximumMergesPerRun) merges in this run"
    }

    /// A duration in words, rounded down: "26 hours", "3 days".
    static func span(_ milliseconds: Int64) -> String {
        let hours = max(0, milliseconds) / 3_600_000
        return hours >= 48 ? "\(hours / 24) days" : hours == 1 ? "1 hour" : "\(hours) hours"
    }

    /// What the accounts heard mean against `state`, as events to append after the outcomes being recorded
    /// (`Specs/sync.md`, *The account*): nothing when the server named none or the recorded one; the account recorded
    /// when none was; and when another account answered — the one this device synced with was erased and created
    /// again — every record the old account acknowledged is re-queued (sent again, as a create, in this run), and the
    /// cursor goes back to 0, as for a server that went back.
    /// - Parameter delivered: entries whose delivery is recorded just before these events (a batch's outcomes):
    ///   re-queued too when the account changed, since which account took them is not known.
    /// - Returns: the events, and the reason when the account changed.
    func accountEvents(
        _ heard: HeardAccounts, in state: LedgerState, delivered: [EntryID] = []
    ) -> (events: [MoodEvent], changed: String?) {
        guard let latest = heard.latest else { return ([], nil) }
        let progress = state.outbox.progress(.backend)
        guard let recorded = progress.account else {
            if heard.names.count == 1 {
                return (
                    [
                        .syncPulled(
                            SyncPull(
                                cursor: progress.cursor, serverRevision: progress.serverRevision, applied: 0,
                                account: latest))
                    ], nil
                )
            }
            // Two accounts already in this run: which one acknowledged what is unknown, so as below.
            let reason = "the server's account changed during the run"
            return (requeueAll(in: state, delivered: delivered, account: latest, reason: reason), reason)
        }
        guard heard.names != [recorded] else { return ([], nil) }
        let reason =
            "the server answers for another account than the one this device synced with (erased and created again?)"
        return (requeueAll(in: state, delivered: delivered, account: latest, reason: reason), reason)
    }

    private func requeueAll(
        in state: LedgerState, delivered: [EntryID], account: String, reason: String
    ) -> [MoodEvent] {
        var ids = Set(delivered.filter { state.entries[$0] != nil })
        for (key, record) in state.outbox.records
        where key.destination == .backend && record.remoteID != nil && state.entries[key.entryID] != nil {
            ids.insert(key.entryID)
        }
        var events = ids.sorted().map { MoodEvent.syncRequeued($0, .backend, reason: reason + ": sent again") }
        events.append(
            .syncPulled(
                SyncPull(cursor: 0, serverRevision: 0, applied: 0, serverWentBack: true, account: account)))
        return events
    }
}
