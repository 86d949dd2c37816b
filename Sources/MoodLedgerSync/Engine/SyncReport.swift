import MoodLedger

/// What one sync run did.
public struct SyncReport: Sendable, Equatable {
    /// Items sent (one attempt each): `sent == delivered + merged + requeuedAtPush + retrying + parked`.
    public var sent = 0
    /// Items the server acknowledged.
    public var delivered = 0
    /// Items that failed and will be retried (the credentials refused included).
    public var retrying = 0
    /// Items parked (never going to work as sent) in this run.
    public var parked = 0
    /// Remote changes applied locally, and of those, conflicts (`Specs/sync.md`, *Conflicts*).
    public var pulled = 0
    public var conflicts = 0
    /// Sent items the server had changed (a 412): merged three ways with its version and sent again.
    public var merged = 0
    /// Pulled changes that met unsent changes here and were merged.
    public var mergedAtPull = 0
    /// Entries the server lost, queued again (by the pull, or by a send that found the revision gone back).
    public var requeued = 0
    /// Sent items whose answer showed the server's revision gone back: queued again, created anew.
    public var requeuedAtPush = 0
    /// The server's revision went below one it gave (restored from a backup).
    public var serverWentBack = false
    /// How the revision went back, in words, when a send found it.
    public var wentBack: String?
    /// Why pulling failed, if it did.
    public var pullError: String?
    /// Outbox items still pending after the run (waiting for a retry time), and parked ones.
    public var pendingAfter = 0
    public var parkedAfter = 0
    /// Items the remote cannot carry (held: not sent, listed by `sync status` with the reason).
    public var heldAfter = 0
    /// Why this run did not pull (the remote has neither a changes feed nor a list of entries), or what a list pull
    /// left on the server (records this ledger's rules refuse).
    public var pullSkipped: String?
    /// The earliest retry time among pending items (ms).
    public var nextAttemptAt: Int64?
    /// The failures of this run: entry and error text.
    public var failures: [Failure] = []

    /// One failed item.
    public struct Failure: Sendable, Equatable {
        public var entryID: EntryID
        public var error: String
        public var parked: Bool
    }

    public init() {}

    /// Whether everything due was delivered and pulled.
    public var isComplete: Bool { pendingAfter == 0 && parkedAfter == 0 && pullError == nil }

    /// The report as JSON (`moodledger sync --json`).
    public var json: JSONValue {
        .object([
            ("sent", .int(Int64(sent))), ("delivered", .int(Int64(delivered))), ("retrying", .int(Int64(retrying))),
            ("parked", .int(Int64(parked))), ("pulled", .int(Int64(pulled))), ("conflicts", .int(Int64(conflicts))),
            ("merged", .int(Int64(merged))), ("merged_at_pull", .int(Int64(mergedAtPull))),
            ("requeued_at_push", .int(Int64(requeuedAtPush))),
            ("requeued", .int(Int64(requeued))), ("server_went_back", .bool(serverWentBack)),
            ("pull_error", .optional(pullError) { .string($0) }),
            ("pending_after", .int(Int64(pendingAfter))), ("parked_after", .int(Int64(parkedAfter))),
            ("held_after", .int(Int64(heldAfter))), ("pull_skipped", .optional(pullSkipped) { .string($0) }),
            (
                "next_attempt_at",
                .optional(nextAttemptAt) { .string(ISO8601.format(milliseconds: $0, offsetMinutes: 0)) }
            ),
            (
                "failures",
                .array(
                    failures.map {
                        .object([
                            ("entry_id", .string($0.entryID.description)), ("error", .string($0.error)),
                            ("parked", .bool($0.parked))
                        ])
                    })
            )
        ])
    }
}
