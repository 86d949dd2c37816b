/// A mood entry as the ledger holds it: the current state of one record, rebuilt from its events.
public struct MoodEntry: Sendable, Equatable, Identifiable {
    /// The entry's identity.
    public var id: EntryID
    /// When it was logged, with the user's UTC offset.
    public var loggedAt: LoggedAt
    /// Momentary emotion or daily mood.
    public var kind: MoodKind
    /// Valence −1…+1 on the 2⁻⁴⁰ grid; `nil` when only labels were given.
    public var valence: Double?
    /// The 1–10 score the user typed, if they typed one (never adjusted by labels).
    public var enteredScore: Int?
    /// Labels, in the order given, without duplicates.
    public var labels: [MoodLabel]
    /// Associations, in the order given, without duplicates.
    public var associations: [MoodAssociation]
    /// Free-form context tags (e.g. imported activities), without duplicates.
    public var tags: [String]
    /// Notes, trimmed; never empty.
    public var notes: String?
    /// Where the entry came from.
    public var source: MoodSource
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
        self.valence = valence
        self.enteredScore = enteredScore
        self.labels = labels
        self.associations = associations
        self.tags = tags
        self.notes = notes
        self.source = source
        self.sourceID = sourceID
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The 1–10 score: the one typed, else derived from valence and labels; `nil` without a valence.
    public var score: Int? {
        if let enteredScore { return enteredScore }
        return valence.map { Valence.score(for: $0, labels: labels) }
    }

    /// The valence class; `nil` without a valence.
    public var valenceClassification: ValenceClassification? { valence.map(Valence.classification(of:)) }

    /// The user's local day.
    public var localDate: LocalDate { loggedAt.localDate }

    /// Whether edits and deletes are refused: entries from HealthKit are read-only here.
    public var isReadOnly: Bool { source == .healthkit }
}
