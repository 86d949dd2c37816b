import EventLog

/// A conflict a merge recorded and nobody has resolved yet (`moodledger conflicts`, `Specs/sync.md`, *Conflicts
/// you can see*): one field of one entry changed on both sides, or deleted on one side and changed on the other.
public struct OpenConflict: Sendable, Equatable {
    public var entryID: EntryID
    /// One field (``MergeFields/existence`` for a deletion against a change).
    public var field: MergeFields
    /// The event that recorded it, and when (ms).
    public var seq: UInt64
    public var at: Int64
    /// The versions: the base (`nil`: not known), here and the server's (`nil`: deleted there, or — for a pulled
    /// deletion — not kept), and the result.
    public var base: MoodEntry?
    public var here: MoodEntry?
    public var server: MoodEntry?
    public var result: MoodEntry?
    /// Which side's value the result kept.
    public var winner: ConflictChoice
}

/// The open conflicts, a projection of the fold (``LedgerState/conflicts``): a merge opens one per conflicting field
/// (replacing an open one of the same field), a pulled deletion of an entry changed here opens one for the entry,
/// `conflict.resolved` closes the fields it names, a deletion here closes the entry's field conflicts, an erasure all
/// of them.
public struct ConflictsFold: Sendable, Equatable {
    struct Key: Hashable, Sendable {
        var entryID: EntryID
        var field: UInt8
    }

    private var open: [Key: OpenConflict] = [:]

    public init() {}

    /// The fold holding `conflicts` open (a snapshot's, decoded).
    init(_ conflicts: [OpenConflict]) {
        for conflict in conflicts { open[Key(entryID: conflict.entryID, field: conflict.field.rawValue)] = conflict }
    }

    /// The open conflicts, by entry id then field.
    public var conflicts: [OpenConflict] {
        open.values.sorted { ($0.entryID, $0.field.rawValue) < ($1.entryID, $1.field.rawValue) }
    }

    /// Applies one event.
    public mutating func apply(_ recorded: RecordedEvent) {
        switch recorded.event {
        case .syncMerged(let merge):
            for (_, field) in MergeFields.named where merge.conflicts.contains(field) {
                let kept =
                    field == .existence
                    ? (merge.merged == nil) == (merge.here == nil)
                    : merge.merged.map { !ThreeWayMerge.changed(field, from: merge.here, to: $0) } ?? false
                open[Key(entryID: merge.entryID, field: field.rawValue)] = OpenConflict(
                    entryID: merge.entryID, field: field, seq: recorded.seq, at: recorded.recordedAtMilliseconds,
                    base: merge.base, here: merge.here, server: merge.theirs, result: merge.merged,
                    winner: kept ? .here : .server)
            }
        case .remoteApplied(let change) where change.conflict && change.entry == nil:
            open[Key(entryID: change.entryID, field: MergeFields.existence.rawValue)] = OpenConflict(
                entryID: change.entryID, field: .existence, seq: recorded.seq, at: recorded.recordedAtMilliseconds,
                base: nil, here: nil, server: nil, result: nil, winner: .server)
        case .conflictResolved(let id, let fields, _):
            for (_, field) in MergeFields.named where fields.contains(field) {
                open[Key(entryID: id, field: field.rawValue)] = nil
            }
        case .deleted(let id):
            for (_, field) in MergeFields.named where field != .existence {
                open[Key(entryID: id, field: field.rawValue)] = nil
            }
        case .entryErased(let id, _):
            for (_, field) in MergeFields.named { open[Key(entryID: id, field: field.rawValue)] = nil }
        case .ledgerErased(let erasure):
            // Every erased entry's conflicts close at once, before the rewrite redacts their merges: no erased value
            // is ever shown. Only a kept HealthKit copy's may stay (the rewrite leaves its merges), and only if that
            // copy is still current: the state, which knows, says which are (``erasedEverything(at:keeping:)``).
            open = open.filter { _, conflict in erasure.keeps(conflict.here ?? conflict.result) }
        default: break
        }
    }

    /// The conflicts opened before an erasure of every entry stay only for the entries it left current: a conflict
    /// of a HealthKit copy deleted before it (by the merge that opened it, here, or by a pulled deletion) loses its
    /// records to the rewrite, as an erased entry's do (``Projection/erasedEverything(at:keeping:)``).
    package mutating func erasedEverything(at seq: UInt64, keeping kept: Set<EntryID>) {
        open = open.filter { _, conflict in conflict.seq > seq || kept.contains(conflict.entryID) }
    }
}

extension Ledger {
    /// The open conflicts as of a sequence number (default: now): the fold's (``LedgerState/conflicts``), read from
    /// the published state, or from the state at that point (time travel).
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event` (time travel reads the log).
    public func conflicts(through seq: UInt64 = .max) throws -> [OpenConflict] {
        try read(at: seq >= lastSeq ? nil : .seq(seq)) { $0.conflicts.conflicts }
    }
}
