import EventLog

/// A replacement of an entry's fields, as an API's PUT carries it: what is given replaces, what is `nil` is kept.
public struct MoodReplacement: Sendable, Equatable {
    /// Scalar fields (valence or score, notes, time, kind).
    public var changes = MoodChanges()
    /// The new labels, if given.
    public var labels: [String]?
    /// The new associations, if given.
    public var associations: [String]?
    /// The new tags, if given.
    public var tags: [String]?

    /// Creates an empty replacement (it changes nothing).
    public init() {}

    /// Everything a draft carries, as a replacement (a re-imported row's values).
    public init(_ draft: MoodDraft) {
        changes = MoodChanges(
            valence: draft.valence, score: draft.score,
            notes: draft.notes.map { $0.isEmpty ? .clear : .set($0) } ?? .clear,
            loggedAt: draft.loggedAt, kind: draft.kind)
        labels = draft.labels
        associations = draft.associations
        tags = draft.tags
    }
}

/// What a command did: the entry it concerned as it now is, whether it created it, and what it appended.
public struct CommandResult: Sendable, Equatable {
    /// The entry after the command: always there after a log, an update or a replacement (read it as
    /// `result.entry.id`, or `result.entry!`); `nil` only after a deletion.
    public var entry: MoodEntry!
    /// Whether it created the entry (`false`: an existing one was returned or changed).
    public var created: Bool
    /// How many events it appended (attachments not counted); 0 when nothing changed.
    public var appendedEvents: Int
    /// The ledger's last sequence number after the command: the server revision of the change.
    public var lastSeq: UInt64

    /// Whether anything was appended.
    public var appended: Bool { appendedEvents > 0 }

    /// A result (a store other than the ledger's log makes one for its commands).
    package init(entry: MoodEntry?, created: Bool, appendedEvents: Int, lastSeq: UInt64) {
        self.entry = entry
        self.created = created
        self.appendedEvents = appendedEvents
        self.lastSeq = lastSeq
    }
}

extension Ledger {
    /// The events ``log(_:)-pmrs`` would append for `draft` against `state`: none for a known (source, source id) or id,
    /// a merge into the day's daily mood, or a creation.
    /// - Returns: the events, the entry concerned, and whether it is created.
    /// - Throws: ``MoodError`` naming the field and rule.
    package static func events(
        logging draft: MoodDraft, in state: LedgerState, now: Int64,
        options: Options
    ) throws -> (events: [MoodEvent], entryID: EntryID, created: Bool) {
        let (events, id, created) = try decide(draft, in: state.entries, now: now, options: options)
        return (events, id, created)
    }

    /// The events that apply `replacement` to entry `id`: at most one update and one edit per word list, none
    /// when nothing changes.
    /// - Throws: ``MoodError`` `not_found`, `read_only` or `invalid_input`.
    package static func events(
        replacing id: EntryID, with replacement: MoodReplacement, in state: LedgerState,
        now: Int64, bounds: LoggedAtBounds = .userInput
    ) throws -> [MoodEvent] {
        try events(replacing: try existing(id, in: state), with: replacement, now: now, bounds: bounds)
    }

    /// The events that apply `replacement` to `entry`: one `mood.updated` for the scalar fields and one edit per word
    /// list given, each only if something really changes.
    /// - Throws: ``MoodError`` `read_only` (HealthKit's entries) or `invalid_input`.
    static func events(
        replacing entry: MoodEntry, with replacement: MoodReplacement, now: Int64, bounds: LoggedAtBounds
    ) throws -> [MoodEvent] {
        try MoodRules.checkEditable(entry)
        let id = entry.id
        let update = try MoodRules.update(entry, with: replacement.changes, now: now, bounds: bounds)
        var events: [MoodEvent] = update.isEmpty ? [] : [.updated(id, update)]
        if let labels = replacement.labels,
            let edited = try MoodRules.edit(entry.labels, .set(labels), limit: MoodRules.maximumLabels)
        {
            events.append(.labelsEdited(id, edited))
        }
        if let associations = replacement.associations,
            let edited = try MoodRules.edit(
                entry.associations, .set(associations), limit: MoodRules.maximumAssociations)
        {
            events.append(.associationsEdited(id, edited))
        }
        if let tags = replacement.tags, let edited = try MoodRules.editTags(entry.tags, .set(tags)) {
            events.append(.tagsEdited(id, edited))
        }
        return events
    }

    /// The events that delete entry `id`.
    /// - Throws: ``MoodError`` `not_found` or `read_only`.
    package static func events(deleting id: EntryID, in state: LedgerState) throws -> [MoodEvent] {
        _ = try editable(id, in: state)
        return [.deleted(id)]
    }

    /// Runs `decide` against the current state, then appends its events followed by the ``Attachment``s `attach`
    /// returns (which the folds skip) as one batch: one write, one sync, all or nothing across a crash. Servers use
    /// it to store a request's idempotency key with the change it made.
    ///
    /// `decide` and `attach` run under the ledger's lock: they must not call into this ledger (`Specs/ledger.md`,
    /// *Reentrancy*); a debug build stops the process if they do.
    ///
    /// - Parameters:
    ///   - attach: given the events and the entry concerned, what to store with them (may be empty).
    ///   - decide: the command: the events to append against the state at the current time (ms), and the entry.
    /// - Returns: what the command did, with the ledger's last seq after it.
    /// - Throws: what `decide` throws (nothing appended), `EventLogError`.
    package func execute(
        attaching attach: ([MoodEvent], EntryID) -> [Attachment] = { _, _ in [] },
        _ decide: (LedgerState, Int64) throws -> (events: [MoodEvent], entryID: EntryID, created: Bool)
    )
        throws -> CommandResult
    {
        try commit(attaching: attach, decide).result
    }

    /// Each batch through `last` that holds an attachment of `kind`: the batch's seqs and the attachment's payload.
    /// - Throws: `EventLogError` for damage met while reading.
    package func batchAttachments(
        _ kind: Attachment.Kind, through last: UInt64
    ) throws -> [(seqs: ClosedRange<UInt64>, payload: [UInt8])] {
        var found: [(seqs: ClosedRange<UInt64>, payload: [UInt8])] = []
        var first: UInt64?
        var payload: [UInt8]?
        try eventLog.forEach(from: 1, through: last) { view in
            if first == nil { first = view.seq }
            if view.type == kind.recordType { payload = Array(view.payload) }
            if !view.continuesBatch {
                if let payload, let start = first { found.append((start...view.lastSeq, payload)) }
                first = nil
                payload = nil
            }
            return true
        }
        return found
    }
}
