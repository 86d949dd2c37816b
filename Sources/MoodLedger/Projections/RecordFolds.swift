import EventLog

/// Two projections that read only the records — each entry's revision (``RevisionsState``) and the projections kept
/// whole (``KeptProjections``) — folded apart from the entries, the outbox, the analytics and the record index.
///
/// Being a fold of the records alone, a replay folds them on the thread that reads and decodes the records while
/// the other thread folds the rest (`Specs/ledger.md`, *State is a fold*); ``LedgerState`` folds both, one record at
/// a time, everywhere else. The record index reads only the records too, but stays with the other thread: its
/// block's filter is in cache, and the split that balances the two threads' work is this one (a 1,000,000-event
/// cold open: ~15 ms faster with the index on the folding thread). `ledger.erased` is the one event whose fold
/// reads both (it keeps the revisions of the entries it keeps), so it is folded by ``LedgerState`` alone.
struct RecordFolds: Sendable, Equatable {
    var revisions = RevisionsState()
    var kept = KeptProjections()

    init() {}

    /// The folds a snapshot holds, read through it.
    init(image: SnapshotImage) {
        revisions = RevisionsState(image: image)
        kept = image.kept
    }

    /// Folds one event about entry `id` (its entry, read ahead).
    @inline(__always)
    mutating func apply(_ recorded: RecordedEvent, entryID id: EntryID) {
        withUnsafePointer(to: recorded) { apply($0, type: recorded.event.type, entryID: id) }
    }

    /// Folds the event `recorded` points to, of type `type`, about entry `id`: read where it is held (a replay's
    /// batch), so that an event no kept projection folds is not copied for the call.
    @inline(__always)
    mutating func apply(_ recorded: UnsafePointer<RecordedEvent>, type: EventType, entryID id: EntryID) {
        revisions.apply(entryID: id)
        if KeptProjections.folds(type) { kept.apply(recorded.pointee) }
    }

    /// Hands a record the folds skip to the kept projections that read its type (a sync batch's carrier).
    mutating func attached(type: UInt16, payload: UnsafeRawBufferPointer) {
        kept.attached(type: type, payload: payload)
    }

    /// Ends the batch being folded at `seq`, its last record: the entries it named take that revision.
    mutating func endBatch(at seq: UInt64) {
        revisions.close(at: seq)
        kept.endBatch(at: seq)
    }

    /// Starts loading the revision slot of entry `id`, a few events ahead of its fold.
    @inline(__always)
    func prefetch(_ id: EntryID) { revisions.prefetch(id) }

    /// The second step of ``prefetch(_:)``: the value the slot names.
    @inline(__always)
    func prefetchValue(_ id: EntryID) { revisions.prefetchValue(id) }
}
