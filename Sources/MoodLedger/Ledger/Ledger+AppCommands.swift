import EventLog

/// Which side of a conflict to keep (``Ledger/resolveConflict(_:take:field:)-203dn``).
public typealias ConflictSide = ConflictChoice

extension MoodReplacement {
    /// Everything an edit form holds, as one replacement: the lists and the notes given become the entry's (`nil`
    /// notes clear them); a valence or a score replaces the mood (neither: the mood is kept); `loggedAt` and `kind`
    /// replace when given.
    /// - Parameters:
    ///   - valence: the new valence −1…+1 (clears a typed score), or `nil`.
    ///   - score: the new 1–10 score (sets the valence too), or `nil`.
    ///   - labels: the labels the entry will have.
    ///   - associations: the associations it will have.
    ///   - tags: the tags it will have.
    ///   - notes: its notes; `nil` or empty: none.
    ///   - loggedAt: a new time, or `nil` to keep it.
    ///   - kind: a new kind, or `nil` to keep it.
    public init(
        valence: Double? = nil, score: Int? = nil, labels: [String], associations: [String], tags: [String],
        notes: String?, loggedAt: LoggedAt? = nil, kind: MoodKind? = nil
    ) {
        self.init()
        changes = MoodChanges(
            valence: valence, score: score, notes: notes.map { $0.isEmpty ? .clear : .set($0) } ?? .clear,
            loggedAt: loggedAt, kind: kind)
        self.labels = labels
        self.associations = associations
        self.tags = tags
    }
}

extension Ledger {
    /// Replaces what an edit form holds in one commit: the scalar fields, labels, associations and tags together
    /// (one batch: all of it or, should anything be invalid, none; one sync to a backend).
    /// - Parameters:
    ///   - id: the entry.
    ///   - replacement: what replaces; its `nil` fields are kept.
    /// - Returns: the result, with the entry as it now is (nothing appended when nothing differs).
    /// - Throws: ``MoodError`` `not_found`, `read_only` or `invalid_input` (the field and the rule); `EventLogError`.
    @discardableResult
    public func replace(_ id: EntryID, with replacement: MoodReplacement) throws -> CommandResult {
        try commit { state, now in
            (
                try Self.events(replacing: id, with: replacement, in: state, now: now, bounds: options.loggedAtBounds),
                id, false
            )
        }.result
    }

    /// Logs several drafts as one commit: each is decided against the ones before it (a second daily mood for a day
    /// merges into the first; a repeated source id names the entry already logged), and all are appended in one
    /// batch — every one or, should any be invalid, none.
    /// - Parameter drafts: the drafts, in order.
    /// - Returns: each draft's entry as it now is, in the drafts' order.
    /// - Throws: ``MoodError`` naming the field and rule (and nothing is appended); `EventLogError`.
    @discardableResult
    public func log(contentsOf drafts: [MoodDraft]) throws -> [MoodEntry] {
        var ids: [EntryID] = []
        _ = try commit { state, now in
            ids = []
            var scratch = state
            var events: [MoodEvent] = []
            for draft in drafts {
                let (decided, id, _) = try Self.decide(draft, in: scratch.entries, now: now, options: options)
                ids.append(id)
                for event in decided {
                    scratch.apply(
                        RecordedEvent(seq: scratch.seq + 1, recordedAt: now * 1000, commandID: .none, event: event))
                }
                events += decided
            }
            return (events, ids.last ?? .none, !events.isEmpty)
        }.result
        return read { state in ids.compactMap { state.entries[$0] } }
    }

    /// Closes an entry's open conflicts (one field's with `field`): `.here` keeps the value here; `.server` gives
    /// each field the server's value with ordinary edit events, which then sync. One commit.
    /// - Parameters:
    ///   - id: the entry.
    ///   - side: which side's value stays.
    ///   - field: only this field's conflict; default: every open one of the entry.
    /// - Returns: the entry as it now is (`nil` when taking the server's deletion).
    /// - Throws: ``MoodError`` `not_found` when the entry has no open conflict (on that field), `invalid_input` for
    ///   taking the server's version of an entry deleted here, `read_only`; `EventLogError`.
    @discardableResult
    public func resolveConflict(_ id: EntryID, take side: ConflictSide, field: MergeFields? = nil) throws -> MoodEntry?
    {
        try resolvingConflict(id, take: side, field: field).entry
    }

    /// ``resolveConflict(_:take:field:)-203dn``, answering the fields it closed as well (what the CLI reports).
    package func resolvingConflict(
        _ id: EntryID, take side: ConflictSide, field: MergeFields?
    ) throws -> (entry: MoodEntry?, fields: MergeFields) {
        let open = try conflicts().filter { $0.entryID == id && (field == nil || $0.field == field) }
        guard !open.isEmpty else {
            throw MoodError(
                code: .notFound, field: "entry_id",
                rule: "entry \(id) has no open conflict" + (field.map { " on \($0.names.joined())" } ?? ""))
        }
        var fields: MergeFields = []
        for conflict in open { fields.insert(conflict.field) }
        let entry = try commit { state, _ in
            var events: [MoodEvent] = []
            if side == .server { events = try Self.edits(taking: open, for: id, in: state) }
            events.append(.conflictResolved(id, fields, side))
            return (events, id, false)
        }.result.entry
        return (entry, fields)
    }

    /// The ordinary edits that give each conflicting field the server's value (a deletion only, if the server
    /// deleted it).
    static func edits(taking conflicts: [OpenConflict], for id: EntryID, in state: LedgerState) throws -> [MoodEvent] {
        var events: [MoodEvent] = []
        let current = state.entries[id]
        for conflict in conflicts {
            if conflict.field == .existence {
                guard conflict.server == nil, current != nil else {
                    throw MoodError.invalid(
                        "entry_id",
                        "entry \(id) is deleted here; the server's version is in its history: log it again to keep it")
                }
                return [.deleted(id)]
            }
            guard let entry = current else {
                throw MoodError(code: .notFound, field: "entry_id", rule: "entry \(id) is deleted here")
            }
            try MoodRules.checkEditable(entry)
            guard let server = conflict.server else { continue }
            var update = MoodUpdate()
            switch conflict.field {
            case .mood:
                if server.valence != entry.valence { update.valence = server.valence.map { .set($0) } ?? .clear }
                if server.enteredScore != entry.enteredScore {
                    update.enteredScore = server.enteredScore.map { .set($0) } ?? .clear
                }
            case .loggedAt: if server.loggedAt != entry.loggedAt { update.loggedAt = server.loggedAt }
            case .kind: if server.kind != entry.kind { update.kind = server.kind }
            case .notes: if server.notes != entry.notes { update.notes = server.notes.map { .set($0) } ?? .clear }
            case .labels: if server.labels != entry.labels { events.append(.labelsEdited(id, server.labels)) }
            case .associations:
                if server.associations != entry.associations {
                    events.append(.associationsEdited(id, server.associations))
                }
            case .tags: if server.tags != entry.tags { events.append(.tagsEdited(id, server.tags)) }
            default: break
            }
            if !update.isEmpty { events.append(.updated(id, update)) }
        }
        return events
    }
}

extension MoodReplacement: Codable {
    private enum Key: String, CodingKey {
        case labels, associations, tags
    }

    /// Decodes a PUT body: the scalar fields as ``MoodChanges`` reads them, and the lists given.
    public init(from decoder: any Decoder) throws {
        self.init()
        changes = try MoodChanges(from: decoder)
        let c = try decoder.container(keyedBy: Key.self)
        labels = try c.decodeIfPresent([String].self, forKey: .labels)
        associations = try c.decodeIfPresent([String].self, forKey: .associations)
        tags = try c.decodeIfPresent([String].self, forKey: .tags)
    }

    /// Encodes the changes and the lists given, in one object.
    public func encode(to encoder: any Encoder) throws {
        try changes.encode(to: encoder)
        var c = encoder.container(keyedBy: Key.self)
        try c.encodeIfPresent(labels, forKey: .labels)
        try c.encodeIfPresent(associations, forKey: .associations)
        try c.encodeIfPresent(tags, forKey: .tags)
    }
}
