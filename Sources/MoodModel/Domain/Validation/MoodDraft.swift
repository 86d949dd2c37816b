/// What a caller asks to log: raw input, validated by `MoodRules/validate(_:now:)` into an entry.
public struct MoodDraft: Sendable, Equatable {
    /// Valence −1…+1 (give this or ``score``, not both).
    public var valence: Double?
    /// A 1–10 score (translated to valence exactly).
    public var score: Int?
    /// Label words: Apple's names, aliases or custom words.
    public var labels: [String]
    /// Association words.
    public var associations: [String]
    /// Free-form tags.
    public var tags: [String]
    /// Notes (trimmed; empty means none).
    public var notes: String?
    /// Momentary emotion (default) or daily mood.
    public var kind: MoodKind
    /// When it happened; `nil` means now, in the ledger's UTC offset.
    public var loggedAt: LoggedAt?
    /// Where it came from. Default: manual.
    public var source: MoodSource
    /// The source's own id: a second log with the same (source, sourceID) returns the existing entry.
    public var sourceID: String?
    /// A preset identity (imports keep the id they bring); `nil` draws a new one.
    public var id: EntryID?
    /// When only a score is given: also store the labels the older apps suggested for it. Default: `false` —
    /// nothing is stored that the user did not choose (`--suggest` asks for it).
    public var suggestLabels: Bool

    /// Creates a draft.
    public init(
        valence: Double? = nil, score: Int? = nil, labels: [String] = [], associations: [String] = [],
        tags: [String] = [], notes: String? = nil, kind: MoodKind = .momentaryEmotion,
        loggedAt: LoggedAt? = nil, source: MoodSource = .manual, sourceID: String? = nil, id: EntryID? = nil,
        suggestLabels: Bool = false
    ) {
        self.valence = valence
        self.score = score
        self.labels = labels
        self.associations = associations
        self.tags = tags
        self.notes = notes
        self.kind = kind
        self.loggedAt = loggedAt
        self.source = source
        self.sourceID = sourceID
        self.id = id
        self.suggestLabels = suggestLabels
    }
}

/// A change to a field that may also be cleared.
public enum FieldChange<Value: Sendable & Equatable>: Sendable, Equatable {
    case set(Value)
    case clear

    var value: Value? {
        if case .set(let value) = self { return value }
        return nil
    }
}

/// What a caller asks to change in an entry's scalar fields.
public struct MoodChanges: Sendable, Equatable {
    /// A new valence (clears a typed score).
    public var valence: Double?
    /// A new typed score (sets the valence too).
    public var score: Int?
    /// New notes, or `.clear`.
    public var notes: FieldChange<String>?
    /// A new logged-at time.
    public var loggedAt: LoggedAt?
    /// A new kind.
    public var kind: MoodKind?

    /// Creates a change set.
    public init(
        valence: Double? = nil, score: Int? = nil, notes: FieldChange<String>? = nil,
        loggedAt: LoggedAt? = nil, kind: MoodKind? = nil
    ) {
        self.valence = valence
        self.score = score
        self.notes = notes
        self.loggedAt = loggedAt
        self.kind = kind
    }
}

/// An edit of a word list (labels, associations or tags).
public enum WordEdit: Sendable, Equatable {
    /// Replace the whole list.
    case set([String])
    /// Add one word (no change if present).
    case add(String)
    /// Remove one word (no change if absent).
    case remove(String)
}
