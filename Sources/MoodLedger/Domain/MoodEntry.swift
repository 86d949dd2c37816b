/// A mood entry as the ledger holds it: the current state of one record, rebuilt from its events.
///
/// Held by the million and copied on every event a replay folds, so the value is 80 bytes of plain fields plus one
/// optional reference: the fields that need the heap (tags, notes, source id, word lists that do not pack into 64
/// bits) live together in one immutable ``EntryExtras`` box, absent when all are empty. Copying an entry then
/// retains at most one object instead of five, and most entries hold none.
public struct MoodEntry: Sendable, Equatable, Identifiable {
    /// The entry's identity.
    public var id: EntryID
    /// When it was logged, with the user's UTC offset.
    public var loggedAt: LoggedAt
    /// Momentary emotion or daily mood.
    public var kind: MoodKind
    /// Where the entry came from.
    public var source: MoodSource
    /// The typed score in one byte (0: none); see ``enteredScore``.
    private var typedScore: UInt8
    /// The valence as its grid value (``Valence/fixed(_:)``); `Int64.min`: none. Eight bytes instead of sixteen.
    private var grid: Int64
    /// The labels when they pack (``WordList``'s packed form; ignored while ``extras`` holds spilled labels).
    private var packedLabels: UInt64
    /// The associations when they pack, likewise.
    private var packedAssociations: UInt64
    /// Tags, notes, source id and spilled word lists; `nil` when all are empty (canonical: equality compares
    /// contents).
    private var extras: EntryExtras?
    /// When the ledger recorded the creating event (milliseconds since 1970).
    public var createdAt: Int64
    /// When the ledger recorded the latest event that changed the entry.
    public var updatedAt: Int64

    /// Valence −1…+1 on the 2⁻⁴⁰ grid; `nil` when only labels were given. Set values are rounded onto the grid.
    public var valence: Double? {
        get { grid == .min ? nil : Valence.value(grid) }
        set { grid = newValue.map(Valence.fixed) ?? .min }
    }

    /// The valence's grid value, if any (what analytics sum).
    var valenceGrid: Int64? { grid == .min ? nil : grid }

    /// The 1–10 score the user typed, if they typed one (never adjusted by labels).
    public var enteredScore: Int? {
        get { typedScore == 0 ? nil : Int(typedScore) }
        set { typedScore = newValue.map { UInt8(clamping: $0) } ?? 0 }
    }

    /// Labels, packed inline when they can be (see ``WordList``).
    var labelList: WordList<LabelDomain> {
        get { extras?.fields.labels.map(WordList.init(spilled:)) ?? WordList(packed: packedLabels) }
        set {
            packedLabels = newValue.packedValue ?? 0
            if newValue.spilledWords != nil || extras?.fields.labels != nil {
                update { $0.labels = newValue.spilledWords }
            }
        }
    }

    /// Associations, packed inline when they can be.
    var associationList: WordList<AssociationDomain> {
        get { extras?.fields.associations.map(WordList.init(spilled:)) ?? WordList(packed: packedAssociations) }
        set {
            packedAssociations = newValue.packedValue ?? 0
            if newValue.spilledWords != nil || extras?.fields.associations != nil {
                update { $0.associations = newValue.spilledWords }
            }
        }
    }

    /// Labels, in the order given, without duplicates.
    public var labels: [MoodLabel] {
        get { labelList.array }
        set { labelList = WordList(newValue) }
    }

    /// Associations, in the order given, without duplicates.
    public var associations: [MoodAssociation] {
        get { associationList.array }
        set { associationList = WordList(newValue) }
    }

    /// Free-form context tags (e.g. imported activities), without duplicates.
    public var tags: [String] {
        get { extras?.fields.tags ?? [] }
        set { if !newValue.isEmpty || extras?.fields.tags.isEmpty == false { update { $0.tags = newValue } } }
    }

    /// Notes, trimmed; never empty.
    public var notes: String? {
        get { extras?.fields.notes }
        set { if newValue != nil || extras?.fields.notes != nil { update { $0.notes = newValue } } }
    }

    /// The source's own identifier, unique per source.
    public var sourceID: String? {
        get { extras?.fields.sourceID }
        set { if newValue != nil || extras?.fields.sourceID != nil { update { $0.sourceID = newValue } } }
    }

    /// Replaces the extras box by a changed copy (the box is shared by every copy of the entry, so it never changes
    /// in place), or by nothing when all its fields are empty.
    private mutating func update(_ change: (inout EntryExtras.Fields) -> Void) {
        var fields = extras?.fields ?? EntryExtras.Fields()
        change(&fields)
        extras = EntryExtras.make(fields)
    }

    /// Creates an entry.
    public init(id: EntryID, loggedAt: LoggedAt, kind: MoodKind = .momentaryEmotion, valence: Double? = nil,
                enteredScore: Int? = nil, labels: [MoodLabel] = [], associations: [MoodAssociation] = [],
                tags: [String] = [], notes: String? = nil, source: MoodSource = .manual, sourceID: String? = nil,
                createdAt: Int64 = 0, updatedAt: Int64 = 0) {
        self.init(id: id, loggedAt: loggedAt, kind: kind, grid: valence.map(Valence.fixed) ?? .min,
                  typedScore: enteredScore.map { UInt8(clamping: $0) } ?? 0, labels: WordList(labels),
                  associations: WordList(associations), tags: tags, notes: notes, source: source, sourceID: sourceID)
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Creates an entry from values already in their stored form (the codec's path: no intermediate arrays).
    init(id: EntryID, loggedAt: LoggedAt, kind: MoodKind, grid: Int64, typedScore: UInt8,
         labels: WordList<LabelDomain>, associations: WordList<AssociationDomain>, tags: [String], notes: String?,
         source: MoodSource, sourceID: String?) {
        self.id = id
        self.loggedAt = loggedAt
        self.kind = kind
        self.source = source
        self.typedScore = typedScore
        self.grid = grid
        self.packedLabels = labels.packedValue ?? 0
        self.packedAssociations = associations.packedValue ?? 0
        self.extras = EntryExtras.make(EntryExtras.Fields(tags: tags, notes: notes, sourceID: sourceID,
                                                          labels: labels.spilledWords,
                                                          associations: associations.spilledWords))
        self.createdAt = 0
        self.updatedAt = 0
    }

    /// The 1–10 score: the one typed, else derived from valence and labels; `nil` without a valence.
    public var score: Int? {
        if let enteredScore { return enteredScore }
        return valence.map { Valence.score(for: $0, labels: labelList) }
    }

    /// The valence class; `nil` without a valence.
    public var valenceClassification: ValenceClassification? { valence.map(Valence.classification(of:)) }

    /// The user's local day.
    public var localDate: LocalDate { loggedAt.localDate }

    /// Whether edits and deletes are refused: entries from HealthKit are read-only here.
    public var isReadOnly: Bool { source == .healthkit }
}

/// The fields of an entry that need the heap, in one immutable box shared by the entry's copies.
final class EntryExtras: Sendable, Equatable {
    /// The boxed values.
    struct Fields: Equatable {
        var tags: [String] = []
        var notes: String?
        var sourceID: String?
        /// Labels that do not pack into 64 bits (custom words, or more than eight), else `nil`.
        var labels: [MoodLabel]?
        /// Associations likewise.
        var associations: [MoodAssociation]?

        var isEmpty: Bool { tags.isEmpty && notes == nil && sourceID == nil && labels == nil && associations == nil }
    }

    let fields: Fields

    private init(_ fields: Fields) { self.fields = fields }

    /// A box for the fields, or `nil` when they are all empty (so that an entry's representation is canonical).
    static func make(_ fields: Fields) -> EntryExtras? { fields.isEmpty ? nil : EntryExtras(fields) }

    static func == (a: EntryExtras, b: EntryExtras) -> Bool { a === b || a.fields == b.fields }
}
