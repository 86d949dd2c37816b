import MoodLedger

/// The outbox of one destination in figures (`moodledger sync status`).
public struct SyncStatus: Sendable, Equatable {
    public var destination: SyncDestination
    public var progress: SyncProgress
    public var pending = 0
    public var dueNow = 0
    public var inFlight = 0
    public var parked = 0
    public var synced = 0
    /// The earliest retry time of a pending item that is not due yet (ms).
    public var nextAttemptAt: Int64?
    /// Pending changes the remote cannot carry (not sent, not counted as pending): entry and reason.
    public var held: [Note] = []
    /// Entries sent (or to be sent) without something the remote does not keep: entry and what.
    public var notCarried: [Note] = []

    /// One entry's note: held and why, or what is not carried.
    public struct Note: Sendable, Equatable {
        public var entryID: EntryID
        public var text: String
    }

    /// The status of every destination, from a state (live or as of a point).
    public static func of(_ state: LedgerState, now: Int64) -> [SyncStatus] {
        let destinations = SyncDestination.allCases.sorted()
        var statuses = destinations.map { SyncStatus(destination: $0, progress: state.outbox.progress($0)) }
        // One pass over the outbox for every destination (each pass decodes every entry).
        // What is held or not carried depends on what the remote can do: nothing is said before that is known.
        let codec = state.outbox.progress(.backend).remote.flatMap {
            $0.capabilitySource == .unknown ? nil : SyncDialect($0)
        }
        for item in state.outboxItems(includeSynced: true) {
            guard let slot = destinations.firstIndex(of: item.destination) else { continue }
            if item.destination == .backend, let codec {
                let entry = state.entries[item.entryID]
                if item.status == "pending", let operation = item.operation,
                    let reason = codec.held(operation, entry: entry)
                {
                    statuses[slot].held.append(Note(entryID: item.entryID, text: reason))
                    continue
                }
                if let entry, item.operation != .delete {
                    let lost = codec.notCarried(entry)
                    if !lost.isEmpty {
                        statuses[slot].notCarried.append(
                            Note(entryID: item.entryID, text: lost.joined(separator: ", ")))
                    }
                }
            }
            switch item.status {
            case "pending":
                statuses[slot].pending += 1
                if let next = SyncPolicy.retryTime(item.nextAttemptAt, now: now), next > now {
                    statuses[slot].nextAttemptAt = min(statuses[slot].nextAttemptAt ?? next, next)
                } else {
                    statuses[slot].dueNow += 1
                }
                if item.inFlight { statuses[slot].inFlight += 1 }
            case "failed": statuses[slot].parked += 1
            default: statuses[slot].synced += 1
            }
        }
        return statuses
    }

    private static func time(_ ms: Int64?) -> JSONValue {
        .optional(ms) { .string(ISO8601.format(milliseconds: $0, offsetMinutes: 0)) }
    }

    /// One destination as JSON.
    public var json: JSONValue {
        .object([
            ("destination", .string(destination.rawValue)),
            ("url", .optional(progress.remote) { .string($0.url) }),
            ("dialect", .optional(progress.remote) { .string($0.dialect.rawValue) }),
            ("pending", .int(Int64(pending))), ("due_now", .int(Int64(dueNow))), ("in_flight", .int(Int64(inFlight))),
            ("parked", .int(Int64(parked))), ("synced", .int(Int64(synced))),
            ("next_attempt_at", Self.time(nextAttemptAt)),
            ("last_success_at", Self.time(progress.lastSuccessAt)),
            ("last_error_at", Self.time(progress.lastErrorAt)),
            ("last_error", .optional(progress.lastError) { .string($0) }),
            ("last_pull_at", Self.time(progress.lastPullAt)),
            ("cursor", .int(Int64(progress.cursor))), ("server_revision", .int(Int64(progress.serverRevision))),
            (
                "capabilities",
                .optional(progress.remote.flatMap { $0.capabilitySource == .unknown ? nil : $0 }) {
                    .array($0.capabilities.names.map { .string($0) })
                }
            ),
            ("pulls", .bool(progress.remote?.has(.changes) ?? false)),
            (
                "held",
                .array(
                    held.map { .object([("entry_id", .string($0.entryID.description)), ("reason", .string($0.text))]) })
            ),
            (
                "not_carried",
                .array(
                    notCarried.map {
                        .object([("entry_id", .string($0.entryID.description)), ("fields", .string($0.text))])
                    })
            )
        ])
    }

    /// One destination as text lines.
    public var text: String {
        let target =
            progress.remote.map { "\($0.url) (\($0.dialect.rawValue))" }
            ?? (destination == .backend ? "not configured" : "this device's store")
        var lines = [
            "\(destination.rawValue): \(target)",
            "  pending \(pending) (due now \(dueNow), in flight \(inFlight)), parked \(parked), synced \(synced)"
        ]
        if let next = nextAttemptAt {
            lines.append("  next retry at \(ISO8601.format(milliseconds: next, offsetMinutes: 0))")
        }
        lines.append(
            "  last success: "
                + (progress.lastSuccessAt.map { ISO8601.format(milliseconds: $0, offsetMinutes: 0) } ?? "never"))
        if let at = progress.lastErrorAt {
            lines.append(
                "  last error: \(ISO8601.format(milliseconds: at, offsetMinutes: 0)) \(progress.lastError ?? "")")
        }
        if let remote = progress.remote, destination == .backend {
            lines.append(
                "  capabilities: "
                    + (remote.capabilitySource == .unknown
                        ? "not known yet (the next sync asks the server)"
                        : "\(remote.capabilitySource.name), "
                            + (remote.capabilities.isEmpty
                                ? "none beyond the documented routes"
                                : remote.capabilities.names.joined(separator: ", ")))
            )
            let never = SyncDialect(remote).neverCarried
            if remote.capabilitySource != .unknown, !never.isEmpty {
                lines.append(
                    "  this remote keeps no " + never.joined(separator: ", ") + " (the dialect has no field for them)")
            }
            if remote.capabilitySource != .unknown, !remote.has(.changes) {
                lines.append(
                    remote.dialect == .progress
                        ? "  pull: none — the progress dialect lists scores, not mood entries; this device only pushes"
                        : "  pull: from the list (\(remote.dialect.rawValue) has no changes feed): new records and edits "
                            + "of the last days by logged_at; deletions there are not seen")
            }
        }
        if !held.isEmpty {
            lines.append("  held \(held.count) (the remote cannot carry them; not sent):")
            for note in held.prefix(50) { lines.append("    \(note.entryID)  \(note.text)") }
            if held.count > 50 { lines.append("    … and \(held.count - 50) more (--json lists all)") }
        }
        if !notCarried.isEmpty {
            lines.append(
                "  not carried by this remote (sent without it) for \(notCarried.count) entr\(notCarried.count == 1 ? "y" : "ies"):"
            )
            for note in notCarried.prefix(50) { lines.append("    \(note.entryID)  \(note.text)") }
            if notCarried.count > 50 { lines.append("    … and \(notCarried.count - 50) more (--json lists all)") }
        }
        if destination == .backend {
            lines.append(
                "  last pull: "
                    + (progress.lastPullAt.map { ISO8601.format(milliseconds: $0, offsetMinutes: 0) } ?? "never")
                    + ", cursor \(progress.cursor), server revision \(progress.serverRevision)")
        }
        return lines.joined(separator: "\n")
    }
}
