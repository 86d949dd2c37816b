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

    /// The status of every destination, from a state (live or as of a point).
    public static func of(_ state: LedgerState, now: Int64) -> [SyncStatus] {
        SyncDestination.allCases.sorted().map { destination in
            var status = SyncStatus(destination: destination, progress: state.outbox.progress(destination))
            for item in state.outboxItems(includeSynced: true, destination: destination) {
                switch item.status {
                case "pending":
                    status.pending += 1
                    if let next = item.nextAttemptAt, next > now {
                        status.nextAttemptAt = min(status.nextAttemptAt ?? next, next)
                    } else {
                        status.dueNow += 1
                    }
                    if state.outbox.record(OutboxKey(entryID: item.entryID, destination: destination))?.inFlight == true {
                        status.inFlight += 1
                    }
                case "failed": status.parked += 1
                default: status.synced += 1
                }
            }
            return status
        }
    }

    private static func time(_ ms: Int64?) -> JSONValue { .optional(ms) { .string(ISO8601.format(milliseconds: $0, offsetMinutes: 0)) } }

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
        ])
    }

    /// One destination as text lines.
    public var text: String {
        let target = progress.remote.map { "\($0.url) (\($0.dialect.rawValue))" } ?? (destination == .backend ? "not configured" : "this device's store")
        var lines = ["\(destination.rawValue): \(target)",
                     "  pending \(pending) (due now \(dueNow), in flight \(inFlight)), parked \(parked), synced \(synced)"]
        if let next = nextAttemptAt { lines.append("  next retry at \(ISO8601.format(milliseconds: next, offsetMinutes: 0))") }
        lines.append("  last success: " + (progress.lastSuccessAt.map { ISO8601.format(milliseconds: $0, offsetMinutes: 0) } ?? "never"))
        if let at = progress.lastErrorAt {
            lines.append("  last error: \(ISO8601.format(milliseconds: at, offsetMinutes: 0)) \(progress.lastError ?? "")")
        }
        if destination == .backend {
            lines.append("  last pull: " + (progress.lastPullAt.map { ISO8601.format(milliseconds: $0, offsetMinutes: 0) } ?? "never")
                         + ", cursor \(progress.cursor), server revision \(progress.serverRevision)")
        }
        return lines.joined(separator: "\n")
    }
}
