import EventLog

/// The log read as events, without a state: an entry's history, the events of a range, the ids the log names.
struct LogHistory {
    let log: EventLog
    /// Where each entry's records are, through a seq: an entry's events are read from the blocks it names (and
    /// what follows that seq), not from the whole log. `nil`: every record is read.
    var index: (records: RecordIndex, through: UInt64)?

    init(log: EventLog, index: (records: RecordIndex, through: UInt64)? = nil) {
        self.log = log
        self.index = index
    }

    /// The most ids whose records are read through the index: for more, one pass over the log costs less than
    /// asking each block about each id.
    static let indexedIDs = 64

    /// The sequence numbers to read for the records of `ids` from `first` through `last` (with the events about
    /// every entry: `ledger.erased`, `remote.configured`): the blocks the index says may name one, then every record
    /// past what it covers; `nil` — every record is read — without an index, for more than ``indexedIDs`` ids, or
    /// when the snapshot the index reads through was found damaged.
    func ranges(naming ids: [EntryID], from first: UInt64, through last: UInt64) -> [ClosedRange<UInt64>]? {
        guard let index, ids.count <= Self.indexedIDs else { return nil }
        guard first <= last else { return [] }
        var result: [ClosedRange<UInt64>] = []
        for range in index.records.ranges(
            mayNaming: ids, through: min(last, index.through), withEveryEntryEvents: true)
        {
            let lower = max(range.lowerBound, first)
            if lower <= range.upperBound { result.append(lower...range.upperBound) }
        }
        if last > index.through { result.append(max(first, index.through + 1)...last) }
        if index.records.image?.isDamaged == true { return nil }
        return result
    }

    /// Calls `body` for every record from `first` through `last` that may concern `ids` (``ranges(naming:from:through:)``,
    /// or every record), in order.
    /// - Throws: `EventLogError`, or what `body` throws.
    func forEachRecord(
        concerning ids: [EntryID], from first: UInt64 = 1, through last: UInt64 = .max,
        _ body: (RecordView) throws -> Bool
    ) throws {
        if let ranges = ranges(naming: ids, from: first, through: last) {
            try log.forEach(in: ranges, body)
        } else {
            try log.forEach(from: first, through: last, body)
        }
    }

    /// Every event that touched an entry, oldest first, with what each one changed.
    /// - Parameter id: the entry (it may since have been deleted).
    /// - Returns: the history; empty if no event ever named the id.
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event`.
    func history(of id: EntryID) throws -> [HistoryItem] {
        var single = EntriesState()
        var items: [HistoryItem] = []
        for recorded in try events(filter: EventFilter(entryID: id)) {
            let change = single.apply(recorded.event, at: recorded.recordedAtMilliseconds)
            items.append(HistoryItem(event: recorded, changes: change.map(Ledger.fieldChanges) ?? []))
        }
        return items
    }

    /// The raw log as events, oldest first.
    /// - Parameters:
    ///   - after: only events with a larger sequence number (default 0: from the start).
    ///   - through: only events up to this sequence number (default: the end).
    ///   - filter: only events of one entry (and the erasures of every entry after its first event) and/or one type.
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event`.
    func events(
        after: UInt64 = 0, through: UInt64 = .max, filter: EventFilter = EventFilter()
    ) throws
        -> [RecordedEvent]
    {
        var result: [RecordedEvent] = []
        let visit = { (view: RecordView) throws -> Bool in
            if view.type & LogFormat.safeToIgnoreBit != 0 { return true }
            if let type = filter.type, view.type != type.rawValue { return true }
            // An erasure of every entry concerns each entry named before it.
            let erasesAll = view.type == EventType.ledgerErased.rawValue && !result.isEmpty
            if let id = filter.entryID, !erasesAll, !Self.payloadNames(id, view.payload) { return true }
            let recorded = try Ledger.decode(view)
            if let id = filter.entryID, !erasesAll, recorded.event.entryID != id { return true }
            result.append(recorded)
            return true
        }
        if let id = filter.entryID {
            try forEachRecord(concerning: [id], from: after + 1, through: through, visit)
        } else {
            try log.forEach(from: after + 1, through: through, visit)
        }
        return result
    }

    /// A cheap pre-check: whether the payload names the entry (a payload too short to name one is decoded).
    private static func payloadNames(_ id: EntryID, _ payload: UnsafeRawBufferPointer) -> Bool {
        EventCodec.entryID(inPayload: payload).map { $0 == id } ?? true
    }

    /// Calls `body` with the entry id of each event record from `first` through `last` (redacted ones included),
    /// read where the codec keeps it, without decoding the events; safe-to-ignore records and the all-zero id
    /// (events about no entry) are passed over.
    /// - Throws: `EventLogError` for damage met while reading.
    func forEachNamedID(from first: UInt64 = 1, through last: UInt64 = .max, _ body: (EntryID, UInt64) -> Void) throws {
        try log.forEach(from: first, through: last) { view in
            if view.type & LogFormat.safeToIgnoreBit == 0, let id = EventCodec.entryID(inPayload: view.payload),
                id != EntryID.none
            {
                body(id, view.seq)
            }
            return true
        }
    }
}
