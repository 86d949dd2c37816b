import Dispatch

/// Count and valence sums of one label or association.
///
/// Sixteen bytes: a replay of a large ledger holds one table of these per word per day, and the counts of one word
/// cannot pass 2³¹ − 1 (each is an entry held in memory; the snapshot reader refuses larger ones).
package struct WordStat: Sendable, Equatable {
    private var storedCount: Int32 = 0
    private var storedValenceCount: Int32 = 0
    /// Sum of their valences on the 2⁻⁴⁰ grid (exact).
    package var valenceSum: Int64 = 0

    /// Entries carrying the word.
    package var count: Int {
        get { Int(storedCount) }
        set { storedCount = Int32(newValue) }
    }

    /// Of those, entries with a valence.
    package var valenceCount: Int {
        get { Int(storedValenceCount) }
        set { storedValenceCount = Int32(newValue) }
    }

    /// Creates a stat.
    package init(count: Int = 0, valenceCount: Int = 0, valenceSum: Int64 = 0) {
        storedCount = Int32(count)
        storedValenceCount = Int32(valenceCount)
        self.valenceSum = valenceSum
    }

    mutating func add(_ q: Int64?, _ sign: Int) {
        storedCount += Int32(sign)
        if let q {
            storedValenceCount += Int32(sign)
            valenceSum += Int64(sign) * q
        }
    }

    var isEmpty: Bool { storedCount == 0 }

    /// Average valence of the entries with one, or `nil`.
    package var averageValence: Double? {
        valenceCount == 0 ? nil : Double(valenceSum) / Double(valenceCount) / Double(Valence.scale)
    }
}

extension WordStat: WordTableValue {
    /// The slot value of a word without a stat: a count no stat has.
    package static var absent: WordStat { WordStat(storedCount: .min) }
    package var isAbsent: Bool { storedCount == .min }

    private init(storedCount: Int32) { self.storedCount = storedCount }
}

/// One local day's aggregate: exact integer sums and the sorted valences (for an exact median).
package struct DayAggregate: Sendable, Equatable {
    /// Entries on the day.
    package var count = 0
    /// Valences on the grid, ascending.
    package var valences: [Int64] = []
    /// Sum of the grid valences.
    package var valenceSum: Int64 = 0
    /// Sum of the squared grid valences (exact).
    package var valenceSquareSum: Int128 = 0
    /// Per label.
    package var labels = WordTable<LabelDomain, WordStat>()
    /// Per association.
    package var associations = WordTable<AssociationDomain, WordStat>()

    /// Average valence, or `nil` when no entry has one.
    package var averageValence: Double? {
        valences.isEmpty ? nil : Double(valenceSum) / Double(valences.count) / Double(Valence.scale)
    }
}

/// Analytics per local day: a pure fold over entry changes. Updates and deletes subtract exactly what was added.
///
/// A state opened from a snapshot reads each day's stored aggregate from its `SnapshotImage`. A change to such a
/// day is first held beside it (`PendingDay`) and folded in when the day is read; the day is copied here, with
/// its changes folded, once it holds `foldAfter` of them. A replay then decodes only the days it changes often or
/// a query reads: the tail that a command replays before answering touches a few hundred random days of history.
public struct AnalyticsState: Sendable, Equatable {
    /// The snapshot this state starts from (nil: built by replay alone).
    private(set) var image: SnapshotImage?
    /// Aggregates of the days changed since the image (every day, without one).
    private var changedDays = DayTable<DayAggregate>(empty: DayAggregate())
    /// Days whose aggregate ``changedDays`` holds, though it may be gone (with an image).
    private var overridden = DayTable<Bool>(empty: false)
    /// Changes to days the image still answers for, in the order they happened (with an image).
    private var pending = DayTable<PendingDay>(empty: PendingDay())
    /// How many changes a day holds pending before it is copied from the image with them folded (32; the tests
    /// lower it to reach the copy with few events).
    var foldAfter = 32
    /// All-time label totals (the whole-range top labels without visiting every day).
    package private(set) var labelTotals = WordTable<LabelDomain, WordStat>()
    /// All-time association totals.
    package private(set) var associationTotals = WordTable<AssociationDomain, WordStat>()

    package init() {}

    /// A state that reads through a snapshot.
    init(image: SnapshotImage) {
        self.image = image
        labelTotals = image.labelTotals
        associationTotals = image.associationTotals
    }

    /// Aggregates of the days that have entries, by day.
    package var days: Days { Days(state: self) }

    /// The aggregates by day (a view: a snapshot's days are decoded when asked for).
    package struct Days: Sendable {
        let state: AnalyticsState

        /// The aggregate of a day, if it has entries.
        package subscript(day: LocalDate) -> DayAggregate? {
            if let image = state.image, state.overridden[day] == nil {
                let stored = image.dayIndex(of: day).map(image.aggregate(dayAt:))
                guard let changes = state.pending[day] else { return stored }
                let folded = changes.folded(into: stored ?? DayAggregate())
                return folded.count == 0 ? nil : folded
            }
            return state.changedDays[day]
        }

        /// The days with entries, ascending.
        package var dates: [LocalDate] {
            guard let image = state.image else { return state.changedDays.days }
            let stored = image.dates.filter { state.overridden[$0] == nil && state.pending[$0] == nil }
            let pending = state.pending.pairs.filter { day, changes in
                state.overridden[day] == nil && state.storedCount(image, on: day) + changes.countChange > 0
            }.map(\.0)
            return (stored + pending + state.changedDays.days).sorted()
        }
    }

    /// How many entries the image stores on a day.
    private func storedCount(_ image: SnapshotImage, on day: LocalDate) -> Int {
        image.dayIndex(of: day).map { image.day(at: $0).rows.count } ?? 0
    }

    /// Whether a day's aggregate is still the one `image` stores (no change since).
    func readsImage(_ image: SnapshotImage, on day: LocalDate) -> Bool {
        self.image === image && overridden[day] == nil && pending[day] == nil
    }

    /// Copies a day's aggregate from the image, with the changes pending on it folded in.
    private mutating func materialize(_ day: LocalDate) {
        guard let image, overridden[day] == nil else { return }
        overridden[day] = true
        var aggregate = image.dayIndex(of: day).map(image.aggregate(dayAt:))
        if let changes = pending[day] {
            pending[day] = nil
            aggregate = changes.folded(into: aggregate ?? DayAggregate())
        }
        if let aggregate, aggregate.count > 0 { changedDays[day] = aggregate }
    }

    public static func == (a: AnalyticsState, b: AnalyticsState) -> Bool {
        let dates = a.days.dates
        return a.labelTotals == b.labelTotals && a.associationTotals == b.associationTotals && dates == b.days.dates
            && dates.allSatisfy { a.days[$0] == b.days[$0] }
    }

    /// Applies what an event did to one entry.
    mutating func apply(_ change: EntryChange) {
        if let before = change.before { contribute(before, sign: -1) }
        if let after = change.after { contribute(after, sign: 1) }
    }

    mutating func contribute(_ entry: MoodEntry, sign: Int) {
        let day = entry.localDate
        let q = entry.valenceGrid
        if image != nil, overridden[day] == nil {
            // A day the image answers for: the change waits beside it until the day is read or has enough of them.
            let held = pending.modify(day, default: PendingDay(), removeIf: { _ in false }) { changes in
                changes.append(entry, sign: sign)
                return changes.changes.count
            }
            if held >= foldAfter { materialize(day) }
        } else {
            // Mutate the stored aggregate in place: a copy taken out of the dictionary would make every array in it
            // shared, and each change would copy the whole day.
            changedDays.modify(day, default: DayAggregate(), removeIf: { $0.count == 0 }) { aggregate in
                Self.update(&aggregate, q: q, labels: entry.labelList, associations: entry.associationList, sign: sign)
            }
        }
        entry.labelList.forEach { Self.add(q, sign, to: &labelTotals, $0) }
        entry.associationList.forEach { Self.add(q, sign, to: &associationTotals, $0) }
    }

    /// Adds (sign +1) or subtracts (−1) the contribution of an entry with this valence and these words to one day.
    fileprivate static func update(
        _ aggregate: inout DayAggregate, q: Int64?, labels: WordList<LabelDomain>,
        associations: WordList<AssociationDomain>, sign: Int
    ) {
        aggregate.count += sign
        if let q {
            aggregate.valenceSum += Int64(sign) * q
            aggregate.valenceSquareSum += Int128(sign) * Int128(q) * Int128(q)
            let index = aggregate.valences.insertionIndex(of: q)
            if sign > 0 {
                aggregate.valences.insert(q, at: index)
            } else if index < aggregate.valences.count, aggregate.valences[index] == q {
                aggregate.valences.remove(at: index)
            }
        }
        labels.forEach { add(q, sign, to: &aggregate.labels, $0) }
        associations.forEach { add(q, sign, to: &aggregate.associations, $0) }
    }

    @inline(__always)
    private static func add<D>(
        _ q: Int64?, _ sign: Int, to stats: inout WordTable<D, WordStat>, _ word: VocabularyWord<D>
    ) {
        stats.modify(word, default: WordStat(), removeIf: \.isEmpty) { $0.add(q, sign) }
    }

    /// Builds the analytics of a set of entries from scratch, in bulk: group by day, sort each day's valences once.
    /// A replay from the first event uses it; the tests use it as the brute-force reference for the incremental fold.
    package static func recomputed(from entries: some Collection<MoodEntry>) -> AnalyticsState {
        recomputed { body in entries.forEach { entry in withUnsafePointer(to: entry, body) } }
    }

    /// The same, over entries where they are held (read in place: no copy of each out of its chunk). A large set is
    /// built by two threads, each taking the days of one half of the range (the answer does not depend on the
    /// split: a day's aggregate is its own entries', and totals are sums).
    /// - Parameters:
    ///   - parallel: two threads or one (default: two from ``parallelThreshold`` entries).
    ///   - days: the range of the entries' days, when known (nil: found by a scan of the entries).
    ///   - dayCount: how many entries a day (days since the epoch) has, when known: each day's valences are then
    ///     allocated once at that size instead of growing by doubling (at 1,000,000 events, ~1.5 MB less).
    static func recomputed(
        from entries: ChunkedArray<MoodEntry>, parallel: Bool? = nil, days: ClosedRange<Int32>? = nil,
        dayCount: ((Int32) -> Int)? = nil
    ) -> AnalyticsState {
        recomputed(
            eachEntry: entries.forEachInPlace, parallel: parallel ?? (entries.count >= parallelThreshold), days: days,
            dayCount: dayCount)
    }

    /// From how many entries a bulk build uses two threads (below, starting one costs more than it saves).
    static let parallelThreshold = 100_000

    /// Builds the analytics of the entries `eachEntry` visits (once for their days' range unless `days` gives it,
    /// then once per part), read through a pointer: a value handed to a closure is copied first, and this reads four
    /// fields.
    private static func recomputed(
        eachEntry: ((UnsafePointer<MoodEntry>) -> Void) -> Void,
        parallel: Bool = false, days: ClosedRange<Int32>? = nil, dayCount: ((Int32) -> Int)? = nil
    ) -> AnalyticsState {
        guard let range = days ?? MoodEntry.dayRange(of: eachEntry) else { return AnalyticsState() }
        let low = range.lowerBound
        let parts = range.mapHalves(parallel: parallel) { part($0, eachEntry: eachEntry, dayCount: dayCount) }
        var state = AnalyticsState()
        state.labelTotals = parts[0].labelTotals
        state.associationTotals = parts[0].associationTotals
        for other in parts.dropFirst() {
            other.labelTotals.forEach { merge($1, into: &state.labelTotals, $0) }
            other.associationTotals.forEach { merge($1, into: &state.associationTotals, $0) }
        }
        let slots = parts.count == 1 ? parts[0].slots : parts.flatMap(\.slots)
        state.changedDays = DayTable(empty: DayAggregate(), base: LocalDate(daysSinceEpoch: low), slots: slots)
        return state
    }

    /// The analytics of the entries of a range of days, alone: one aggregate slot per day of the range.
    private struct Part {
        var slots: [DayAggregate?] = []
        var labelTotals = WordTable<LabelDomain, WordStat>()
        var associationTotals = WordTable<AssociationDomain, WordStat>()
    }

    private static func part(
        _ days: ClosedRange<Int32>, eachEntry: ((UnsafePointer<MoodEntry>) -> Void) -> Void,
        dayCount: ((Int32) -> Int)?
    ) -> Part {
        var state = Part()
        let low = days.lowerBound
        var aggregates = [DayAggregate](repeating: DayAggregate(), count: Int(days.upperBound) - Int(low) + 1)
        if let dayCount {
            for index in aggregates.indices { aggregates[index].valences.reserveCapacity(dayCount(low + Int32(index))) }
        }
        // Each day's aggregate reached through one pointer: through the array, every field's write checked that
        // the array and then the field's own storage were not shared (two checks for each word of each entry).
        aggregates.withUnsafeMutableBufferPointer { aggregates in
            eachEntry { entry in
                let day = entry.pointee.loggedAt.localDate.daysSinceEpoch
                guard days.contains(day) else { return }
                let aggregate = aggregates.baseAddress! + (Int(day) - Int(low))
                let (q, labels, associations) = MoodEntry.analyticsFields(of: entry)
                aggregate.pointee.count += 1
                if let q {
                    aggregate.pointee.valences.append(q)
                    aggregate.pointee.valenceSum += q
                    aggregate.pointee.valenceSquareSum += Int128(q) * Int128(q)
                }
                labels.forEach { aggregate.pointee.labels.count($0, valence: q) }
                associations.forEach { aggregate.pointee.associations.count($0, valence: q) }
            }
        }
        state.slots.reserveCapacity(aggregates.count)
        // Sorted where they are: a copy taken out of `aggregates` would share its array, and sorting it would copy it.
        // The totals are the days' sums (exact integers), added a day's table at a time instead of once more per
        // word of every entry.
        for index in aggregates.indices {
            if aggregates[index].count == 0 {
                state.slots.append(nil)
            } else {
                aggregates[index].valences.sort()
                aggregates[index].labels.forEach { merge($1, into: &state.labelTotals, $0) }
                aggregates[index].associations.forEach { merge($1, into: &state.associationTotals, $0) }
                state.slots.append(aggregates[index])
            }
        }
        return state
    }

    /// Adds one word's stat from another part's totals.
    private static func merge<D>(_ stat: WordStat, into stats: inout WordTable<D, WordStat>, _ word: VocabularyWord<D>)
    {
        stats.modify(word, default: WordStat(), removeIf: \.isEmpty) { total in
            total.count += stat.count
            total.valenceCount += stat.valenceCount
            total.valenceSum += stat.valenceSum
        }
    }
}

/// Changes to one day that a snapshot stores, not yet folded into a copy of its aggregate.
struct PendingDay: Sendable, Equatable {
    /// What one entry added (+1) or took away (−1): the parts of it a day's aggregate counts (a whole entry is
    /// 128 bytes to copy, this 56).
    struct Change: Sendable, Equatable {
        var q: Int64?
        var labels: WordList<LabelDomain>
        var associations: WordList<AssociationDomain>
        var sign: Int8
    }

    /// The changes, in order.
    private(set) var changes: [Change] = []
    /// The change in the day's entry count.
    private(set) var countChange = 0

    mutating func append(_ entry: MoodEntry, sign: Int) {
        changes.append(
            Change(
                q: entry.valenceGrid, labels: entry.labelList, associations: entry.associationList,
                sign: Int8(sign)))
        countChange += sign
    }

    /// The day's aggregate with these changes applied, in order, as the fold applies them.
    func folded(into stored: DayAggregate) -> DayAggregate {
        var aggregate = stored
        for change in changes {
            AnalyticsState.update(
                &aggregate, q: change.q, labels: change.labels, associations: change.associations,
                sign: Int(change.sign))
        }
        return aggregate
    }
}

extension Array where Element == Int64 {
    /// The first index whose element is ≥ `value` (the array is ascending).
    func insertionIndex(of value: Int64) -> Int {
        var low = 0
        var high = count
        while low < high {
            let mid = (low + high) / 2
            if self[mid] < value { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
