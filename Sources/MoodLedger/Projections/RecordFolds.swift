import EventLog

/// The projections that read only the records — which entries each block names (``RecordIndex``) and the projections
/// kept whole (``KeptProjections``) — folded apart from the rest of the state.
///
/// Being a fold of the records alone, a replay folds them on the thread that reads and decodes the records while
/// the other thread folds the rest (`Specs/ledger.md`, *State is a fold*); ``LedgerState`` folds both, one record at
/// a time, everywhere else.
struct RecordFolds: Sendable, Equatable {
    var records = RecordIndex()
    var kept = KeptProjections()

    init() {}

    /// The folds a snapshot holds, read through it.
    init(image: SnapshotImage) {
        records = RecordIndex(image: image)
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
        if type == .remoteConfigured || type == .ledgerErased { records.noteEveryEntryEvent(seq: recorded.pointee.seq) }
        records.note(id, seq: recorded.pointee.seq)
        if KeptProjections.folds(type) { kept.apply(recorded.pointee) }
    }

    /// Hands a record the folds skip to the kept projections that read its type (a sync batch's carrier).
    mutating func attached(type: UInt16, payload: UnsafeRawBufferPointer) {
        kept.attached(type: type, payload: payload)
    }

    /// Hands the kept projections the entries an erasure of every entry kept.
    mutating func erasedEverything(at seq: UInt64, keeping entries: Set<EntryID>) {
        kept.erasedEverything(at: seq, keeping: entries)
    }

    /// Ends the batch being folded at `seq`, its last record.
    mutating func endBatch(at seq: UInt64) {
        kept.endBatch(at: seq)
    }
}
