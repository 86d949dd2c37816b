/// The validation rules of `Specs/mood-model.md`. Errors name the field and the rule and never echo notes.
public enum MoodRules {
    /// 2000-01-01T00:00:00Z in milliseconds.
    public static let earliestMilliseconds: Int64 = 946_684_800_000
    /// How far in the future an entry may be logged: 24 hours.
    public static let futureAllowanceMilliseconds: Int64 = 86_400_000
    public static let maximumLabels = 10
    public static let maximumAssociations = 10
    public static let maximumTags = 64
    public static let maximumTagLength = 100
    public static let maximumNotesLength = 500
    /// The 1–10 score's range (its valence is its exact translation).
    public static let scoreRange = 1...10
    /// The score's range for a number read from JSON (`7.0` is 7; `7.5` is refused as not whole).
    public static let scoreValues = Double(scoreRange.lowerBound)...Double(scoreRange.upperBound)
    /// The score's range as rules spell it: `1...10`.
    public static let scoreRangeText = "\(scoreRange.lowerBound)...\(scoreRange.upperBound)"
    /// How many items one page of a list holds: 1 to 100 (the seed's page size bounds).
    public static let pageSizeRange = 1...100
    public static let maximumSourceIDLength = 200

    /// Validates a draft into an entry (timestamps 0; the ledger stamps them from the log).
    /// - Parameters:
    ///   - draft: the input.
    ///   - now: the current time in milliseconds, for the future limit.
    ///   - defaultOffsetMinutes: the UTC offset used when the draft has no time.
    ///   - bounds: which logged-at instants are accepted (user input is held closer to now than imports).
    ///   - newID: makes the id of an entry the draft does not name.
    /// - Returns: the entry to create.
    /// - Throws: ``MoodError`` naming the field and rule.
    public static func validate(
        _ draft: MoodDraft, now: Int64, defaultOffsetMinutes: Int = 0,
        bounds: LoggedAtBounds = .userInput, newID: () -> EntryID
    ) throws(MoodError) -> MoodEntry {
        if draft.valence != nil, draft.score != nil {
            throw .invalid("valence", "give either a valence or a score, not both")
        }
        var valence: Double?
        if let raw = draft.valence { valence = try checkValence(raw) }
        if let score = draft.score { valence = Valence.from(score: try checkScore(score)) }
        var labels = try words(draft.labels, as: MoodLabel.self, limit: maximumLabels)
        let associations = try words(draft.associations, as: MoodAssociation.self, limit: maximumAssociations)
        guard valence != nil || !labels.isEmpty else {
            throw .invalid("valence", "an entry needs a valence, a score or at least one label")
        }
        let notes = try checkNotes(draft.notes)
        if let score = draft.score, labels.isEmpty, draft.suggestLabels {
            labels = Suggestions.labels(forScore: score, notes: notes)
        }
        let loggedAt = try checkLoggedAt(
            draft.loggedAt
                ?? LoggedAt(
                    milliseconds: now,
                    utcOffsetMinutes: defaultOffsetMinutes), now: now,
            bounds: bounds)
        if let sourceID = draft.sourceID {
            guard !sourceID.isEmpty, sourceID.count <= maximumSourceIDLength else {
                throw .invalid("source_id", "must be 1 to \(maximumSourceIDLength) characters")
            }
        }
        return MoodEntry(
            id: draft.id ?? newID(), loggedAt: loggedAt, kind: draft.kind, valence: valence,
            enteredScore: draft.score, labels: labels, associations: associations,
            tags: try checkTags(draft.tags), notes: notes, source: draft.source,
            sourceID: draft.sourceID)
    }

    /// Validates changes against the current entry and keeps only what really changes.
    /// - Returns: the update event body; empty when nothing would change.
    /// - Throws: ``MoodError`` (`read_only` for HealthKit entries, `invalid_input` for broken rules).
    public static func update(
        _ entry: MoodEntry, with changes: MoodChanges, now: Int64,
        bounds: LoggedAtBounds = .userInput
    ) throws(MoodError) -> MoodUpdate {
        try checkEditable(entry)
        if changes.valence != nil, changes.score != nil {
            throw .invalid("valence", "give either a valence or a score, not both")
        }
        var update = MoodUpdate()
        if let score = changes.score {
            let valence = Valence.from(score: try checkScore(score))
            // Compared on the grid: a valence reads back as its shortest decimal, not as the grid's binary value.
            if entry.valenceGrid != Valence.fixed(valence) { update.valence = .set(valence) }
            if entry.enteredScore != score { update.enteredScore = .set(score) }
        } else if let raw = changes.valence {
            let valence = try checkValence(raw)
            let changed = entry.valenceGrid != Valence.fixed(valence)
            if changed { update.valence = .set(valence) }
            if entry.enteredScore != nil, changed { update.enteredScore = .clear }
        }
        switch changes.notes {
        case .set(let text)?:
            let notes = try checkNotes(text)
            if notes != entry.notes { update.notes = notes.map { .set($0) } ?? .clear }
        case .clear?:
            if entry.notes != nil { update.notes = .clear }
        case nil:
            break
        }
        if let loggedAt = changes.loggedAt, loggedAt != entry.loggedAt {
            update.loggedAt = try checkLoggedAt(loggedAt, now: now, bounds: bounds)
        }
        if let kind = changes.kind, kind != entry.kind { update.kind = kind }
        return update
    }

    /// Applies a word-list edit; returns `nil` when the list would not change.
    /// - Throws: ``MoodError`` for a bad word or too many words.
    public static func edit<D: VocabularyDomain>(
        _ current: [VocabularyWord<D>], _ edit: WordEdit,
        limit: Int
    ) throws(MoodError) -> [VocabularyWord<D>]? {
        let result: [VocabularyWord<D>]
        switch edit {
        case .set(let words): result = try self.words(words, as: VocabularyWord<D>.self, limit: limit)
        case .add(let word):
            let parsed = try VocabularyWord<D>.parse(word)
            result = current.contains(parsed) ? current : current + [parsed]
            guard result.count <= limit else { throw .invalid(D.fieldName, "at most \(limit) allowed") }
        case .remove(let word):
            let parsed = try VocabularyWord<D>.parse(word)
            result = current.filter { $0 != parsed }
        }
        return result == current ? nil : result
    }

    /// Applies a tag edit; returns `nil` when the tags would not change.
    public static func editTags(_ current: [String], _ edit: WordEdit) throws(MoodError) -> [String]? {
        let result: [String]
        switch edit {
        case .set(let tags): result = try checkTags(tags)
        case .add(let tag): result = try checkTags(current + [tag])
        case .remove(let tag):
            let removed = try checkTags([tag])[0]
            result = current.filter { $0 != removed }
        }
        return result == current ? nil : result
    }

    /// Refuses edits of read-only (HealthKit) entries.
    public static func checkEditable(_ entry: MoodEntry) throws(MoodError) {
        if entry.isReadOnly {
            throw MoodError(
                code: .readOnly, field: "source",
                rule: "entries from healthkit are read-only; change them in the Health app")
        }
    }

    package static func checkValence(_ valence: Double) throws(MoodError) -> Double {
        guard valence.isFinite else { throw .invalid("valence", "must be a finite number") }
        guard valence >= -1, valence <= 1 else { throw .invalid("valence", "must be within -1...1") }
        return Valence.quantized(valence)
    }

    static func checkScore(_ score: Int) throws(MoodError) -> Int {
        guard scoreRange.contains(score) else { throw .invalid("score", "must be an integer \(scoreRangeText)") }
        return score
    }

    static func checkNotes(_ notes: String?) throws(MoodError) -> String? {
        // Counted in Unicode code points as given (JSON Schema's maxLength), then trimmed.
        if let notes, notes.unicodeScalars.count > maximumNotesLength {
            throw .invalid(
                "notes", "must be at most \(maximumNotesLength) characters (got \(notes.unicodeScalars.count))")
        }
        guard let trimmed = notes?.trimmingWhitespace(), !trimmed.isEmpty else { return nil }
        return trimmed
    }

    static func checkLoggedAt(
        _ loggedAt: LoggedAt, now: Int64, bounds: LoggedAtBounds = .userInput
    ) throws(MoodError)
        -> LoggedAt
    {
        guard abs(loggedAt.utcOffsetMinutes) <= 14 * 60 else {
            throw .invalid("logged_at", "UTC offset must be within ±14:00")
        }
        if bounds == .storage {
            // Local years 1901…2198 with offsets within ±14:00 keep every instant inside what a ledger stores.
            guard EventCodec.loggedAtRange.contains(loggedAt.milliseconds),
                (1901...2198).contains(loggedAt.localDate.components.year)
            else {
                throw .invalid("logged_at", "must be in the years 1901 to 2198")
            }
            return loggedAt
        }
        guard loggedAt.milliseconds >= earliestMilliseconds else {
            throw .invalid("logged_at", "must not be before 2000-01-01")
        }
        guard loggedAt.milliseconds <= now + futureAllowanceMilliseconds else {
            throw .invalid("logged_at", "must not be more than 24 hours in the future")
        }
        return loggedAt
    }

    static func checkTags(_ tags: [String]) throws(MoodError) -> [String] {
        guard tags.count <= maximumTags else { throw .invalid("tags", "at most \(maximumTags) tags allowed") }
        var result: [String] = []
        for tag in tags {
            let trimmed = WordNormalizer.nfc(tag.trimmingWhitespace())
            guard !trimmed.isEmpty else { throw .invalid("tags", "a tag must not be empty") }
            guard tag.unicodeScalars.count <= maximumTagLength else {
                throw .invalid("tags", "a tag must be at most \(maximumTagLength) characters")
            }
            if !result.contains(trimmed) { result.append(trimmed) }
        }
        guard result.count <= maximumTags else { throw .invalid("tags", "at most \(maximumTags) tags allowed") }
        return result
    }

    static func words<D: VocabularyDomain>(
        _ inputs: [String], as: VocabularyWord<D>.Type, limit: Int
    ) throws(MoodError)
        -> [VocabularyWord<D>]
    {
        // The list as given is counted (as JSON Schema's maxItems counts it), before aliases and repeats fold.
        guard inputs.count <= limit else { throw .invalid(D.fieldName, "at most \(limit) allowed") }
        var result: [VocabularyWord<D>] = []
        for input in inputs {
            let word = try VocabularyWord<D>.parse(input)
            if !result.contains(word) { result.append(word) }
        }
        guard result.count <= limit else { throw .invalid(D.fieldName, "at most \(limit) allowed") }
        return result
    }
}

/// Which instants `logged_at` may hold.
public enum LoggedAtBounds: Sendable, Equatable {
    /// A person logging: 2000-01-01 up to 24 hours from now (a typo guard). The default.
    case userInput
    /// A backend storing what its clients send (the seed API sets no bounds): the whole range a ledger can store,
    /// 1900-01-01 up to 2200-01-01.
    case storage
}

extension String {
    /// The string without leading and trailing whitespace and newlines.
    package func trimmingWhitespace() -> String {
        // Most text has no space at either end: one look at the first and last bytes (a byte below 0x80 that is
        // not white space is a whole character that is not white space).
        // The ASCII white space characters are tab, line feed, vertical tab, form feed, carriage return and space.
        func isASCIISpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
        if let first = utf8.first, let last = utf8.last, first < 0x80, last < 0x80, !isASCIISpace(first),
            !isASCIISpace(last)
        {
            return self
        }
        var view = Substring(self)
        while let first = view.first, first.isWhitespace { view.removeFirst() }
        while let last = view.last, last.isWhitespace { view.removeLast() }
        return String(view)
    }
}
