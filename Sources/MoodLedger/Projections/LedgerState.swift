/// The projections together, as of one sequence number: what queries read, live or time-travelled.
public struct LedgerState: Sendable {
    /// Current entries and their indexes.
    public package(set) var entries = EntriesState()
    /// What still has to reach each destination.
    public package(set) var outbox = OutboxState()
    /// Per-day analytics.
    public package(set) var analytics = AnalyticsState()
    /// The record index and the projections kept whole, which read only the records (``RecordFolds``).
    var recordFolds = RecordFolds()
    /// The erasures of every entry folded whose kept entries the record folds have not been handed yet
    /// (``handErasuresToRecordFolds()``): empty but inside a replay on two threads. Not part of the state's value.
    private var erasuresForRecordFolds: [(seq: UInt64, kept: Set<EntryID>)] = []
    /// Which entries each block of 1,024 records names: where an entry's records are.
    var records: RecordIndex { recordFolds.records }
    /// Each id's revision (what a server answers with): those of held entries are kept beside them (``RevisionsState``).
    private var revisionFold = RevisionsState()
    /// The projections kept whole: the open conflicts, a server's notes and keys (``KeptProjections/types``).
    package var kept: KeptProjections { recordFolds.kept }
    /// The last sequence number applied (0 = empty).
    public package(set) var seq: UInt64 = 0
    /// The recorded-at of the last event applied (µs), 0 if none.
    public package(set) var recordedAt: Int64 = 0
    /// Erasures whose redaction is not finished: entry → seq of its `entry.erased` (`Specs/erasure.md`).
    public package(set) var pendingErasures: [EntryID: UInt64] = [:]

    package init() {}

    /// The state a snapshot holds: entries, analytics and the outbox read through the image.
    init(image: SnapshotImage) {
        entries = EntriesState(image: image)
        analytics = AnalyticsState(image: image)
        outbox = OutboxState(image: image)
        recordFolds = RecordFolds(image: image)
        revisionFold = RevisionsState(image: image)
        pendingErasures = image.pendingErasures
        seq = image.seq
        recordedAt = image.recordedAt
    }

    /// Applies one recorded event to every projection — the whole fold — as a batch of its own (its entry's revision
    /// is its seq). The ledger's own paths fold a batch's records with ``apply(_:analytics:entryID:)`` and end it with
    /// ``endBatch()``.
    package mutating func apply(_ recorded: RecordedEvent) {
        apply(recorded, analytics: true)
        endBatch()
    }

    /// Applies one recorded event; with `analytics` false the analytics are left for ``finishBulkReplay()``.
    /// - Parameter entryID: the entry the event names (`recorded.event.entryID`), when the caller has it already
    ///   (a replay reads it ahead, to prefetch): taking it out of the event again copies the event's payload.
    @inline(__always)
    mutating func apply(_ recorded: RecordedEvent, analytics withAnalytics: Bool, entryID: EntryID? = nil) {
        let id = entryID ?? recorded.event.entryID
        applyExceptRecordFolds(recorded, analytics: withAnalytics, entryID: id)
        recordFolds.apply(recorded, entryID: id)
        if !erasuresForRecordFolds.isEmpty { handErasuresToRecordFolds() }
    }

    /// Hands the record folds the entries each erasure of every entry folded since kept
    /// (``Projection/erasedEverything(at:keeping:)``): at once on one thread, at the end of a replay on two (the
    /// record folds are on the reading thread until then).
    mutating func handErasuresToRecordFolds() {
        for erasure in erasuresForRecordFolds { recordFolds.erasedEverything(at: erasure.seq, keeping: erasure.kept) }
        erasuresForRecordFolds.removeAll()
    }

    /// Folds one recorded event about entry `id` into the entries, the outbox, the analytics, the revisions and the
    /// pending erasures, and moves the state's seq to it: the fold of ``apply(_:analytics:entryID:)`` without
    /// ``recordFolds``, which a replay folds on its reading thread.
    @inline(__always)
    mutating func applyExceptRecordFolds(_ recorded: RecordedEvent, analytics withAnalytics: Bool, entryID id: EntryID)
    {
        let time = recorded.recordedAtMilliseconds
        let kind: EntryChange.Kind?
        if withAnalytics {
            var kept = EntryChange.Kept()
            kind = entries.apply(recorded.event, at: time, into: &kept)
            if let change = kept.change { analytics.apply(change) }
        } else {
            var discarded = EntryChange.Discarded()
            kind = entries.apply(recorded.event, at: time, into: &discarded)
        }
        // Only the outcome events ask whether their entry still exists (one lookup, not one per event).
        let exists: Bool
        switch recorded.event {
        case .syncAttempted, .syncSucceeded, .syncFailed: exists = entries.contains(id)
        default: exists = true
        }
        outbox.apply(recorded.event, change: kind, at: time, entryExists: exists)
        revisionFold.name(id)
        if case .entryErased(let id, let erasure) = recorded.event {
            pendingErasures[id] = erasure.complete ? nil : recorded.seq
        } else if case .ledgerErased(let erasure) = recorded.event {
            eraseAll(erasure, seq: recorded.seq, analytics: withAnalytics)
        }
        seq = recorded.seq
        recordedAt = recorded.recordedAt
    }

    /// ``applyExceptRecordFolds(_:analytics:entryID:)`` of an `entry.created` in a bulk replay (analytics left for
    /// ``finishBulkReplay()``): the same fold, with the entry moved from the event into the entries' table.
    /// - Parameter sourceHash: the entry's source-id hash, if it has a source id (``SourceIndex/hash(_:_:)``).
    @inline(__always)
    mutating func applyBulkCreation(_ recorded: consuming RecordedEvent, entryID id: EntryID, sourceHash: UInt64?) {
        let (time, seq, recordedAt) = (recorded.recordedAtMilliseconds, recorded.seq, recorded.recordedAt)
        let kind = entries.create((consume recorded).event, at: time, sourceHash: sourceHash)
        outbox.localChange(of: id, kind)
        revisionFold.name(id)
        self.seq = seq
        self.recordedAt = recordedAt
    }

    /// Applies the `entry.created` of a new entry held elsewhere (an import's, ``ImportScratch``): the analytics, the
    /// outbox and the numbering take it as ``apply(_:)`` would; the entries and the revisions do not (its revision is
    /// its batch's last seq while it is held: ``ImportScratch/revision(of:)``, ``noteRevision(of:seq:)``).
    /// - Parameter entry: the entry as the fold creates it (created and updated at the event's time).
    mutating func applyCreation(_ recorded: RecordedEvent, of entry: MoodEntry) {
        analytics.apply(EntryChange(before: nil, after: entry))
        outbox.apply(recorded.event, change: .created, at: recorded.recordedAtMilliseconds)
        recordFolds.records.note(entry.id, seq: recorded.seq)
        seq = recorded.seq
        recordedAt = recorded.recordedAt
    }

    /// The fold of `ledger.erased`: every entry is gone but the kept HealthKit copies (when the erasure keeps them),
    /// with their outbox records and analytics; until the rewrite completes it, the erasure is pending under the
    /// all-zero id (`Specs/erasure.md`, *Erasing everything*).
    private mutating func eraseAll(_ erasure: Erasure, seq: UInt64, analytics withAnalytics: Bool) {
        let before = (revisions: revisionFold, entries: entries)
        let kept = entries.removeAll(keptBy: erasure)
        outbox.removeAll(keeping: Set(kept.lazy.map(\.id)))
        revisionFold.eraseAll(
            keeping: kept.map { ($0.id, before.revisions.revision(of: $0.id, at: seq, entries: before.entries)) },
            entries: &entries)
        if withAnalytics {
            analytics = AnalyticsState()
            for entry in kept { analytics.apply(EntryChange(before: nil, after: entry)) }
        }
        pendingErasures[.none] = erasure.complete ? nil : seq
        erasuresForRecordFolds.append((seq, Set(kept.lazy.map(\.id))))
    }

    /// Starts loading what applying an event of entry `id` will look up first (the id's slots in the entries' and
    /// the outbox's indexes): a replay calls it a few events ahead, so those lookups do not wait on memory.
    @inline(__always)
    func prefetch(_ id: EntryID) {
        entries.prefetch(id)
        outbox.prefetch(id)
    }

    /// The memory the fold fills next where it grows the most (the newest chunks of the entries' and the outbox's
    /// tables), for a replay's reading thread to make resident ahead of it.
    var growingStorage: [(address: UInt, bytes: Int)] {
        [entries.growingStorage, outbox.growingStorage].compactMap { $0 }
    }

    /// The second step of ``prefetch(_:)``, a few events later: loads the values its slots name (an entry's, with
    /// its revision beside it).
    @inline(__always)
    func prefetchValues(_ id: EntryID) {
        entries.prefetchValue(id)
        outbox.prefetchValue(id)
    }

    /// Whether the snapshot this state reads through was found damaged: what was read may be wrong.
    var readsDamagedSnapshot: Bool { entries.image?.isDamaged == true }

    /// Whether a replay into this state can leave the days' indexes and the analytics to ``finishBulkReplay()``:
    /// nothing applied yet and no snapshot, so every entry the replay produces is held here.
    var buildsAnalyticsInBulk: Bool { seq == 0 && entries.image == nil }

    /// Starts a replay from the first event that builds the days' indexes and the analytics in bulk at its end
    /// (``finishBulkReplay()``): only for a state for which ``buildsAnalyticsInBulk`` holds.
    mutating func beginBulkReplay() { entries.deferDays() }

    /// Ends a bulk replay: builds the days' ordered keys and daily moods (``EntriesState/buildDeferredDays()``), then
    /// the analytics from the current entries in one pass (each day's valences sorted once) — the same answer as the
    /// incremental fold (both are functions of the entries; the replay-equivalence tests hold them equal), without
    /// inserting into sorted per-day arrays at random days. Only for a state without a snapshot, whose entries are all
    /// held in memory.
    mutating func finishBulkReplay() {
        let range = entries.buildDeferredDays()
        guard let own = entries.ownEntries else { return }
        let days = entries
        // The days' range found for the days' lists spares the analytics a scan of every entry (~2 ms at 1M).
        analytics = AnalyticsState.recomputed(from: own, days: range) { days.count(on: LocalDate(daysSinceEpoch: $0)) }
    }

    /// Ends a batch at the last record applied or skipped: the entries its events named take its last seq as their
    /// revision. Every path that folds records calls it where a batch ends (a replay at each record that does not
    /// continue its batch, a commit after its records); a state left inside a batch answers for it at its own seq.
    mutating func endBatch() {
        endBatchExceptRecordFolds()
        recordFolds.endBatch(at: seq)
    }

    /// ``endBatch()`` but for ``recordFolds``, which a replay's reading thread ends itself.
    mutating func endBatchExceptRecordFolds() {
        revisionFold.close(at: seq, entries: &entries)
    }

    /// The conflicts merges recorded that nobody has resolved yet.
    public var conflicts: ConflictsFold { kept[ConflictsFold.self] }

    /// The notes and idempotency keys a server stored with its changes.
    package var requests: RequestRecords { kept[RequestRecords.self] }

    /// When each entry's streak of sync attempts began (``FailureStreaks``).
    package var failureStreaks: FailureStreaks { kept[FailureStreaks.self] }

    /// Gives an entry the revision `seq` (an import's held entry joining the state: its batch's last seq).
    mutating func noteRevision(of id: EntryID, seq: UInt64) { revisionFold.set(id, seq: seq, entries: &entries) }

    /// The revision of an entry's last change: the last seq of the last batch that named it (0: never named).
    package func revision(of id: EntryID) -> UInt64 { revisionFold.revision(of: id, at: seq, entries: entries) }

    /// Calls `body` with every id the ledger named and its revision, in no particular order.
    func forEachRevision(_ body: (EntryID, UInt64) -> Void) {
        revisionFold.forEach(at: seq, entries: entries, body)
    }

    /// Every id's revision, and the ids the batch the state ends inside named: what states are compared by.
    package var revisions: RevisionTable {
        var table = RevisionTable()
        forEachRevision { table.revisions[$0] = $1 }
        table.open = revisionFold.opened
        return table
    }

    /// Every entry changed after revision `since`, with its revision, oldest change first (then by id).
    package func changes(since: UInt64) -> [(id: EntryID, revision: UInt64)] {
        var found: [(id: EntryID, revision: UInt64)] = []
        forEachRevision { id, revision in if revision > since { found.append((id, revision)) } }
        return found.sorted { ($0.revision, $0.id) < ($1.revision, $1.id) }
    }

    /// The replacement note of an entry's current revision, if its last change carried one.
    package func replacementNote(of id: EntryID) -> RequestRecords.Note? {
        // A later change without a note makes the entry plain again: its revision moved past the note's.
        guard let note = requests.note(of: id, at: seq), note.seq == revision(of: id) else { return nil }
        return note
    }

    /// Hands a record the folds skip to the kept projections that read its type (a sync batch's carrier), before
    /// ``skip(seq:recordedAt:)`` moves past it.
    mutating func attached(type: UInt16, payload: UnsafeRawBufferPointer) {
        recordFolds.attached(type: type, payload: payload)
    }

    /// Marks a record the ledger skips (a *lost* record left by salvage) as applied.
    mutating func skip(seq: UInt64, recordedAt: Int64) {
        self.seq = seq
        self.recordedAt = recordedAt
    }
}

extension LedgerState: Equatable {
    /// Equal when every projection answers alike (the revisions compared as the ids' answers, wherever each is
    /// kept).
    public static func == (a: LedgerState, b: LedgerState) -> Bool {
        a.seq == b.seq && a.recordedAt == b.recordedAt && a.pendingErasures == b.pendingErasures
            && a.entries == b.entries && a.outbox == b.outbox && a.analytics == b.analytics
            && a.recordFolds == b.recordFolds && a.revisions == b.revisions
    }
}
