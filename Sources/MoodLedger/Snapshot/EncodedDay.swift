/// A day's entries as a snapshot stores them, already encoded: the rows in the day's order and their bodies in one
/// buffer (an import's entries read back from its `entry.created` records, whose bodies are the arena's encoding).
struct EncodedDay {
    /// One entry's row.
    struct Row {
        var id: EntryID
        /// `logged_at`, `created_at` and `updated_at` (ms).
        var loggedAt: Int64
        var createdAt: Int64
        var updatedAt: Int64
        /// Its body: `bodies[bodyStart ..< bodyStart + bodyCount]`.
        var bodyStart: Int
        var bodyCount: Int
        /// ``SnapshotImage/sourceHash(_:_:)`` of its source key, if it has a source id.
        var sourceHash: UInt64?
        /// Whether it is a daily mood.
        var isDailyMood: Bool
    }

    /// The rows, ordered by instant, then id.
    var rows: [Row] = []
    /// The bodies, back to back.
    var bodies: [UInt8] = []

    /// The day's daily mood: the earliest logged (the rows are in that order).
    var dailyMoodRow: Int? { rows.firstIndex(where: \.isDailyMood) }
}
