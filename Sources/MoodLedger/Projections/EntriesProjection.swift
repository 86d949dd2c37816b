/// An entry's place in its day: by instant, then id (what a day's list is ordered by, kept beside the id so that
/// ordering never looks an entry up).
struct DayKey: Sendable, Comparable {
    var ms: Int64
    var id: EntryID

    static func < (a: DayKey, b: DayKey) -> Bool { (a.ms, a.id) < (b.ms, b.id) }
}

/// The key of the source-id index: a source id is unique per source.
struct SourceKey: Hashable, Sendable {
    var source: MoodSource
    var sourceID: String
}

/// The current entries by id, with the indexes the queries and commands need. A pure fold over events.
public struct EntriesState: Sendable, Equatable {
    /// Every current entry, densely, in no particular order (positions change when entries are removed).
    public private(set) var all: [MoodEntry] = []
    /// id → position in ``all``.
    private var positions = IDIndex()

    /// Every current entry by id (builds a dictionary: for tests and tools, not hot paths).
    public var byID: [EntryID: MoodEntry] { Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0) }) }
    /// Entry keys per local day, oldest first (by instant, then id): a page of the newest is the array's end.
    private(set) var byDay = DayTable<[DayKey]>(empty: [])
    /// The daily-mood entry of each local day.
    private(set) var dailyMoodByDay = DayTable<EntryID>(empty: EntryID(high: 0, low: 0))
    /// (source, source id) → entry. Should two entries share a key (only a crafted log can hold that: imports
    /// refuse it), the first wins: the one created first, then the smaller id — a rule of the entries themselves,
    /// so replay and snapshot + tail agree whatever order they insert in.
    private(set) var bySourceID: [SourceKey: EntryID] = [:]
    /// Keys that more than one entry has held (empty unless a crafted log duplicated a key).
    private var sharedSourceKeys: Set<SourceKey> = []

    /// Makes room for `count` entries (snapshot load knows how many).
    mutating func reserveCapacity(_ count: Int) {
        all.reserveCapacity(count)
        positions = IDIndex(capacity: count)
    }

    public init() {}

    /// The number of current entries.
    public var count: Int { all.count }

    /// One entry.
    @inline(__always)
    public subscript(id: EntryID) -> MoodEntry? { positions[id].map { all[$0] } }

    /// The entry with this (source, source id), if any.
    public func entry(source: MoodSource, sourceID: String) -> MoodEntry? {
        bySourceID[SourceKey(source: source, sourceID: sourceID)].flatMap { self[$0] }
    }

    /// The daily mood logged for a local day, if any.
    public func dailyMood(on day: LocalDate) -> MoodEntry? { dailyMoodByDay[day].flatMap { self[$0] } }

    /// The entries of one local day, newest first.
    public func entries(on day: LocalDate) -> [MoodEntry] {
        guard let keys = byDay[day] else { return [] }
        return keys.reversed().compactMap { self[$0.id] }
    }

    /// How many entries a local day has.
    public func count(on day: LocalDate) -> Int { byDay[day]?.count ?? 0 }

    /// The `k` newest entries of a day, newest first (the end of the day's ordered keys: no scan of the others).
    public func newest(_ k: Int, on day: LocalDate) -> [MoodEntry] {
        guard let keys = byDay[day], k > 0 else { return [] }
        return keys.suffix(k).reversed().compactMap { self[$0.id] }
    }

    /// Where `key` goes in a day's ordered keys (after every smaller one). Entries mostly arrive in order: the end
    /// is tried first.
    private static func insertionIndex(of key: DayKey, in keys: [DayKey]) -> Int {
        guard let last = keys.last, key < last else { return keys.count }
        return lowerBound(of: key, in: keys)
    }

    /// The first index whose key is not below `key`.
    private static func lowerBound(of key: DayKey, in keys: [DayKey]) -> Int {
        var low = 0
        var high = keys.count
        while low < high {
            let mid = (low + high) / 2
            if keys[mid] < key { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The days with entries, ascending.
    public var activeDays: [LocalDate] { byDay.days }

    /// Applies one event; returns the entry before and after, when the event changed an entry.
    /// - Parameters:
    ///   - event: the event.
    ///   - at: the event's recorded-at time in milliseconds (becomes `createdAt` / `updatedAt`).
    @discardableResult
    mutating func apply(_ event: MoodEvent, at time: Int64) -> EntryChange? {
        switch event {
        case .created(var entry):
            guard positions[entry.id] == nil else { return nil }
            entry.createdAt = time
            entry.updatedAt = time
            insert(entry)
            return EntryChange(before: nil, after: entry)
        case .updated(let id, let update):
            return modify(id, at: time) { update.apply(to: &$0) }
        case .labelsEdited(let id, let labels):
            return modify(id, at: time) { $0.labels = labels }
        case .associationsEdited(let id, let associations):
            return modify(id, at: time) { $0.associations = associations }
        case .tagsEdited(let id, let tags):
            return modify(id, at: time) { $0.tags = tags }
        case .deleted(let id), .entryErased(let id, _):
            guard let entry = self[id] else { return nil }
            remove(entry)
            return EntryChange(before: entry, after: nil)
        case .remoteApplied(let change):
            // A conflicting upsert is recorded, not applied: the local change stays and is sent (Specs/sync.md).
            if change.conflict && change.entry != nil { return nil }
            let before = self[change.entryID]
            guard var incoming = change.entry else {
                guard let before else { return nil }
                remove(before)
                return EntryChange(before: before, after: nil)
            }
            incoming.id = change.entryID
            if let before {
                incoming.source = before.source
                incoming.sourceID = before.sourceID
                incoming.createdAt = before.createdAt
                incoming.updatedAt = before.updatedAt
                if incoming == before { return nil }  // the remote has what is here: nothing changes
                remove(before)
            } else {
                incoming.source = change.origin.originSource
                incoming.sourceID = incoming.sourceID ?? change.remoteID
                incoming.createdAt = time
            }
            incoming.updatedAt = time
            if let key = incoming.sourceID.map({ SourceKey(source: incoming.source, sourceID: $0) }),
               let other = bySourceID[key], other != incoming.id {
                incoming.sourceID = nil  // another entry owns that source id; keep the index unique
            }
            insert(incoming)
            return EntryChange(before: before, after: incoming)
        case .syncAttempted, .syncSucceeded, .syncFailed, .syncPulled, .remoteConfigured, .syncRequeued, .redacted:
            return nil
        }
    }

    private mutating func modify(_ id: EntryID, at time: Int64, _ change: (inout MoodEntry) -> Void) -> EntryChange? {
        guard let position = positions[id] else { return nil }
        let before = all[position]
        var after = before
        change(&after)
        after.updatedAt = time
        if after.loggedAt != before.loggedAt || after.kind != before.kind {
            remove(before)
            insert(after)
        } else {
            all[position] = after
        }
        return EntryChange(before: before, after: after)
    }

    /// Builds the state of many entries at once (a snapshot load): entries are added to their days unordered,
    /// then each day is ordered once.
    mutating func insertAll(_ entries: [MoodEntry]) {
        for entry in entries { insert(entry, ordered: false) }
        for day in byDay.days {
            byDay.modify(day, default: [], removeIf: { _ in false }) { keys in
                if !zip(keys, keys.dropFirst()).allSatisfy({ $0.0 < $0.1 }) { keys.sort() }
            }
        }
    }

    /// Adds an entry; `ordered` false appends it to its day (``insertAll(_:)`` orders every day after).
    mutating func insert(_ entry: MoodEntry, ordered: Bool = true) {
        let day = entry.localDate
        let key = DayKey(ms: entry.loggedAt.milliseconds, id: entry.id)
        byDay.modify(day, default: [], removeIf: { _ in false }) { keys in
            keys.insert(key, at: ordered ? Self.insertionIndex(of: key, in: keys) : keys.count)
        }
        positions.set(entry.id, all.count)
        all.append(entry)
        if entry.kind == .dailyMood {
            // The day's daily mood is the earliest one logged (then the smallest id): independent of history.
            let current = dailyMoodByDay[day].flatMap { self[$0] }
            if current.map({ MoodEntry.loggedEarlier(entry, $0) }) ?? true { dailyMoodByDay[day] = entry.id }
        }
        if let sourceID = entry.sourceID {
            let key = SourceKey(source: entry.source, sourceID: sourceID)
            if let holder = bySourceID[key].flatMap({ self[$0] }), holder.id != entry.id {
                sharedSourceKeys.insert(key)
                if Self.createdFirst(entry, holder) { bySourceID[key] = entry.id }
            } else {
                bySourceID[key] = entry.id
            }
        }
    }

    private mutating func remove(_ entry: MoodEntry) {
        if let position = positions.remove(entry.id) {
            let last = all.removeLast()
            if position < all.count {
                all[position] = last
                positions.set(last.id, position)
            }
        }
        let day = entry.localDate
        let key = DayKey(ms: entry.loggedAt.milliseconds, id: entry.id)
        byDay.modify(day, default: [], removeIf: \.isEmpty) { keys in
            let at = Self.lowerBound(of: key, in: keys)
            if at < keys.count, keys[at] == key { keys.remove(at: at) } else if let found = keys.firstIndex(of: key) {
                keys.remove(at: found)  // only if a day was left unordered (never expected): still removed
            }
        }
        if dailyMoodByDay[day] == entry.id {
            dailyMoodByDay[day] = byDay[day]?.compactMap { self[$0.id] }.filter { $0.kind == .dailyMood }
                .min(by: MoodEntry.loggedEarlier)?.id
        }
        if let sourceID = entry.sourceID {
            let key = SourceKey(source: entry.source, sourceID: sourceID)
            if bySourceID[key] == entry.id {
                bySourceID[key] = nil
                if sharedSourceKeys.contains(key) {
                    let holders = all.filter { $0.sourceID == sourceID && $0.source == entry.source }
                    bySourceID[key] = holders.min(by: Self.createdFirst)?.id
                    if holders.count <= 1 { sharedSourceKeys.remove(key) }
                }
            }
        }
    }

    /// The first-wins order of entries sharing a source key: created first, then the smaller id.
    static func createdFirst(_ a: MoodEntry, _ b: MoodEntry) -> Bool { (a.createdAt, a.id) < (b.createdAt, b.id) }

    public static func == (a: EntriesState, b: EntriesState) -> Bool {
        // The indexes are derived from the entries; equal entries (in any order) mean equal state.
        a.count == b.count && a.all.allSatisfy { b[$0.id] == $0 } && a.activeDays == b.activeDays && a.dailyMoodByDay == b.dailyMoodByDay
            && a.bySourceID == b.bySourceID
    }
}

/// What one event did to one entry.
public struct EntryChange: Sendable, Equatable {
    /// The entry before the event (`nil` if it was created).
    public var before: MoodEntry?
    /// The entry after the event (`nil` if it was deleted).
    public var after: MoodEntry?
}

extension MoodEntry {
    /// Oldest first: by instant, then by id.
    static func loggedEarlier(_ a: MoodEntry, _ b: MoodEntry) -> Bool {
        (a.loggedAt.milliseconds, a.id) < (b.loggedAt.milliseconds, b.id)
    }

    /// Newest first: by instant, then by id for a stable order.
    static func newestFirst(_ a: MoodEntry, _ b: MoodEntry) -> Bool {
        a.loggedAt.milliseconds != b.loggedAt.milliseconds ? a.loggedAt.milliseconds > b.loggedAt.milliseconds
            : a.id > b.id
    }
}
