/// The current entries by id, with the indexes the queries and commands need. A pure fold over events.
///
/// A state opened from a snapshot reads through its `SnapshotImage` (rows decoded only when read) and keeps here
/// only what changed since: entries added or changed, image rows hidden, and the days those touched, each copied
/// from the image once before its first change (copy-on-write per day).
public struct EntriesState: Sendable, Equatable {
    /// The snapshot this state starts from (nil: built by replay alone).
    private(set) var image: SnapshotImage?
    /// Entries added or changed since the image (every entry, without one), by id.
    private(set) var changed = IdentifiedTable<MoodEntry>()
    /// The revision of each entry in ``changed``, at its position: beside the entry, as a snapshot's rows hold them,
    /// not in a table of their own that keys them by the id a second time (``RevisionsState``).
    /// In 32 bits: a revision of 2³² − 1 or more (a ledger past four billion events) is kept by ``RevisionsState``
    /// instead, and its place here holds `UInt32.max`.
    private var changedRevisions = ChunkedArray<UInt32>()
    /// Image rows no longer current: removed, or superseded by an entry in ``changed``.
    private(set) var hidden = IdentifiedTable<HiddenRow>()
    /// Each local day's entries, oldest first (by instant, then id): a page of the newest is the array's end. With an
    /// image, only the days in ``overridden`` (the image's rows answer for the others). Held as references to where
    /// each entry is (``DayRef``), ordered by the key each one's entry has (``key(of:)``).
    private(set) var byDay = DayTable<[DayRef]>(empty: [])
    /// The daily-mood entry of each local day (with an image: of the overridden days).
    private(set) var dailyMoodByDay = DayTable<EntryID>(empty: EntryID(high: 0, low: 0))
    /// Days changed since the image: ``byDay`` and ``dailyMoodByDay`` answer for them.
    private var overridden = DayTable<Bool>(empty: false)
    /// Days the image's rows still order, some of whose rows are hidden behind a changed entry with the same instant,
    /// kind and id: their entries are read by id, not from the rows.
    private var replaced = DayTable<Bool>(empty: false)
    /// (source, source id) → entry, among ``changed``. Should two entries share a key (only a crafted log can hold
    /// that: imports refuse it), the first wins: the one created first, then the smaller id — a rule of the entries
    /// themselves, so replay and snapshot + tail agree whatever order they insert in. Kept by `EntriesState+Sources`.
    var bySourceID = SourceIndex()
    /// Keys that more than one entry has held (empty unless a crafted log duplicated a key).
    var sharedSourceKeys: Set<SourceKey> = []
    /// A replay from the first event is under way: ``byDay`` and ``dailyMoodByDay`` are left empty until
    /// ``buildDeferredDays()`` builds them from the entries at the end (nothing reads them during a replay).
    private var daysDeferred = false

    package init() {}

    /// A state that reads through a snapshot.
    init(image: SnapshotImage) { self.image = image }

    /// Every current entry (decodes the snapshot's rows: for tests, tools and whole-ledger commands).
    public var all: [MoodEntry] {
        var result: [MoodEntry] = []
        result.reserveCapacity(count)
        if let image {
            for row in 0..<image.rowCount where hidden.position(of: image.id(ofRow: row)) == nil {
                if let entry = image.entry(atRow: row) { result.append(entry) }
            }
        }
        result.append(contentsOf: changed.values)
        return result
    }

    /// How many current entries came from `source` (decodes the snapshot's rows, one at a time).
    public func count(source: MoodSource) -> Int {
        var total = 0
        forEach { if $0.source == source { total += 1 } }
        return total
    }

    /// Calls `body` with every current entry, one at a time (decodes the snapshot's rows without holding them).
    func forEach(_ body: (MoodEntry) -> Void) {
        if let image {
            for row in 0..<image.rowCount where hidden.position(of: image.id(ofRow: row)) == nil {
                if let entry = image.entry(atRow: row) { body(entry) }
            }
        }
        for entry in changed.values { body(entry) }
    }

    /// Removes every entry but those an erasure of every entry keeps (`Specs/erasure.md`): the state afterwards holds
    /// the kept entries alone, as values, and no longer reads a snapshot.
    /// - Parameter erasure: the erasure (one that keeps nothing decodes no entry).
    /// - Returns: the entries kept.
    mutating func removeAll(keptBy erasure: Erasure) -> [MoodEntry] {
        var kept: [MoodEntry] = []
        if erasure.keepsHealthKit { forEach { if erasure.keeps($0) { kept.append($0) } } }
        let deferred = daysDeferred
        self = EntriesState()
        daysDeferred = deferred
        for entry in kept { insert(entry) }
        return kept
    }

    /// Every current entry's id, in no particular order (reads only the ids of the snapshot's rows).
    public var ids: [EntryID] {
        var result: [EntryID] = []
        result.reserveCapacity(count)
        if let image {
            for row in 0..<image.rowCount {
                let id = image.id(ofRow: row)
                if hidden.position(of: id) == nil { result.append(id) }
            }
        }
        result.append(contentsOf: changed.values.lazy.map(\.id))
        return result
    }

    /// The entries of a state built without a snapshot, where they are held (no copy); nil when reading through one.
    var ownEntries: ChunkedArray<MoodEntry>? { image == nil ? changed.values : nil }

    /// Every current entry by id (builds a dictionary: for tests and tools, not hot paths).
    public var byID: [EntryID: MoodEntry] { Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0) }) }

    /// The number of current entries.
    public var count: Int { (image?.rowCount ?? 0) - hidden.count + changed.count }

    /// One entry.
    @inline(__always)
    public subscript(id: EntryID) -> MoodEntry? {
        if let position = changed.position(of: id) { return changed[position: position] }
        guard let image, let row = image.row(of: id), hidden.position(of: id) == nil else { return nil }
        return image.entry(atRow: row)
    }

    /// Starts loading the index slots a lookup of `id` reads (a hint a replay gives a few events ahead).
    @inline(__always)
    func prefetch(_ id: EntryID) {
        changed.prefetch(id)
        image?.prefetch(id)
    }

    /// Where the entries' table adds its next entries: the newest chunk of held entries (a replay has another
    /// thread make its pages resident ahead of the fold: ``ChunkedArray/newestChunkStorage``).
    var growingStorage: (address: UInt, bytes: Int)? { changed.values.newestChunkStorage }

    /// Starts loading the entry of `id` that the slot ``prefetch(_:)`` loaded names (the lookup's second read).
    @inline(__always)
    func prefetchValue(_ id: EntryID) {
        guard let position = changed.likelyPosition(of: id) else { return }
        changed.values.prefetch(position)
        changedRevisions.prefetch(position)
    }

    /// The revision beside a held entry, else nil (not held, or a revision kept by ``RevisionsState``).
    func heldRevision(of id: EntryID) -> UInt64? {
        guard let position = changed.position(of: id) else { return nil }
        let revision = changedRevisions[position]
        return revision == .max ? nil : UInt64(revision)
    }

    /// Sets the revision beside a held entry; false when it is not kept here (the entry is not held, or the revision
    /// needs more than 32 bits): the caller keeps it.
    mutating func setHeldRevision(of id: EntryID, to revision: UInt64) -> Bool {
        guard let position = changed.position(of: id) else { return false }
        let fits = revision < UInt64(UInt32.max)
        changedRevisions[position] = fits ? UInt32(revision) : .max
        return fits
    }

    /// Calls `body` with each revision kept beside a held entry, with the entry's id, in no particular order.
    func forEachHeldRevision(_ body: (EntryID, UInt64) -> Void) {
        for position in 0..<changed.count where changedRevisions[position] != .max {
            body(changed[position: position].id, UInt64(changedRevisions[position]))
        }
    }

    /// Adds an entry to ``changed`` or replaces it there; a new one gets revision 0 until its batch closes.
    /// - Returns: its position.
    @discardableResult
    private mutating func setChanged(_ entry: MoodEntry) -> Int {
        let position = changed.set(entry)
        if position == changedRevisions.count { changedRevisions.append(0) }
        return position
    }

    /// ``setChanged(_:)`` of an entry ``changed`` does not hold, moved in (``IdentifiedTable/add(_:)``).
    private mutating func addChanged(_ entry: consuming MoodEntry) -> Int {
        let position = changed.add(entry)
        if position == changedRevisions.count { changedRevisions.append(0) }
        return position
    }

    /// Removes an entry from ``changed``: the last takes its position, with its revision, and its day's list refers
    /// to it there.
    private mutating func removeChanged(_ id: EntryID) -> MoodEntry? {
        guard let position = changed.position(of: id) else { return nil }
        let last = changed.count - 1
        if position < last {
            changedRevisions[position] = changedRevisions[last]
            let moved = DayRef(position: last)
            let day = changed[position: last].localDate
            if !daysDeferred, let at = listIndex(of: key(of: moved), on: day), byDay[day]?[at] == moved {
                byDay.modify(day, default: [], removeIf: { _ in false }) { $0[at] = DayRef(position: position) }
            }
        }
        changedRevisions.removeLast()
        return changed.remove(id)
    }

    /// Whether an entry with this id is current (without decoding it).
    func contains(_ id: EntryID) -> Bool {
        changed.position(of: id) != nil
            || (image.map { $0.row(of: id) != nil && hidden.position(of: id) == nil } ?? false)
    }

    /// Whether the image's rows answer for a day.
    @inline(__always)
    private func readsImage(_ day: LocalDate) -> Bool { image != nil && overridden[day] == nil }

    /// The image's record of a day, when the image answers for it.
    private func imageDay(_ day: LocalDate) -> SnapshotImage.Day? {
        guard let image, overridden[day] == nil, let index = image.dayIndex(of: day) else { return nil }
        return image.day(at: index)
    }

    /// A day's keys, oldest first.
    func keys(on day: LocalDate) -> [DayKey] {
        if let image, let record = imageDay(day) { return record.rows.map(image.key(ofRow:)) }
        return readsImage(day) ? [] : (byDay[day] ?? []).map(key(of:))
    }

    /// The key (instant, id) of the entry a day's list refers to.
    @inline(__always)
    private func key(of ref: DayRef) -> DayKey {
        if let position = ref.position {
            return DayKey(ms: changed[position: position].loggedAt.milliseconds, id: changed[position: position].id)
        }
        guard let image, let row = ref.imageRow else { preconditionFailure("a snapshot's row without a snapshot") }
        return image.key(ofRow: row)
    }

    /// The entry a day's list refers to (a snapshot's row: the entry held here if one replaced it).
    private func entry(of ref: DayRef) -> MoodEntry? {
        if let position = ref.position { return changed[position: position] }
        guard let image, let row = ref.imageRow else { return nil }
        return self[image.id(ofRow: row)]
    }

    /// The entry of an image row of a day the image orders: the changed entry where one replaced the row. (On such
    /// a day a hidden row can only be a replaced one: a removal copies the day.) Asks the in-memory tables, not the
    /// image's id index: a day read row by row does not probe the index for each.
    @inline(__always)
    private func entry(atRow row: Int, of image: SnapshotImage, on day: LocalDate) -> MoodEntry? {
        guard replaced[day] != nil else { return image.entry(atRow: row) }
        let id = image.id(ofRow: row)
        guard hidden.position(of: id) != nil else { return image.entry(atRow: row) }
        return changed.position(of: id).map { changed[position: $0] }
    }

    /// The daily mood logged for a local day, if any.
    public func dailyMood(on day: LocalDate) -> MoodEntry? {
        if let image, readsImage(day) {
            return imageDay(day)?.dailyMoodRow.flatMap { entry(atRow: $0, of: image, on: day) }
        }
        return dailyMoodByDay[day].flatMap { self[$0] }
    }

    /// The entries of one local day, newest first.
    public func entries(on day: LocalDate) -> [MoodEntry] { newest(Int.max, on: day) }

    /// How many entries a local day has.
    public func count(on day: LocalDate) -> Int {
        if readsImage(day) { return imageDay(day)?.rows.count ?? 0 }
        return byDay[day]?.count ?? 0
    }

    /// The `k` newest entries of a day, newest first (the end of the day's ordered keys: no scan of the others).
    public func newest(_ k: Int, on day: LocalDate) -> [MoodEntry] {
        guard k > 0 else { return [] }
        if let image, readsImage(day) {
            guard let rows = imageDay(day)?.rows else { return [] }
            return rows.suffix(k).reversed().compactMap { entry(atRow: $0, of: image, on: day) }
        }
        guard let refs = byDay[day] else { return [] }
        return refs.suffix(k).reversed().compactMap(entry(of:))
    }

    /// The days with entries, ascending.
    public var activeDays: [LocalDate] {
        guard let image else { return byDay.days }
        var result: [LocalDate] = []
        result.reserveCapacity(image.dayCount + overridden.count)
        var own = byDay.days[...]
        for date in image.dates where overridden[date] == nil {
            while let next = own.first, next < date { result.append(own.removeFirst()) }
            result.append(date)
        }
        result.append(contentsOf: own)
        return result
    }

    /// Where a day's entries are: still the image's rows (no entry of the day changed since it), or entries here.
    enum DaySource {
        case image(SnapshotImage, SnapshotImage.Day)
        case entries([MoodEntry], dailyMood: EntryID?)
        /// Entries already encoded as the snapshot stores them (an import's, read back from its records).
        case encoded(EncodedDay)
    }

    /// Calls `body` for every day with entries, ascending, with where they are (the snapshot writer copies the
    /// image's rows of unchanged days as they are, instead of decoding and encoding them again).
    func forEachDaySource(_ body: (LocalDate, DaySource) throws -> Void) rethrows {
        for day in activeDays {
            if let image, let record = imageDay(day) {
                // A day with a replaced row is written from its entries: its stored rows are not all current.
                try body(
                    day,
                    replaced[day] == nil
                        ? .image(image, record)
                        : .entries(
                            record.rows.compactMap { entry(atRow: $0, of: image, on: day) },
                            dailyMood: dailyMood(on: day)?.id))
            } else {
                try body(
                    day, .entries((byDay[day] ?? []).compactMap(entry(of:)), dailyMood: dailyMood(on: day)?.id))
            }
        }
    }

    /// Copies a day from the image before its first change.
    private mutating func materialize(_ day: LocalDate) {
        guard let image, overridden[day] == nil else { return }
        overridden[day] = true
        guard let index = image.dayIndex(of: day) else { return }
        let record = image.day(at: index)
        byDay[day] = record.rows.map { DayRef(imageRow: $0) }
        dailyMoodByDay[day] = record.dailyMoodRow.map(image.id(ofRow:))
    }

    /// Where `key` goes in a day's ordered list (after every smaller one). Entries mostly arrive in order: the end
    /// is tried first.
    private func insertionIndex(of key: DayKey, in refs: [DayRef]) -> Int {
        guard let last = refs.last, key < self.key(of: last) else { return refs.count }
        return lowerBound(of: key, in: refs)
    }

    /// The first index whose entry's key is not below `key`.
    private func lowerBound(of key: DayKey, in refs: [DayRef]) -> Int {
        var low = 0
        var high = refs.count
        while low < high {
            let mid = (low + high) / 2
            if self.key(of: refs[mid]) < key { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Where in a day's list the entry with `key` is, if there (found by its key; a list left unordered, never
    /// expected, is searched whole).
    private func listIndex(of key: DayKey, on day: LocalDate) -> Int? {
        guard let refs = byDay[day] else { return nil }
        let at = lowerBound(of: key, in: refs)
        if at < refs.count, self.key(of: refs[at]) == key { return at }
        return refs.firstIndex { self.key(of: $0) == key }
    }

    /// Applies one event; returns the entry before and after, when the event changed an entry.
    /// - Parameters:
    ///   - event: the event.
    ///   - at: the event's recorded-at time in milliseconds (becomes `createdAt` / `updatedAt`).
    @discardableResult
    mutating func apply(_ event: MoodEvent, at time: Int64) -> EntryChange? {
        var kept = EntryChange.Kept()
        apply(event, at: time, into: &kept)
        return kept.change
    }

    /// Applies one event; returns what it did to an entry (nil: nothing), and hands the entry before and after to
    /// `change` (which may not want it: building it copied both entries, and a replay's fold, which leaves the
    /// analytics to the end, needs only what kind of change it was).
    /// - Parameters:
    ///   - event: the event.
    ///   - time: the event's recorded-at time in milliseconds (becomes `createdAt` / `updatedAt`).
    ///   - change: given what the event did, if it did something.
    @discardableResult
    mutating func apply<Sink: EntryChange.Sink>(
        _ event: MoodEvent, at time: Int64, into change: inout Sink
    ) -> EntryChange.Kind? {
        switch event {
        case .created(var entry):
            guard !contains(entry.id) else { return nil }
            entry.createdAt = time
            entry.updatedAt = time
            change.keep(EntryChange(before: nil, after: entry))
            insert(entry)
            return .created
        case .updated(let id, let update):
            let staysInPlace = update.loggedAt == nil && update.kind == nil
            return modify(id, at: time, &change, staysInPlace: staysInPlace) { update.apply(to: &$0) }
        case .labelsEdited(let id, let labels):
            return modify(id, at: time, &change, staysInPlace: true) { $0.labels = labels }
        case .associationsEdited(let id, let associations):
            return modify(id, at: time, &change, staysInPlace: true) { $0.associations = associations }
        case .tagsEdited(let id, let tags):
            return modify(id, at: time, &change, staysInPlace: true) { $0.tags = tags }
        case .deleted(let id), .entryErased(let id, _):
            guard let entry = self[id] else { return nil }
            remove(entry)
            change.keep(EntryChange(before: entry, after: nil))
            return .deleted
        case .remoteApplied(let remote):
            // A conflicting upsert is recorded, not applied: the local change stays and is sent (Specs/sync.md).
            if remote.conflict && remote.entry != nil { return nil }
            return upsert(
                remote.entry, id: remote.entryID, origin: remote.origin, remoteID: remote.remoteID, at: time, &change)
        case .syncMerged(let merge):
            // The merged version is the entry's (absent: it stays deleted here).
            guard merge.merged != nil || self[merge.entryID] != nil else { return nil }
            return upsert(
                merge.merged, id: merge.entryID, origin: merge.destination, remoteID: merge.remoteID, at: time, &change)
        case .syncAttempted, .syncSucceeded, .syncFailed, .syncPulled, .remoteConfigured, .syncRequeued, .redacted,
            .conflictResolved, .ledgerErased, .syncReleased, .healthKitAnchored, .requestKeyed, .editReplaced:
            // An erasure of every entry is applied by `LedgerState` to all projections at once.
            return nil
        }
    }

    /// Applies an `entry.created` whose change nobody keeps (a bulk replay's), its entry moved in rather than copied.
    mutating func create(_ event: consuming MoodEvent, at time: Int64, sourceHash: UInt64?) -> EntryChange.Kind? {
        guard case .created(let entry) = consume event else { preconditionFailure("not an entry.created") }
        guard !contains(entry.id) else { return nil }
        insert(entry, createdAt: time, sourceHash: sourceHash)
        return .created
    }

    /// A destination's version of an entry becomes the entry (`nil`: the entry is deleted); the entry's source,
    /// source id and creation time stay. Nothing changes when the versions are equal.
    private mutating func upsert<Sink: EntryChange.Sink>(
        _ version: MoodEntry?, id: EntryID, origin: SyncDestination,
        remoteID: String?, at time: Int64, _ change: inout Sink
    )
        -> EntryChange.Kind?
    {
        let before = self[id]
        guard var incoming = version else {
            guard let before else { return nil }
            remove(before)
            change.keep(EntryChange(before: before, after: nil))
            return .deleted
        }
        incoming.id = id
        if let before {
            incoming.source = before.source
            incoming.sourceID = before.sourceID
            incoming.createdAt = before.createdAt
            incoming.updatedAt = before.updatedAt
            if incoming == before { return nil }  // the remote has what is here: nothing changes
            remove(before)
        } else {
            incoming.source = origin.originSource
            incoming.sourceID = incoming.sourceID ?? remoteID
            incoming.createdAt = time
        }
        incoming.updatedAt = time
        // A new entry does not take a source id another entry holds (the index stays unique). An entry that exists
        // keeps its own, always: it was checked when it got it, and asking the index after removing the entry would
        // name another entry sharing the pair (a crafted log) and take it from its first holder.
        if before == nil, let key = incoming.sourceID.map({ SourceKey(source: incoming.source, sourceID: $0) }),
            let other = holder(of: key), other != incoming.id
        {
            incoming.sourceID = nil
        }
        insert(incoming)
        change.keep(EntryChange(before: before, after: incoming))
        return before == nil ? .created : .changed
    }

    /// - Parameter staysInPlace: whether the change leaves the entry's instant and kind as they are (its day and
    ///   its place in the day): an entry held here is then edited where it is when `Sink` keeps no change.
    private mutating func modify<Sink: EntryChange.Sink>(
        _ id: EntryID, at time: Int64, _ result: inout Sink, staysInPlace: Bool = false,
        _ change: (inout MoodEntry) -> Void
    ) -> EntryChange.Kind? {
        if !Sink.keepsChanges, staysInPlace, let position = changed.position(of: id) {
            changed.modify(at: position) { entry in
                change(&entry)
                entry.updatedAt = time
            }
            return .changed
        }
        guard let before = self[id] else { return nil }
        var after = before
        change(&after)
        after.updatedAt = time
        let samePlace = after.loggedAt == before.loggedAt && after.kind == before.kind
        if samePlace, let position = changed.position(of: id) {
            changed[position: position] = after
        } else if samePlace, before.sourceID == nil, image != nil {
            // A snapshot's row (it is not among the changed): its day keeps its keys and daily mood, so the day is
            // not copied; its reads look the day's entries up by id from now on, and the row is hidden behind the
            // entry held here. An entry with a source id takes the long way, which keeps the source index.
            let day = after.localDate
            if overridden[day] == nil { replaced[day] = true }
            hidden.set(HiddenRow(id: id))
            setChanged(after)
        } else {
            remove(before)
            insert(after)
        }
        result.keep(EntryChange(before: before, after: after))
        return .changed
    }

    /// Adds an entry this state does not hold among its changed entries, moved in (a replay's creation is not copied:
    /// a copy retained the entry's extras, made on the reading thread, and released them again).
    /// - Parameter time: when given, the entry's creation and last change (an `entry.created`'s fold stamps it here,
    ///   where the entry is already its own to change: a variable bound to it outside was copied to be passed on).
    mutating func insert(_ entry: consuming MoodEntry, createdAt time: Int64? = nil, sourceHash: UInt64? = nil) {
        assert(changed.position(of: entry.id) == nil, "an entry inserted twice")
        if let time {
            entry.createdAt = time
            entry.updatedAt = time
        }
        // The day only where a day's list or the snapshot's rows are kept as entries come (a bulk replay builds the
        // lists at its end).
        let day = daysDeferred && image == nil ? nil : entry.localDate
        if let day { materialize(day) }
        let key = DayKey(ms: entry.loggedAt.milliseconds, id: entry.id)
        let position = addChanged(entry)
        if !daysDeferred, let day {
            let at = byDay[day].map { insertionIndex(of: key, in: $0) }
            byDay.modify(day, default: [], removeIf: { _ in false }) {
                $0.insert(DayRef(position: position), at: at ?? 0)
            }
            if changed[position: position].kind == .dailyMood {
                // The day's daily mood is the earliest one logged (then the smallest id): independent of history.
                let current = dailyMoodByDay[day].flatMap { self[$0] }
                if current.map({ MoodEntry.loggedEarlier(changed[position: position], $0) }) ?? true {
                    dailyMoodByDay[day] = key.id
                }
            }
        }
        indexSourceID(at: position, hash: sourceHash)
    }

    private mutating func remove(_ entry: MoodEntry) {
        let day = entry.localDate
        materialize(day)
        // Out of its day's list first, while the list's references still name where each entry is.
        if !daysDeferred, let at = listIndex(of: DayKey(ms: entry.loggedAt.milliseconds, id: entry.id), on: day) {
            byDay.modify(day, default: [], removeIf: \.isEmpty) { _ = $0.remove(at: at) }
        }
        if removeChanged(entry.id) == nil, let image, image.row(of: entry.id) != nil {
            hidden.set(HiddenRow(id: entry.id))
        }
        removeFromSourceIndex(entry)
        guard !daysDeferred else { return }
        if dailyMoodByDay[day] == entry.id {
            dailyMoodByDay[day] =
                byDay[day]?.compactMap(entry(of:)).filter { $0.kind == .dailyMood }
                .min(by: MoodEntry.loggedEarlier)?.id
        }
    }

    /// Leaves the days' keys and daily moods for ``buildDeferredDays()`` (a replay from the first event into an empty
    /// state without a snapshot): inserting each key into its day's sorted array, and scanning a day when its daily
    /// mood is removed, cost the fold more than sorting each day once at the end, and the arrays end exactly sized.
    mutating func deferDays() {
        guard image == nil, changed.count == 0 else { return }  // only from an empty state
        daysDeferred = true
    }

    /// Builds the days' ordered keys and daily moods from the entries, after ``deferDays()``: the same tables the
    /// fold keeps event by event (oldest first by instant then id; the daily mood the earliest logged, then the
    /// smallest id), grouped by day in two passes and each day sorted once. A large set is built by two threads, each
    /// taking the days of one half of the range (at 1,000,000 events ~27 ms on one).
    /// - Parameter parallel: two threads or one (default: two from ``AnalyticsState/parallelThreshold`` entries).
    /// - Returns: the range of the entries' days (`nil`: no entries), which a build of the analytics from the same
    ///   entries need not scan them again for; `nil` also when the days were not deferred.
    @discardableResult
    mutating func buildDeferredDays(parallel: Bool? = nil) -> ClosedRange<Int32>? {
        guard daysDeferred else { return nil }
        daysDeferred = false
        let values = changed.values
        guard let range = MoodEntry.dayRange(of: values.forEachInPlace) else { return nil }
        let parts = range.mapHalves(parallel: parallel ?? (values.count >= AnalyticsState.parallelThreshold)) {
            DayRef.lists(of: $0, in: values)
        }
        let base = LocalDate(daysSinceEpoch: range.lowerBound)
        byDay = DayTable(empty: [], base: base, slots: parts.flatMap { $0.refs.map { $0.isEmpty ? nil : $0 } })
        dailyMoodByDay = DayTable(
            empty: EntryID(high: 0, low: 0), base: base, slots: parts.flatMap { $0.daily.map { $0?.id } })
        return range
    }

    public static func == (a: EntriesState, b: EntriesState) -> Bool {
        // The indexes are derived from the entries: equal entries, days in the same order and the same daily moods
        // mean equal state, however each is stored (image rows or changed entries). Each day's entries are compared
        // as its readers read them too (a day can read rows, or look its entries up by id).
        let days = a.activeDays
        return a.count == b.count && days == b.activeDays && a.all.allSatisfy { b[$0.id] == $0 }
            && days.allSatisfy {
                a.keys(on: $0) == b.keys(on: $0) && a.dailyMood(on: $0) == b.dailyMood(on: $0)
                    && a.entries(on: $0) == b.entries(on: $0)
            }
    }
}
