import MoodLedger

/// The sync's decisions, pure (`Specs/sync.md`, *The planner and the runner*): state in, requests out; every answer
/// judged against the request it answers before anything is recorded; a batch's outcomes and a page's changes turned
/// into the events to append. It owns no thread, no clock, no transport and no ledger: ``SyncEngine`` (the runner)
/// reads the state, sends the requests, draws the jitter, and appends what the planner returns — so every rule here is
/// tested without a network (`SyncPlannerTests`).
struct SyncPlanner: Sendable {
    /// The remote's codec and capabilities.
    let dialect: SyncDialect
    /// This ledger's part of its keys (``key(for:in:atSeq:)``).
    let keyTag: String
    /// Every pending item is due, whatever its retry time (`sync --now`).
    let ignoreBackoff: Bool
    /// Merges of one entry in one run at most.
    let maximumMergesPerRun: Int

    /// An item to send: what is due of one entry.
    struct Due: Sendable {
        var entryID: EntryID
        var operation: SyncOperation
        var remoteID: String?
        var attempts: Int
        /// The destination's revision of the entry as known here: the base of a conditional send.
        var revision: UInt64 = 0
        /// What this send replaces of another device's edit (a merge's conflicts in this run), for the header.
        var replaces: String?
        /// The versions earlier attempts sent since the entry was last in step (``needsSentVersions``), filled by
        /// the runner from the log: what a lost create may have made.
        var sent: [MoodEntry] = []
    }

    /// Whether an item's earlier attempts matter to its send: a create or a delete of a record the server never
    /// acknowledged, to a seed backend that makes its own ids (a lost create is looked for there before either).
    func needsSentVersions(_ item: Due) -> Bool {
        dialect.dialect != .moodAPI && item.remoteID == nil
            && ((item.operation == .create && item.attempts > 0) || item.operation == .delete)
    }

    /// An item of a batch: what is due, its key, and the entry as it was at the attempt (what is sent).
    typealias Sending = (item: Due, key: String, entry: MoodEntry?)

    // MARK: - What is due, and what is sent

    /// Pending, unparked `backend` items whose retry time has come and that the remote can carry, in outbox order.
    func dueItems(in state: LedgerState, now: Int64, limit: Int) -> [Due] {
        var due: [Due] = []
        for item in state.outboxItems(destination: .backend) where item.status == "pending" {
            guard let operation = item.operation,
                ignoreBackoff || (SyncPolicy.retryTime(item.nextAttemptAt, now: now) ?? .min) <= now,
                dialect.held(operation, entry: state.entries[item.entryID]) == nil
            else { continue }
            let revision = state.outbox.record(OutboxKey(entryID: item.entryID, destination: .backend))?.revision ?? 0
            due.append(
                Due(
                    entryID: item.entryID, operation: operation, remoteID: item.remoteID, attempts: item.attempts,
                    revision: revision))
            if due.count >= limit { break }
        }
        return due
    }

    /// The item of `id` if it is still pending, unparked and due in `state`.
    func stillDue(_ id: EntryID, in state: LedgerState, now: Int64) -> Due? {
        let record = state.outbox.record(OutboxKey(entryID: id, destination: .backend))
        if let record {
            guard let operation = record.operation, !record.parked,
                ignoreBackoff || (SyncPolicy.retryTime(record.nextAttemptAt, now: now) ?? .min) <= now
            else { return nil }
            return Due(
                entryID: id, operation: operation, remoteID: record.remoteID, attempts: record.attempts,
                revision: record.revision)
        }
        guard let entry = state.entries[id], OutboxState.isEligible(entry.source, for: .backend) else { return nil }
        return Due(entryID: id, operation: .create, remoteID: nil, attempts: 0)
    }

    /// The next batch of attempts from `candidates` against `state`: the items still due and carried, at most
    /// `limit`, each with its key and the entry as it is now (what is sent), and their `sync.attempted` events.
    /// `replaces`: the merges of this run whose next send says what it replaces. Returns the candidates not looked at.
    func attempts(
        from candidates: ArraySlice<Due>, in state: LedgerState, now: Int64, limit: Int, replaces: [EntryID: String]
    ) -> (batch: [Sending], events: [MoodEvent], rest: ArraySlice<Due>) {
        var batch: [Sending] = []
        var events: [MoodEvent] = []
        var remaining = candidates
        var named: Set<EntryID> = []
        while let candidate = remaining.first, batch.count < limit {
            remaining.removeFirst()
            // A batch names each entry once: one attempt, one outcome.
            guard var item = stillDue(candidate.entryID, in: state, now: now),
                dialect.held(item.operation, entry: state.entries[item.entryID]) == nil,
                named.insert(item.entryID).inserted
            else { continue }
            item.replaces = replaces[item.entryID]
            let key = key(for: item, in: state)
            events.append(.syncAttempted(item.entryID, .backend, item.operation, key: key))
            batch.append((item, key, state.entries[item.entryID]))
        }
        return (batch, events, remaining)
    }

    /// The `Idempotency-Key`: the previous attempt's key while the entry is unchanged and no attempt succeeded (after
    /// a crash, a timeout or a dropped connection the server may have applied it: resending the same key gets the
    /// first answer back), else `<entry id>.<ledger tag>.<ledger seq>` — new for every version of the entry. The tag
    /// (``keyTag``) keeps two devices of one account apart: each numbers its own events, and the same entry edited
    /// on both at the same seq would otherwise be two different requests under one key, the second refused for good.
    /// `atSeq`: the seq the attempt is appended after (the state's, unless planning ahead).
    func key(for item: Due, in state: LedgerState, atSeq: UInt64? = nil) -> String {
        if let record = state.outbox.record(OutboxKey(entryID: item.entryID, destination: .backend)),
            let key = record.idempotencyKey, !record.changedSinceAttempt
        {
            return key
        }
        return "\(item.entryID).\(keyTag).\(atSeq ?? state.seq)"
    }

    /// The request an item's operation sends (with its `MoodLedger-Replaces` where the remote takes it).
    func request(for operation: SyncOperation, item: Due, entry: MoodEntry?, key: String) -> SyncRequest {
        var request = dialect.request(
            operation, entryID: item.entryID, entry: entry, remoteID: item.remoteID, key: key,
            baseRevision: item.revision)
        if operation == .update, dialect.remote.has(.extensions), dialect.remote.has(.revisions) {
            request.replaces = item.replaces
        }
        return request
    }

    // MARK: - What an answer means

    /// The verdict of one answer to `request`, sent for `operation` of `entryID` (a single request's answer, or one
    /// item's result in a batch), and whether a create's answer says the server already had the record (200, not a
    /// replay). Before anything is recorded the answer is checked against what was sent: a create to a server that
    /// makes its own ids answered without one, or an answer describing another record than the one sent, is a
    /// retryable failure naming the rule — never a delivery.
    func judge(
        _ request: SyncRequest, operation: SyncOperation, entryID: EntryID,
        status: Int, headers: [(name: String, value: String)], body: [UInt8], now: Int64
    ) -> Answer {
        var verdict = SyncPolicy.classify(
            operation, status: status, headers: headers, body: body, entryID: entryID, now: now)
        if case .delivered(let remoteID, _) = verdict, operation == .create, remoteID == entryID.description,
            !dialect.remote.has(.extensions), !SyncPolicy.namesRecord(body)
        {
            // A server that makes its own ids answered a create without one (another request's 204, a proxy's page):
            // which record it made is unknown, so nothing is recorded as delivered.
            return (
                .retry(
                    status: nil, error: "the answer to a create names no record (no data.id): not taken",
                    retryAfter: nil), false, false
            )
        }
        let replayed = headers.contains { $0.name.lowercased() == "idempotent-replayed" }
        let alreadyThere = operation == .create && status == 200 && !replayed
        if alreadyThere, case .delivered(let remoteID, _) = verdict, EntryID(remoteID) != entryID,
            SyncPolicy.sameSourceKey(sent: request.body, answer: body)
        {
            // The server already holds this entry's source record (the same source and source id: a HealthKit sample
            // another client posted first) under its own id: it is the same entry. Linked, not compared.
            return (verdict, true, true)
        }
        if case .delivered(let remoteID, _) = verdict, operation != .delete,
            // A create answered 200 under our own id describes the copy the server already had, which may be older
            // than what was sent: it is brought up to date next, not compared.
            !(alreadyThere && EntryID(remoteID) == entryID),
            let field = SyncPolicy.contradiction(sent: request.body, answer: body)
        {
            verdict = .retry(
                status: nil,
                error: "the answer describes another record than the one sent (its \(field) differs): not taken",
                retryAfter: nil)
            return (verdict, false, false)
        }
        return (verdict, alreadyThere, false)
    }

    /// What an answer meant: the verdict; whether a create's answer says the server already had the record (200, not
    /// a replay); and whether it had it under another id, linked by the entry's source and source id.
    typealias Answer = (verdict: SyncVerdict, alreadyThere: Bool, linked: Bool)

    /// A delivery checked against the record it was sent for: an answer that names another entry than the one sent
    /// (a create whose body carried our id answered with another id; an update answered with an id other than the
    /// one it was sent to) is not taken; an update or delete answered without an id keeps the record's id; our own id
    /// echoed in another case is our id.
    func attributed(
        _ verdict: SyncVerdict, alreadyThere: Bool, linked: Bool = false, operation: SyncOperation, item: Due
    ) -> (verdict: SyncVerdict, alreadyThere: Bool) {
        // A create linked by its source key names the server's own record for this entry: taken under that id.
        if linked, operation == .create, case .delivered = verdict { return (verdict, alreadyThere) }
        var verdict = verdict
        let expected =
            operation == .create
            ? (dialect.remote.has(.extensions) && dialect.dialect != .progress ? item.entryID.description : nil)
            : operation == .update ? item.remoteID ?? item.entryID.description : nil
        if case .delivered(let remoteID, let revision) = verdict, operation != .create,
            remoteID == item.entryID.description, let known = item.remoteID, known != remoteID
        {
            // An update or delete answered without an id (a 204, a body without data.id) concerns the record it was
            // sent to: its id stays the one the server gave, never the entry's own.
            verdict = .delivered(remoteID: known, revision: revision)
        }
        if case .delivered(let remoteID, let revision) = verdict, let expected, remoteID != expected,
            EntryID(remoteID)?.description == expected
        {
            // Our own id echoed in another case (`6F1C…` for `6f1c…`): the same UUID, recorded as sent.
            verdict = .delivered(remoteID: expected, revision: revision)
        }
        if case .delivered(let remoteID, _) = verdict, let expected, remoteID != expected,
            operation == .create || remoteID != item.entryID.description
        {
            return (
                .retry(
                    status: nil, error: "the answer names another entry than the one sent: not taken", retryAfter: nil),
                false
            )
        }
        return (verdict, alreadyThere)
    }

    /// Deliveries whose server id another entry already holds (a record in `state`, or an earlier item of this
    /// batch) are not taken: two entries never share a server id, so a later delete of one never removes the other's
    /// copy (`Specs/sync.md`, *What the client refuses*). Each becomes a retryable failure naming the rule.
    func refusingClaimedIDs(_ batch: [Sending], _ outcomes: [SyncVerdict], in state: LedgerState) -> [SyncVerdict] {
        var claimed: [String: EntryID] = [:]
        // The entry's own id needs no look-up: ids are unique here. Other ids (server-assigned) are looked up once.
        let given = Set(
            zip(batch, outcomes).compactMap { sending, verdict -> String? in
                guard let remoteID = Self.givenID(verdict), remoteID != sending.item.entryID.description else {
                    return nil
                }
                return remoteID
            })
        guard !given.isEmpty else { return outcomes }
        for (key, record) in state.outbox.records where key.destination == .backend {
            if let remoteID = record.remoteID, given.contains(remoteID) { claimed[remoteID] = key.entryID }
        }
        var result = outcomes
        for (index, (sending, verdict)) in zip(batch, outcomes).enumerated() {
            guard let remoteID = Self.givenID(verdict), remoteID != sending.item.entryID.description else { continue }
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

    /// The server id a delivery (or a re-creation) names.
    static func givenID(_ verdict: SyncVerdict) -> String? {
        switch verdict {
        case .delivered(let remoteID, _), .recreated(let remoteID, _): return remoteID
        default: return nil
        }
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
}
