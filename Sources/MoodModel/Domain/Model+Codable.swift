/// `Codable` in the backend API's JSON shape (`Specs/cli.md`, *JSON shapes*), so a widget, an App Intent or an app's
/// own cache can pass entries and drafts as values: keys in snake_case, words in their wire spelling, instants as
/// ISO 8601 text. A value encoded and decoded again is `==` the value.

/// The one shape of the values written as a single string: parsed by `parse`, refused with `rule` when it does not.
extension Decoder {
    fileprivate func text<T>(_ parse: (String) -> T?, rule: String) throws -> T {
        let container = try singleValueContainer()
        guard let value = parse(try container.decode(String.self)) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: rule)
        }
        return value
    }
}

extension Encoder {
    fileprivate func text(_ text: String) throws {
        var container = singleValueContainer()
        try container.encode(text)
    }
}

extension EntryID: Codable {
    /// Decodes the canonical UUID text.
    public init(from decoder: any Decoder) throws {
        self = try decoder.text(EntryID.init, rule: "an entry id must be a UUID")
    }

    /// Encodes the canonical lowercase UUID text.
    public func encode(to encoder: any Encoder) throws { try encoder.text(description) }
}

extension LoggedAt: Codable {
    /// Decodes ISO 8601 text with its UTC offset (`2026-03-01T08:15:00.250+01:00`).
    public init(from decoder: any Decoder) throws {
        self = try decoder.text(ISO8601.parse, rule: "a time must be ISO 8601 with a UTC offset")
    }

    /// Encodes ``iso8601``: the instant to the millisecond, in the offset it was logged in.
    public func encode(to encoder: any Encoder) throws { try encoder.text(iso8601) }
}

extension LocalDate: Codable {
    /// Decodes `yyyy-MM-dd`.
    public init(from decoder: any Decoder) throws {
        self = try decoder.text(LocalDate.init, rule: "a date must be yyyy-MM-dd")
    }

    /// Encodes `yyyy-MM-dd`.
    public func encode(to encoder: any Encoder) throws { try encoder.text(description) }
}

extension MoodKind: Codable {
    /// Decodes `momentary_emotion` or `daily_mood` (or any spelling ``init(parsing:)`` accepts).
    public init(from decoder: any Decoder) throws {
        self = try decoder.text(MoodKind.init(parsing:), rule: "kind must be momentary_emotion or daily_mood")
    }

    /// Encodes ``wireName``.
    public func encode(to encoder: any Encoder) throws { try encoder.text(wireName) }
}

extension MoodSource: Codable {}

extension VocabularyWord: Codable {
    /// Decodes a word as ``parse(_:)`` reads it: Apple's words in any spelling, anything else as a custom word.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        do {
            self = try VocabularyWord.parse(try container.decode(String.self))
        } catch let error as MoodError {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    /// Encodes ``wireName``.
    public func encode(to encoder: any Encoder) throws { try encoder.text(wireName) }
}

extension MoodEntry: Codable {
    private enum Key: String, CodingKey {
        case id, kind, valence, score, labels, associations, tags, notes, source
        case loggedAt = "logged_at"
        case utcOffsetMinutes = "utc_offset_minutes"
        case valenceClassification = "valence_classification"
        case typedScore = "typed_score"
        case sourceID = "source_id"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// Decodes the API's entry object with `typed_score` (what ``encode(to:)`` writes). The derived fields
    /// (`score`, `valence_classification`) are read from the rest, never trusted.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        let valence = try c.decodeIfPresent(Double.self, forKey: .valence)
        if let valence, !(valence >= -1 && valence <= 1) {
            throw DecodingError.dataCorruptedError(forKey: .valence, in: c, debugDescription: "must be within −1…+1")
        }
        let typed = try c.decodeIfPresent(Int.self, forKey: .typedScore)
        if let typed, !(1...10).contains(typed) {
            throw DecodingError.dataCorruptedError(forKey: .typedScore, in: c, debugDescription: "must be 1…10")
        }
        func instant(_ key: Key) throws -> Int64? {
            guard let text = try c.decodeIfPresent(String.self, forKey: key) else { return nil }
            guard let time = ISO8601.parse(text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "must be ISO 8601")
            }
            return time.milliseconds
        }
        let createdAt = try instant(.createdAt) ?? 0
        self.init(
            id: try c.decode(EntryID.self, forKey: .id), loggedAt: try c.decode(LoggedAt.self, forKey: .loggedAt),
            kind: try c.decodeIfPresent(MoodKind.self, forKey: .kind) ?? .momentaryEmotion, valence: valence,
            enteredScore: typed, labels: try c.decodeIfPresent([MoodLabel].self, forKey: .labels) ?? [],
            associations: try c.decodeIfPresent([MoodAssociation].self, forKey: .associations) ?? [],
            tags: try c.decodeIfPresent([String].self, forKey: .tags) ?? [],
            notes: try c.decodeIfPresent(String.self, forKey: .notes),
            source: try c.decodeIfPresent(MoodSource.self, forKey: .source) ?? .manual,
            sourceID: try c.decodeIfPresent(String.self, forKey: .sourceID), createdAt: createdAt,
            updatedAt: try instant(.updatedAt) ?? createdAt)
    }

    /// Encodes the API's entry object (``json``'s keys and order) with `typed_score` after `score`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(id, forKey: .id)
        try c.encode(loggedAt, forKey: .loggedAt)
        try c.encode(loggedAt.utcOffsetMinutes, forKey: .utcOffsetMinutes)
        try c.encode(kind, forKey: .kind)
        try c.encode(valence, forKey: .valence)
        try c.encode(valenceClassification?.wireName, forKey: .valenceClassification)
        try c.encode(score, forKey: .score)
        try c.encode(enteredScore, forKey: .typedScore)
        try c.encode(labels, forKey: .labels)
        try c.encode(associations, forKey: .associations)
        try c.encode(tags, forKey: .tags)
        try c.encode(notes, forKey: .notes)
        try c.encode(source, forKey: .source)
        try c.encode(sourceID, forKey: .sourceID)
        try c.encode(ISO8601.format(milliseconds: createdAt, offsetMinutes: 0), forKey: .createdAt)
        try c.encode(
            updatedAt == createdAt ? nil : ISO8601.format(milliseconds: updatedAt, offsetMinutes: 0),
            forKey: .updatedAt)
    }
}

extension MoodDraft: Codable {
    private enum Key: String, CodingKey {
        case id, valence, score, labels, associations, tags, notes, kind, source
        case loggedAt = "logged_at"
        case sourceID = "source_id"
        case suggestLabels = "suggest_labels"
    }

    /// Decodes the API's create body: every key may be absent (its default), `logged_at` is ISO 8601 with an offset.
    /// Nothing is validated here: the ledger validates a draft when it is logged, naming the field and the rule.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        self.init(
            valence: try c.decodeIfPresent(Double.self, forKey: .valence),
            score: try c.decodeIfPresent(Int.self, forKey: .score),
            labels: try c.decodeIfPresent([String].self, forKey: .labels) ?? [],
            associations: try c.decodeIfPresent([String].self, forKey: .associations) ?? [],
            tags: try c.decodeIfPresent([String].self, forKey: .tags) ?? [],
            notes: try c.decodeIfPresent(String.self, forKey: .notes),
            kind: try c.decodeIfPresent(MoodKind.self, forKey: .kind) ?? .momentaryEmotion,
            loggedAt: try c.decodeIfPresent(LoggedAt.self, forKey: .loggedAt),
            source: try c.decodeIfPresent(MoodSource.self, forKey: .source) ?? .manual,
            sourceID: try c.decodeIfPresent(String.self, forKey: .sourceID),
            id: try c.decodeIfPresent(EntryID.self, forKey: .id),
            suggestLabels: try c.decodeIfPresent(Bool.self, forKey: .suggestLabels) ?? false)
    }

    /// Encodes the fields that are set (absent keys are their defaults).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encodeIfPresent(id, forKey: .id)
        try c.encodeIfPresent(loggedAt, forKey: .loggedAt)
        try c.encode(kind, forKey: .kind)
        try c.encodeIfPresent(valence, forKey: .valence)
        try c.encodeIfPresent(score, forKey: .score)
        try c.encode(labels, forKey: .labels)
        try c.encode(associations, forKey: .associations)
        try c.encode(tags, forKey: .tags)
        try c.encodeIfPresent(notes, forKey: .notes)
        try c.encode(source, forKey: .source)
        try c.encodeIfPresent(sourceID, forKey: .sourceID)
        if suggestLabels { try c.encode(true, forKey: .suggestLabels) }
    }
}

extension MoodChanges: Codable {
    private enum Key: String, CodingKey {
        case valence, score, notes, kind
        case loggedAt = "logged_at"
    }

    /// Decodes a PATCH body: an absent key changes nothing; `"notes": null` clears the notes.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        var notes: FieldChange<String>?
        if c.contains(.notes) {
            notes = try c.decodeNil(forKey: .notes) ? .clear : .set(try c.decode(String.self, forKey: .notes))
        }
        self.init(
            valence: try c.decodeIfPresent(Double.self, forKey: .valence),
            score: try c.decodeIfPresent(Int.self, forKey: .score), notes: notes,
            loggedAt: try c.decodeIfPresent(LoggedAt.self, forKey: .loggedAt),
            kind: try c.decodeIfPresent(MoodKind.self, forKey: .kind))
    }

    /// Encodes the changes given; cleared notes as `null`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encodeIfPresent(valence, forKey: .valence)
        try c.encodeIfPresent(score, forKey: .score)
        switch notes {
        case .set(let text)?: try c.encode(text, forKey: .notes)
        case .clear?: try c.encodeNil(forKey: .notes)
        case nil: break
        }
        try c.encodeIfPresent(loggedAt, forKey: .loggedAt)
        try c.encodeIfPresent(kind, forKey: .kind)
    }
}
