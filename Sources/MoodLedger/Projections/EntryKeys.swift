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

extension SourceKey {
    /// A key from a source id's UTF-8 bytes (as an entry's extras hold them).
    init(source: MoodSource, bytes: UnsafeRawBufferPointer) {
        self.init(source: source, sourceID: String(decoding: bytes, as: UTF8.self))
    }
}

/// The id of a snapshot row that is no longer current (its entry removed, or changed and held as a value).
struct HiddenRow: EntryKeyed, Sendable {
    var id: EntryID
}

/// An entry's place in a day's list as ``EntriesState`` holds it: the entry's position in its table of entries, or
/// (the top bit set) a row of the snapshot it reads through — four bytes, where the key itself (instant and id) is
/// 24: at 1,000,000 events the days' lists took 16 MB as keys.
struct DayRef: Equatable, Sendable {
    private let raw: UInt32
    private static let imageRowBit: UInt32 = 1 << 31

    /// The entry at `position` in the table of entries.
    init(position: Int) {
        precondition(position >= 0 && position < Int(Self.imageRowBit), "an entry's position within 31 bits")
        raw = UInt32(position)
    }

    /// The snapshot's row `row`.
    init(imageRow row: Int) {
        precondition(row >= 0 && row < Int(Self.imageRowBit), "a snapshot's row within 31 bits")
        raw = UInt32(row) | Self.imageRowBit
    }

    /// The snapshot's row, for a reference to one.
    var imageRow: Int? { raw & Self.imageRowBit != 0 ? Int(raw & ~Self.imageRowBit) : nil }

    /// The position in the table of entries, for a reference to one.
    var position: Int? { raw & Self.imageRowBit == 0 ? Int(raw) : nil }
}

extension DayRef {
    /// The ordered list and the daily mood of each day of `days`, from the entries logged on them (`values`, the
    /// entries' table, whose positions the lists refer to). Each day's entries are gathered as (instant, position),
    /// sorted by instant (then id, read where instants tie), and kept as positions: 16 bytes an entry while a day is
    /// sorted, 4 once it is.
    static func lists(
        of days: ClosedRange<Int32>, in values: ChunkedArray<MoodEntry>
    ) -> (refs: [[DayRef]], daily: [DayKey?]) {
        let low = days.lowerBound
        var counts = [Int](repeating: 0, count: Int(days.upperBound) - Int(low) + 1)
        values.forEachInPlace { entry in
            let day = entry.pointee.loggedAt.localDate.daysSinceEpoch
            if days.contains(day) { counts[Int(day) - Int(low)] += 1 }
        }
        var gathered = counts.map { count -> [(ms: Int64, position: UInt32)] in
            var entries: [(ms: Int64, position: UInt32)] = []
            entries.reserveCapacity(count)
            return entries
        }
        counts = []
        var daily = [DayKey?](repeating: nil, count: gathered.count)
        var position = 0
        values.forEachInPlace { entry in
            defer { position += 1 }
            let day = entry.pointee.loggedAt.localDate.daysSinceEpoch
            guard days.contains(day) else { return }
            let index = Int(day) - Int(low)
            let ms = entry.pointee.loggedAt.milliseconds
            gathered[index].append((ms, UInt32(position)))
            let key = DayKey(ms: ms, id: entry.pointee.id)
            if entry.pointee.kind == .dailyMood, daily[index].map({ key < $0 }) ?? true { daily[index] = key }
        }
        var refs: [[DayRef]] = []
        refs.reserveCapacity(gathered.count)
        for index in gathered.indices {
            gathered[index].sort { a, b in
                a.ms != b.ms ? a.ms < b.ms : values[Int(a.position)].id < values[Int(b.position)].id
            }
            refs.append(gathered[index].map { DayRef(position: Int($0.position)) })
            gathered[index] = []
        }
        return (refs, daily)
    }
}
