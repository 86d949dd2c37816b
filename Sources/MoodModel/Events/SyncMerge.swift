/// A three-way merge of an entry with a destination's version (`sync.merged`, `Specs/sync.md`, *Merging*): the
/// version the destination had when the entry was last in step (base), the version here, the destination's
/// current version, and the result — kept whole, so replay never re-runs the merge rules and an independent reader
/// needs none of them.
public struct SyncMerge: Sendable, Equatable {
    /// The destination merged with.
    public var destination: SyncDestination
    /// The entry.
    public var entryID: EntryID
    /// The destination's id for the entry, if known.
    public var remoteID: String?
    /// The destination's revision of its version (the base of the next conditional send).
    public var serverRevision: UInt64
    /// The revision the base was at (0: not known).
    public var baseRevision: UInt64
    /// The destination's version when the entry was last in step, as known here (`nil`: not known).
    public var base: MoodEntry?
    /// The version here when merged (`nil`: deleted here).
    public var here: MoodEntry?
    /// The destination's current version (`nil`: deleted there).
    public var theirs: MoodEntry?
    /// The result (`nil`: the entry stays deleted).
    public var merged: MoodEntry?

    /// Creates a merge record. The versions keep their content only: their created and updated times are the
    /// ledger's, which the record does not carry.
    public init(
        destination: SyncDestination = .backend, entryID: EntryID, remoteID: String?, serverRevision: UInt64,
        baseRevision: UInt64, base: MoodEntry?, here: MoodEntry?, theirs: MoodEntry?, merged: MoodEntry?
    ) {
        self.destination = destination
        self.entryID = entryID
        self.remoteID = remoteID
        self.serverRevision = serverRevision
        self.baseRevision = baseRevision
        self.base = base.map(\.bodyContent)
        self.here = here.map(\.bodyContent)
        self.theirs = theirs.map(\.bodyContent)
        self.merged = merged.map(\.bodyContent)
    }

    /// The fields on which both sides changed to different values (the true conflicts), from the three versions.
    public var conflicts: MergeFields { ThreeWayMerge.outcomes(base: base, here: here, theirs: theirs).conflicts }
}

/// The fields of an entry as the merge sees them; valence and a typed score are one field (a score is a valence).
public struct MergeFields: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let mood = MergeFields(rawValue: 1)
    public static let loggedAt = MergeFields(rawValue: 2)
    public static let kind = MergeFields(rawValue: 4)
    public static let notes = MergeFields(rawValue: 8)
    public static let labels = MergeFields(rawValue: 16)
    public static let associations = MergeFields(rawValue: 32)
    public static let tags = MergeFields(rawValue: 64)
    /// The entry itself: deleted on one side, changed on the other.
    public static let existence = MergeFields(rawValue: 128)

    /// Every field with its name on the command line and in JSON, in this order.
    public static let named: [(name: String, field: MergeFields)] = [
        ("mood", .mood), ("logged_at", .loggedAt), ("kind", .kind), ("notes", .notes), ("labels", .labels),
        ("associations", .associations), ("tags", .tags), ("entry", .existence)
    ]

    /// The fields' names, in ``named`` order.
    public var names: [String] { Self.named.filter { contains($0.field) }.map(\.name) }
}

/// Which side a conflict resolution keeps.
public enum ConflictChoice: UInt8, Sendable {
    /// The value here (what won when the write reached the server last).
    case here = 0
    /// The server's value that lost.
    case server = 1
}
