import EventLog

extension Ledger {
    /// Logs a mood entry.
    ///
    /// Validates first; nothing is appended on failure. A known (source, source id) returns the existing entry
    /// and appends nothing. A second daily mood for a local day becomes an update of the first.
    /// - Parameter draft: the input.
    /// - Returns: the entry and whether it was created or anything appended.
    /// - Throws: ``MoodError`` (`invalid_input`, `read_only`) or `EventLogError`.
    @discardableResult
    public func log(_ draft: MoodDraft) throws -> LogOutcome {
        try perform { state, now in
            try Self.decide(draft, in: state.entries, now: now, options: options)
        }
    }

    /// Changes an entry's scalar fields (valence or score, notes, time, kind).
    /// - Returns: the entry after the change (unchanged, with nothing appended, if nothing differs).
    /// - Throws: ``MoodError`` `not_found`, `read_only`, `invalid_input`; `EventLogError`.
    @discardableResult
    public func update(_ id: EntryID, _ changes: MoodChanges) throws -> MoodEntry {
        try perform { state, now in
            let entry = try Self.existing(id, in: state)
            let update = try MoodRules.update(entry, with: changes, now: now, bounds: options.loggedAtBounds)
            return (update.isEmpty ? [] : [.updated(id, update)], id, false)
        }.entry!
    }

    /// Edits an entry's labels.
    /// - Throws: as ``update(_:_:)-5k8qp``.
    @discardableResult
    public func editLabels(_ id: EntryID, _ edit: WordEdit) throws -> MoodEntry {
        try editWords(id) { entry in
            try MoodRules.edit(entry.labels, edit, limit: MoodRules.maximumLabels).map { .labelsEdited(id, $0) }
        }
    }

    /// Edits an entry's associations.
    /// - Throws: as ``update(_:_:)-5k8qp``.
    @discardableResult
    public func editAssociations(_ id: EntryID, _ edit: WordEdit) throws -> MoodEntry {
        try editWords(id) { entry in
            try MoodRules.edit(entry.associations, edit, limit: MoodRules.maximumAssociations)
                .map { .associationsEdited(id, $0) }
        }
    }

    /// Edits an entry's tags.
    /// - Throws: as ``update(_:_:)-5k8qp``.
    @discardableResult
    public func editTags(_ id: EntryID, _ edit: WordEdit) throws -> MoodEntry {
        try editWords(id) { entry in try MoodRules.editTags(entry.tags, edit).map { .tagsEdited(id, $0) } }
    }

    /// The shared path of word edits: the entry must exist and be editable; `nil` from `event` means no change.
    private func editWords(_ id: EntryID, _ event: (MoodEntry) throws -> MoodEvent?) throws -> MoodEntry {
        try perform { state, _ in
            let entry = try Self.editable(id, in: state)
            return (try event(entry).map { [$0] } ?? [], id, false)
        }.entry!
    }

    /// Deletes an entry.
    /// - Throws: ``MoodError`` `not_found` or `read_only`; `EventLogError`.
    public func delete(_ id: EntryID) throws {
        _ = try commit { state, _ in
            _ = try Self.editable(id, in: state)
            return ([.deleted(id)], id, false)
        }
    }

    /// Records that a send of an entry to a destination began.
    /// - Parameters:
    ///   - id: the entry.
    ///   - destination: where it is being sent.
    ///   - operation: what is sent; default: the outbox's pending operation.
    ///   - key: the request's `Idempotency-Key`, if it has one.
    /// - Throws: ``MoodError`` `not_found` when the outbox has nothing for the pair; `EventLogError`.
    package func recordSyncAttempt(
        _ id: EntryID, to destination: SyncDestination, operation: SyncOperation? = nil,
        key: String = ""
    ) throws {
        _ = try commit { state, _ in
            guard let pending = state.pendingOperation(id, destination) ?? operation else {
                throw MoodError(code: .notFound, field: "entry_id", rule: "nothing pending for \(destination.rawValue)")
            }
            return ([.syncAttempted(id, destination, operation ?? pending, key: key)], id, false)
        }
    }

    /// Records that a destination acknowledged an entry, with its id there.
    /// - Throws: ``MoodError`` `invalid_input` for an empty remote id; `EventLogError`.
    package func recordSyncSuccess(
        _ id: EntryID, to destination: SyncDestination, remoteID: String,
        revision: UInt64 = 0
    ) throws {
        _ = try commit { _, _ in
            guard !remoteID.isEmpty else { throw MoodError.invalid("remote_id", "must not be empty") }
            return ([.syncSucceeded(id, destination, remoteID: remoteID, revision: revision)], id, false)
        }
    }

    /// Records that a send failed.
    /// - Throws: `EventLogError`.
    package func recordSyncFailure(_ id: EntryID, to destination: SyncDestination, _ failure: SyncFailure) throws {
        _ = try commit { _, _ in ([.syncFailed(id, destination, failure)], id, false) }
    }

    /// Releases every parked item for `destination` (`moodledger sync --retry-parked`): each is due at once, and its
    /// attempts and failure streak start again, so the next failure is an ordinary retryable one. One batch of
    /// `sync.released` events; nothing is appended when nothing is parked.
    /// - Returns: the entries released, by id.
    /// - Throws: `EventLogError`.
    @discardableResult
    public func releaseParked(for destination: SyncDestination = .backend) throws -> [EntryID] {
        var released: [EntryID] = []
        _ = try commit { state, _ in
            released = state.outbox.records.compactMap { key, record in
                key.destination == destination && record.parked && record.operation != nil ? key.entryID : nil
            }.sorted()
            return (released.map { .syncReleased($0, destination) }, .none, false)
        }
        return released
    }

    /// Applies a change pulled from a destination (it is not sent back there).
    /// - Throws: ``MoodError`` `invalid_input` for an out-of-range valence; `EventLogError`.
    package func applyRemote(_ change: RemoteChange) throws {
        _ = try commit { _, _ in
            var change = change
            if var entry = change.entry {
                if let valence = entry.valence { entry.valence = try MoodRules.checkValence(valence) }
                change.entry = entry
            }
            return ([.remoteApplied(change)], change.entryID, false)
        }
    }

    // MARK: - The one write path

    /// Every command's write: under the writer's lock, decides against an undamaged current state (nothing is
    /// appended when `decide` throws), appends the events followed by the records `attach` returns as one batch
    /// (one write, one sync: all of it survives a crash or none), and folds them in.
    /// - Returns: what the command did, and the entry as it was just before (for a command that removed it).
    /// - Throws: what `decide` throws; `EventLogError` (`notWritable`, `io`).
    package func commit(
        attaching attach: ([MoodEvent], EntryID) -> [Attachment] = { _, _ in [] },
        _ decide: (LedgerState, Int64) throws -> (events: [MoodEvent], entryID: EntryID, created: Bool)
    ) throws -> (result: CommandResult, before: MoodEntry?) {
        try writing { core in
            guard !options.readOnly else { throw EventLogError(.notWritable, "the ledger was opened read-only") }
            let now = options.clock()
            let (events, id, created) = try deciding(&core) { try decide($0, now) }
            if options.vocabulary == .apple { try Self.checkAppleWords(events, in: core.state) }
            let attached = attach(events, id)
            // The folds read a kept anchor's record as an event: it is written as the event, never attached.
            precondition(!attached.contains { $0.kind == .healthKitAnchor }, "a HealthKit anchor is an event")
            let attachments = attached.map(\.record)
            let before = core.state.entries[id]
            try append(events, attachments: attachments, now: now, to: &core)
            let result = CommandResult(
                entry: core.state.entries[id], created: created, appendedEvents: events.count,
                lastSeq: core.state.seq)
            return (result, before)
        }
    }

    /// ``commit(attaching:_:)`` for the commands that answer with the entry they created or changed, which exists
    /// after them by construction (`decide` names a created, found or edited entry).
    private func perform(_ decide: (LedgerState, Int64) throws -> ([MoodEvent], EntryID, Bool)) throws -> LogOutcome {
        let result = try commit { state, now in try decide(state, now) }.result
        precondition(result.entry != nil, "a command that creates or edits an entry left none")
        return result
    }

    /// What logging a draft appends: nothing for a known (source, source id) or id, an update of the day's daily
    /// mood, or a creation. A draft with a known id or source id is validated like a creation before it is found
    /// "already there": an invalid repeat is refused, never answered with the stored entry.
    /// - Parameter prepared: the draft already validated at `now` with no id drawn (`MoodRules.validate` with
    ///   `newID` giving `.none`), as an import's reading thread does; nil: validated here.
    static func decide(
        _ draft: MoodDraft, in entries: some DraftLookup, now: Int64, options: Options,
        validated prepared: Result<MoodEntry, MoodError>? = nil
    ) throws
        -> ([MoodEvent], EntryID, Bool)
    {
        func validated(newID: () -> EntryID) throws(MoodError) -> MoodEntry {
            if let prepared {
                var entry = try prepared.get()
                if draft.id == nil { entry.id = newID() }
                return entry
            }
            return try MoodRules.validate(
                draft, now: now,
                defaultOffsetMinutes: options.zone?.offsetMinutes(atUTC: now) ?? options.utcOffsetMinutes,
                bounds: options.loggedAtBounds, newID: newID)
        }
        // A repeat is checked as a creation would be (no id is drawn for the check: ids stay as they were).
        if let sourceID = draft.sourceID, let existing = try entries.entry(source: draft.source, sourceID: sourceID) {
            _ = try validated { .none }
            return ([], existing.id, false)
        }
        if let id = draft.id, entries.contains(id) {
            _ = try validated { .none }
            return ([], id, false)
        }
        let defaultOffset = options.zone?.offsetMinutes(atUTC: now) ?? options.utcOffsetMinutes
        if draft.kind == .dailyMood {
            // A second daily mood for a local day merges into the first: what is given replaces, the rest is kept.
            let day = (draft.loggedAt ?? LoggedAt(milliseconds: now, utcOffsetMinutes: defaultOffset)).localDate
            if let existing = try entries.dailyMood(on: day) {
                return (try merge(draft, into: existing, now: now, bounds: options.loggedAtBounds), existing.id, false)
            }
        }
        let entry = try validated(newID: options.newID)
        return ([.created(entry)], entry.id, true)
    }

    /// Appends one command's events, then any `attachments` (safe-to-ignore records the folds skip), as one batch
    /// (one write, one sync: all of it survives a crash or none) and applies them; snapshots when due.
    func append(_ events: [MoodEvent], attachments: [PendingRecord] = [], now: Int64, to core: inout Core) throws {
        guard !events.isEmpty || !attachments.isEmpty else { return }
        let command = options.newID()
        let records =
            events.map { Self.record($0, command: command, nowMilliseconds: now) }
            + attachments.map { PendingRecord(type: $0.type, payload: $0.payload, recordedAt: now * 1000) }
        let seqs = try core.log.append(records)
        precondition(seqs.count == records.count, "the log numbered every record of the batch")
        fold(events, at: seqs, command: command, attachments: attachments, into: &core)
        // The state covers exactly the log: every record folded (attachments skipped), nothing beyond.
        assert(core.state.seq == seqs.upperBound, "the state folded the whole batch")
        assert(core.state.seq == core.log.lastSeq, "the state covers exactly the log")
        if options.snapshotInterval > 0, core.sinceSnapshot >= options.snapshotInterval {
            _ = try? writeSnapshot(&core)  // a cache: a failed snapshot never fails the command
        }
    }

    /// Appends a long run of events as one batch without holding them, or their encodings, all at once: they are
    /// encoded and written as they come (``EventLog/appendStream(chunkBytes:_:)``), then folded in order. `events`
    /// is iterated twice and must give the same events both times.
    func appendStreaming<S: Sequence<MoodEvent>>(_ events: S, now: Int64, to core: inout Core) throws {
        let command = options.newID()
        guard
            let seqs = try core.log.appendStream({ emit, _ in
                for event in events { _ = try emit(Self.record(event, command: command, nowMilliseconds: now)) }
            })
        else { return }
        fold(events, at: seqs, command: command, into: &core)
    }

    /// An event as the record that carries it, recorded at `nowMilliseconds` (the ledger's clock), or at
    /// `recordedAtMicroseconds` (the log's unit) when that is not given.
    package static func record(
        _ event: MoodEvent, command: EntryID, nowMilliseconds: Int64? = nil, recordedAtMicroseconds: Int64 = 0
    ) -> PendingRecord {
        PendingRecord(
            type: event.type.rawValue, payload: EventCodec.encode(event, commandID: command),
            recordedAt: nowMilliseconds.map { $0 * 1000 } ?? recordedAtMicroseconds)
    }

    /// Folds events just appended at `seqs` into the state; `attachments` safe-to-ignore records after them (the
    /// folds skip them, but for the kept projections that read one: a sync batch's carrier) end the batch.
    private func fold<S: Sequence<MoodEvent>>(
        _ events: S, at seqs: ClosedRange<UInt64>, command: EntryID,
        attachments: [PendingRecord] = [], into core: inout Core
    ) {
        let recordedAt = core.log.lastRecordedAt
        let foldAll = { (state: inout LedgerState) -> Int in
            var count = attachments.count
            for (seq, event) in zip(seqs, events) {
                state.apply(
                    RecordedEvent(seq: seq, recordedAt: recordedAt, commandID: command, event: event), analytics: true)
                count += 1
            }
            for attachment in attachments where KeptProjections.reads(attachment: attachment.type) {
                attachment.payload.withUnsafeBytes { state.attached(type: attachment.type, payload: $0) }
            }
            if !attachments.isEmpty { state.skip(seq: seqs.upperBound, recordedAt: recordedAt) }
            state.endBatch()
            return count
        }
        let count: Int
        if seqs.count <= Self.foldInPlaceLimit {
            // In place, in one step: readers see the commit whole, and nothing is copied while none holds a copy.
            count = core.published.mutate(foldAll)
        } else {
            // A long batch (an import) is folded into a copy, then published: readers never wait for its fold.
            var state = core.state
            count = foldAll(&state)
            core.state = state
        }
        replaceIfDamaged(&core)  // the fold read a damaged snapshot piece: the log, which holds these events, decides
        core.sinceSnapshot += count
    }

    /// The longest batch folded in place under the published state's lock; a longer one is folded into a copy.
    package static let foldInPlaceLimit = 4_096

    /// Refuses the first word outside Apple's vocabulary that `events` would add to an entry (``WordPolicy/apple``),
    /// naming it and Apple's closest word. A word the entry already has (from an import, say) stays.
    static func checkAppleWords(_ events: [MoodEvent], in state: LedgerState) throws(MoodError) {
        func check<D>(_ words: [VocabularyWord<D>], had: [VocabularyWord<D>] = []) throws(MoodError) {
            guard let custom = words.first(where: { $0.isCustom && !had.contains($0) }) else { return }
            let count = D.canonicalNames.count
            throw MoodError.invalid(
                D.fieldName,
                "\"\(custom.name)\" is not one of Apple's \(count) \(D.fieldName); the closest is \"\(custom.closestApple.wireName)\""
            )
        }
        for event in events {
            switch event {
            case .created(let entry):
                try check(entry.labels)
                try check(entry.associations)
            case .labelsEdited(let id, let labels): try check(labels, had: state.entries[id]?.labels ?? [])
            case .associationsEdited(let id, let associations):
                try check(associations, had: state.entries[id]?.associations ?? [])
            default: break
            }
        }
    }

    static func existing(_ id: EntryID, in state: LedgerState) throws(MoodError) -> MoodEntry {
        guard let entry = state.entries[id] else {
            throw MoodError(code: .notFound, field: "entry_id", rule: "no entry \(id)")
        }
        return entry
    }

    static func editable(_ id: EntryID, in state: LedgerState) throws(MoodError) -> MoodEntry {
        let entry = try existing(id, in: state)
        try MoodRules.checkEditable(entry)
        return entry
    }

    /// A second daily mood for a day (`Specs/mood-model.md`, *Daily moods merge*): each field the draft gives
    /// (valence or score, notes, time, labels, associations, tags) replaces the stored one; fields not given are
    /// kept. One `mood.updated` for the scalar fields and one edit per word list, only for what really changes.
    static func merge(
        _ draft: MoodDraft, into existing: MoodEntry, now: Int64, bounds: LoggedAtBounds
    ) throws
        -> [MoodEvent]
    {
        try MoodRules.checkEditable(existing)  // a read-only day's mood is refused before the draft is looked at
        if draft.valence != nil, draft.score != nil {
            throw MoodError.invalid("valence", "give either a valence or a score, not both")
        }
        // What the draft gives replaces; empty word lists and blank notes are "not given".
        var replacement = MoodReplacement()
        replacement.changes = MoodChanges(valence: draft.valence, score: draft.score, loggedAt: draft.loggedAt)
        if let notes = draft.notes, !notes.trimmingWhitespace().isEmpty { replacement.changes.notes = .set(notes) }
        var labels = draft.labels
        if labels.isEmpty, draft.suggestLabels, let score = draft.score {
            labels = Suggestions.labels(forScore: score, notes: draft.notes).map(\.name)
        }
        replacement.labels = labels.isEmpty ? nil : labels
        replacement.associations = draft.associations.isEmpty ? nil : draft.associations
        replacement.tags = draft.tags.isEmpty ? nil : draft.tags
        return try events(replacing: existing, with: replacement, now: now, bounds: bounds)
    }
}

extension LedgerState {
    /// The operation the outbox holds for a pair (explicit, or the implicit create), if any.
    func pendingOperation(_ id: EntryID, _ destination: SyncDestination) -> SyncOperation? {
        if let record = outbox.record(OutboxKey(entryID: id, destination: destination)) { return record.operation }
        guard let entry = entries[id], OutboxState.isEligible(entry.source, for: destination) else { return nil }
        return .create
    }
}
