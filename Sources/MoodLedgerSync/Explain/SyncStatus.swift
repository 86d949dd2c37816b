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
        let destinations = SyncDestination.allCases.sorted()
        var statuses = destinations.map { SyncStatus(destination: $0, progress: state.outbox.progress($0)) }
        // One pass over the outbox for every destination (each pass decodes every entry).
        for item in state.outboxItems(includeSynced: true) {
            guard let slot = destinations.firstIndex(of: item.destination) else { continue }
            switch item.status {
            case "pending":
                statuses[slot].pending += 1
                if let next = item.nextAttemptAt, next > now {
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
