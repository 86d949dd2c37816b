import EventLog

/// One event in an entry's history, with what it changed.
public struct HistoryItem: Sendable, Equatable {
    /// The event as recorded.
    public var event: RecordedEvent
    /// Field → (before, after), for the fields the event changed (empty for sync events).
    public var changes: [(field: String, before: JSONValue, after: JSONValue)]

    public static func == (a: HistoryItem, b: HistoryItem) -> Bool {
        a.event == b.event && a.changes.count == b.changes.count
            && zip(a.changes, b.changes).allSatisfy {
                $0.field == $1.field && $0.before == $1.before && $0.after == $1.after
            }
    }

    /// The event's JSON (`Specs/cli.md`) plus `"changes": {field: {"from", "to"}}`.
    public var json: JSONValue {
        guard case .object(var pairs) = event.json else { return event.json }
        pairs.append(("changes", .object(changes.map { ($0.field, .object([("from", $0.before), ("to", $0.after)])) })))
        return .object(pairs)
    }
}

/// Which events `events(…)` returns.
public struct EventFilter: Sendable, Equatable {
    public var entryID: EntryID?
    public var type: EventType?
    public init(entryID: EntryID? = nil, type: EventType? = nil) {
        self.entryID = entryID
        self.type = type
    }
}

extension Ledger {
    /// Every event that touched an entry, oldest first, with what each one changed.
    /// - Parameter id: the entry (it may since have been deleted).
    /// - Returns: the history; empty if no event ever named the id.
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event`.
    public func history(of id: EntryID) throws -> [HistoryItem] { try indexedHistory().history(of: id) }

    /// The log read through the last published state's index of each entry's records.
    func indexedHistory() -> LogHistory {
        LogHistory(log: eventLog, index: read { state in (state.records, state.seq) })
    }

    /// The raw log as events, oldest first.
    /// - Parameters:
    ///   - after: only events with a larger sequence number (default 0: from the start).
    ///   - through: only events up to this sequence number (default: the end).
    ///   - filter: only events of one entry and/or one type.
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event`.
    public func events(
        after: UInt64 = 0, through: UInt64 = .max, filter: EventFilter = EventFilter()
    ) throws -> [RecordedEvent] {
        try indexedHistory().events(after: after, through: through, filter: filter)
    }

    /// The raw log as events from sequence number `first` through `last`, oldest first.
    /// - Throws: as ``events(after:through:filter:)``.
    public func events(
        from first: UInt64, through last: UInt64 = .max, filter: EventFilter = EventFilter()
    ) throws -> [RecordedEvent] {
        try events(after: first == 0 ? 0 : first - 1, through: last, filter: filter)
    }

    /// The fields whose JSON differs between two versions of an entry.
    public static func fieldChanges(
        before: MoodEntry?, after: MoodEntry?
    )
        -> [(field: String, before: JSONValue, after: JSONValue)]
    {
        fieldChanges(EntryChange(before: before, after: after))
    }

    /// The fields whose JSON differs between the entry before and after.
    static func fieldChanges(_ change: EntryChange) -> [(field: String, before: JSONValue, after: JSONValue)] {
        let ignored: Set<String> = ["id", "created_at", "updated_at"]
        let before = change.before?.json
        let after = change.after?.json
        let keys: [String]
        if case .object(let pairs)? = after ?? before { keys = pairs.map(\.0) } else { keys = [] }
        return keys.compactMap { key in
            guard !ignored.contains(key) else { return nil }
            let old = before?[key] ?? .null
            let new = after?[key] ?? .null
            return old == new ? nil : (key, old, new)
        }
    }
}

extension Ledger {
    /// The entries whose id starts with `prefix` (hex digits; hyphens and case ignored), in ascending order: the
    /// current entries', and with `includingPast` also those of every entry the log names, deleted and erased ones
    /// included (their history is still there to show).
    /// - Parameters:
    ///   - prefix: the start of an id.
    ///   - includingPast: also match entries that are no longer current (reads the whole log).
    /// - Throws: `EventLogError` for damage met while reading the log.
    public func entryIDs(withPrefix prefix: String, includingPast: Bool = false) throws -> [EntryID] {
        try entryIDs(withPrefix: prefix, includingPast: includingPast, in: read { $0 })
    }

    /// ``entryIDs(withPrefix:includingPast:)`` as of a state (`state(at:)`): its entries, and with `includingPast` every
    /// id an event named through its seq.
    /// - Throws: `EventLogError` while reading the log.
    public func entryIDs(withPrefix prefix: String, includingPast: Bool, in state: LedgerState) throws -> [EntryID] {
        let wanted = prefix.lowercased().replacing("-", with: "")
        func matches(_ id: EntryID) -> Bool { id.description.replacing("-", with: "").hasPrefix(wanted) }
        var found = Set(state.entries.ids.filter(matches))
        if includingPast {
            try LogHistory(log: eventLog).forEachNamedID(through: state.seq) { id, _ in
                if matches(id) { found.insert(id) }
            }
        }
        return found.sorted()
    }

    /// The current entry logged last (latest `logged_at`, then the greatest id), if any.
    public var lastLoggedEntryID: EntryID? { read { Self.lastLoggedEntryID(in: $0) } }

    /// The entry logged last in `state` (latest `logged_at`, then the greatest id), if any: `last` as of a point.
    public static func lastLoggedEntryID(in state: LedgerState) -> EntryID? {
        // UTC offsets span 26 hours, so the latest instant's local date is at most two days before the latest
        // local date with entries: it is among the last three days that have any.
        state.entries.activeDays.suffix(3).flatMap { state.entries.entries(on: $0) }
            .max { ($0.loggedAt.milliseconds, $0.id) < ($1.loggedAt.milliseconds, $1.id) }?.id
    }
}
