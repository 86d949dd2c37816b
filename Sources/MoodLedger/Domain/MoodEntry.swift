/// A mood entry as the ledger holds it: the current state of one record, rebuilt from its events.
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

    /// Labels, packed inline (see ``WordList``).
    var labelList: WordList<LabelDomain>
    /// Associations, packed inline.
    var associationList: WordList<AssociationDomain>

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
    public var tags: [String]
    /// Notes, trimmed; never empty.
    public var notes: String?
    /// The source's own identifier, unique per source.
    public var sourceID: String?
    /// When the ledger recorded the creating event (milliseconds since 1970).
    public var createdAt: Int64
    /// When the ledger recorded the latest event that changed the entry.
    public var updatedAt: Int64

    /// Creates an entry.
    public init(id: EntryID, loggedAt: LoggedAt, kind: MoodKind = .momentaryEmotion, valence: Double? = nil,
                enteredScore: Int? = nil, labels: [MoodLabel] = [], associations: [MoodAssociation] = [],
                tags: [String] = [], notes: String? = nil, source: MoodSource = .manual, sourceID: String? = nil,
                createdAt: Int64 = 0, updatedAt: Int64 = 0) {
        self.id = id
        self.loggedAt = loggedAt
        self.kind = kind
        self.source = source
        self.typedScore = enteredScore.map { UInt8(clamping: $0) } ?? 0
        self.grid = valence.map(Valence.fixed) ?? .min
        self.labelList = WordList(labels)
        self.associationList = WordList(associations)
        self.tags = tags
        self.notes = notes
        self.sourceID = sourceID
        self.createdAt = createdAt
        self.updatedAt = updatedAt
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
