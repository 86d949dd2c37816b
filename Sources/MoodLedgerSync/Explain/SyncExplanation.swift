import MoodLedger

/// The story of one entry's delivery to the backend, told from the log in plain sentences (`moodledger sync
/// explain`): what changed when, each attempt with its outcome and the server's message, the backoff chosen,
/// conflicts, and what happens next.
public struct SyncExplanation: Sendable, Equatable {
    /// One step: the event behind it and its sentence.
    public struct Step: Sendable, Equatable {
        public var seq: UInt64
        /// ms since 1970.
        public var at: Int64
        public var type: String
        public var text: String
    }

    public var entryID: EntryID
    /// The point the story is told as of (a seq).
    public var asOf: UInt64
    /// The backend configured then, if any.
    public var remote: RemoteConfig?
    public var steps: [Step]
    /// `pending`, `held` (the remote cannot carry it), `in_flight`, `failed` (parked), `synced`, `not_eligible` or `unknown`.
    public var status: String
    /// What happens next, in a sentence.
    public var next: String

    /// Tells the story of `id` as of `point` (default: now).
    /// - Throws: ``EventLogError`` or ``MoodError`` `corrupt_event` met while reading the log.
    ///
    /// Long because the story is told in one pass over the entry's history, each event kind adding its step with the
    /// counts (attempts, merges) that later steps quote.
    public static func explain(
        _ id: EntryID, in ledger: Ledger, at point: Ledger.Point? = nil
    ) throws -> SyncExplanation {
        let through = try point.map { try ledger.seq(at: $0) } ?? ledger.lastSeq
        let (remote, status, next) = try ledger.read(at: point) { state in
            let remote = state.outbox.progress(.backend).remote
            let (status, next) = Self.outlook(id, in: state, remote: remote)
            return (remote, status, next)
        }
        var steps: [Step] = []
        var attempts = 0
        // What carried each batch of attempts (recorded with the batch; older ledgers have none).
        let carriers = try ledger.batchAttachments(.carrier, through: through).compactMap {
            batch -> (ClosedRange<UInt64>, String, Int?)? in
            let json = try? JSONParser.parse(String(decoding: batch.payload, as: UTF8.self))
            guard let carrier = json?["carrier"]?.stringValue else { return nil }
            // The batch route cuts the attempts, in seq order, into requests of `batch_items` (1…256 when recorded).
            let items = json?["batch_items"]?.intValue.flatMap { (1...256).contains($0) ? Int($0) : nil }
            return (batch.seqs, carrier, items)
        }
        // An update or delete to a remote without revisions cannot say which version it replaces.
        let unconditional = remote.map { $0.capabilitySource != .unknown && !$0.has(.revisions) } ?? false
        for recorded in try ledger.events(after: 0, through: through, filter: EventFilter(entryID: id)) {
            let at = recorded.recordedAtMilliseconds
            let text: String?
            switch recorded.event {
            case .created(let entry): text = "Logged here (source \(entry.source.rawValue))."
            case .updated, .labelsEdited, .associationsEdited, .tagsEdited:
                text = "Changed here: the backend needs an update."
            case .deleted: text = "Deleted here: the backend needs a delete if it has the entry."
            case .syncAttempted(_, let destination, let operation, let key):
                guard destination == .backend else { text = nil; break }
                attempts += 1
                let carried = carriers.first { $0.0.contains(recorded.seq) }
                var carrier = carried?.1
                if let (seqs, _, items) = carried, let items {
                    let request = Int(recorded.seq - seqs.lowerBound) / items + 1
                    carrier! += "; request \(request) of the attempts at seqs \(seqs.lowerBound)–\(seqs.upperBound)"
                }
                text =
                    "Attempt \(attempts): \(operation.rawValue) sent"
                    + (key.isEmpty ? "" : " with Idempotency-Key \(key)")
                    + (carrier.map { " (\($0))." } ?? ".")
                    + (unconditional && operation != .create
                        ? " Unconditional: the remote has no revisions, so a change made there since is replaced." : "")
            case .syncSucceeded(_, let destination, let remoteID, let revision):
                guard destination == .backend else { text = nil; break }
                attempts = 0
                text = "The server acknowledged it as \(remoteID)" + (revision > 0 ? " at revision \(revision)." : ".")
            case .syncFailed(_, let destination, let failure):
                guard destination == .backend else { text = nil; break }
                if failure.retryable {
                    let when =
                        failure.nextAttemptAt.map { "next attempt at \(Self.time($0)) (backoff drawn when it failed)" }
                        ?? "next attempt after the version-1 backoff"
                    text = "Failed: \(failure.error). Retryable: \(when)."
                } else {
                    text = "Failed: \(failure.error). Not retryable: parked until the entry changes."
                }
            case .remoteApplied(let change):
                guard change.origin == .backend else {
                    text = "A change from \(change.origin.rawValue) was applied."; break
                }
                let revision = change.revision > 0 ? " at revision \(change.revision)" : ""
                switch (change.entry == nil, change.conflict) {
                case (false, false): text = "Pulled the server's version\(revision) and applied it."
                case (false, true):
                    text =
                        "Conflict: the server changed it\(revision) while a change here was unsent; the change here is kept and will be sent (it lands later, so it wins)."
                case (true, false): text = "The server deleted it\(revision); deleted here too."
                case (true, true):
                    text =
                        "Conflict: the server deleted it\(revision) while a change here was unsent; a delete wins, so it was deleted here."
                }
            case .syncRequeued(_, let destination, let reason):
                guard destination == .backend else { text = nil; break }
                text = "Queued again: \(reason)."
            case .syncReleased(_, let destination):
                guard destination == .backend else { text = nil; break }
                text = "Released by the user (sync --retry-parked): due now, attempts counted afresh."
            case .entryErased(_, let erasure):
                text = "Erased" + (erasure.reason.isEmpty ? "." : " (\(erasure.reason)).")
            case .ledgerErased(let erasure):
                text =
                    "Every entry was erased" + (erasure.keepsHealthKit ? " but HealthKit's copies" : "")
                    + (erasure.reason.isEmpty ? "." : " (\(erasure.reason)).")
            case .redacted(_, let redaction): text = "A \(redaction.type.name) record, redacted by the erasure."
            case .syncMerged(let merge):
                guard merge.destination == .backend else { text = nil; break }
                attempts = 0
                text = MergeStory.sentences(merge).joined(separator: " ")
            case .conflictResolved(_, let fields, let choice):
                text =
                    "Conflict on \(fields.names.joined(separator: ", ")) resolved: "
                    + (choice == .here
                        ? "the value here is kept." : "the server's value was taken (an edit here, sent next).")
            case .syncPulled, .remoteConfigured, .healthKitAnchored, .requestKeyed: text = nil
            case .editReplaced: text = "The server noted this change replaced another device's edit."
            }
            if let text { steps.append(Step(seq: recorded.seq, at: at, type: recorded.event.type.name, text: text)) }
        }
        return SyncExplanation(entryID: id, asOf: through, remote: remote, steps: steps, status: status, next: next)
    }

    private static func outlook(_ id: EntryID, in state: LedgerState, remote: RemoteConfig?) -> (String, String) {
        let record = state.outbox.record(OutboxKey(entryID: id, destination: .backend))
        let entry = state.entries[id]
        let target =
            remote.map { "\($0.url) (\($0.dialect.rawValue))" }
            ?? "the backend (none configured yet: moodledger remote set URL)"
        guard let record else {
            guard let entry else {
                return ("unknown", "Nothing is pending: the entry does not exist here and the backend never had it.")
            }
            guard OutboxState.isEligible(entry.source, for: .backend) else {
                return ("not_eligible", "It came from the backend, so it is not sent back there.")
            }
            if let reason = held(.create, entry: entry, remote: remote) { return ("held", "Not sent: \(reason).") }
            return ("pending", "Never sent: the next `moodledger sync` creates it at \(target).")
        }
        guard let operation = record.operation else {
            return ("synced", "Up to date at \(target)" + (record.remoteID.map { " as \($0)" } ?? "") + ".")
        }
        if !record.parked, let reason = held(operation, entry: entry, remote: remote) {
            return (
                "held",
                "Not sent: \(reason). It is sent by itself once the remote is known to carry it (`remote set … --capabilities`)."
            )
        }
        if record.parked {
            return (
                "failed",
                "Parked after \"\(record.lastError ?? "an error")\": it is not sent again until the entry changes."
            )
        }
        if record.inFlight, let key = record.idempotencyKey, !record.changedSinceAttempt {
            return (
                "in_flight",
                "An attempt began and no outcome was recorded (the process stopped): the next `moodledger sync` resends the \(operation.rawValue) with the same Idempotency-Key \(key), so the server applies it once."
            )
        }
        if let next = record.nextAttemptAt {
            return (
                "pending",
                "A \(operation.rawValue) is due at \(time(next)); the first `moodledger sync` at or after then sends it, with no new change needed."
            )
        }
        return ("pending", "A \(operation.rawValue) is due now: the next `moodledger sync` sends it to \(target).")
    }

    /// Why the remote cannot carry the operation, once its capabilities are known.
    private static func held(_ operation: SyncOperation, entry: MoodEntry?, remote: RemoteConfig?) -> String? {
        guard let remote, remote.capabilitySource != .unknown else { return nil }
        return SyncDialect(remote).held(operation, entry: entry)
    }

    static func time(_ ms: Int64) -> String { ISO8601.format(milliseconds: ms, offsetMinutes: 0) }

    /// The story as text lines.
    public var text: String {
        var lines = [
            "Entry \(entryID) and the backend"
                + (remote.map { " \($0.url) (\($0.dialect.rawValue))" } ?? "") + ", as of seq \(asOf):"
        ]
        if steps.isEmpty { lines.append("  (no events)") }
        for step in steps { lines.append("  #\(step.seq)  \(Self.time(step.at))  \(step.text)") }
        lines.append("Now: \(status). \(next)")
        return lines.joined(separator: "\n")
    }

    /// The story as JSON (`sync explain --json`).
    public var json: JSONValue {
        .object([
            ("entry_id", .string(entryID.description)), ("as_of_seq", .int(Int64(asOf))),
            (
                "remote",
                .optional(remote) { .object([("url", .string($0.url)), ("dialect", .string($0.dialect.rawValue))]) }
            ),
            (
                "steps",
                .array(
                    steps.map {
                        .object([
                            ("seq", .int(Int64($0.seq))), ("at", .string(Self.time($0.at))), ("type", .string($0.type)),
                            ("text", .string($0.text))
                        ])
                    })
            ),
            ("status", .string(status)), ("next", .string(next))
        ])
    }
}
