/// Where an indexed record (every 1,024th: seq − 1 a multiple of 1,024) starts, and when it was recorded.
public struct IndexPosition: Sendable, Equatable {
    /// Its sequence number.
    public var seq: UInt64
    /// The byte offset of its header in the log file.
    public var offset: Int64
    /// Its recorded-at (µs since 1970).
    public var recordedAt: Int64

    /// Creates a position.
    public init(seq: UInt64, offset: Int64, recordedAt: Int64) {
        self.seq = seq
        self.offset = offset
        self.recordedAt = recordedAt
    }
}

/// Every 1,024th record's position, so reads from a sequence number or an instant do not scan the whole file.
struct SparseIndex: Sendable {
    typealias Entry = IndexPosition

    private(set) var entries: [Entry] = []
    /// Records before this sequence number are not indexed yet (open resumed from a checkpoint).
    var coveredFrom: UInt64 = 0
    /// Entries through this seq were taken from a cache, not read (0: none were): until a read starting at one
    /// finds its record there, they are trusted only that far (``distrustTaken()``).
    private(set) var takenThrough: UInt64 = 0

    var isComplete: Bool { coveredFrom == 0 }

    /// Records the record if it falls on the index interval.
    @inline(__always)
    mutating func note(_ view: RecordView) {
        note(seq: view.seq, offset: view.offset, recordedAt: view.recordedAt)
    }

    @inline(__always)
    mutating func note(seq: UInt64, offset: Int64, recordedAt: Int64) {
        if (seq - 1) % LogFormat.indexInterval == 0 {
            if let last = entries.last, last.seq >= seq { return }
            entries.append(Entry(seq: seq, offset: offset, recordedAt: recordedAt))
        }
    }

    /// Forgets entries past `seq` (records of a torn batch that recovery cut).
    mutating func dropEntries(after seq: UInt64) {
        while let last = entries.last, last.seq > seq { entries.removeLast() }
    }

    /// Replaces the part before `coveredFrom` with `prefix` (built by a later walk).
    mutating func fill(prefix: [Entry]) {
        entries = prefix + entries.drop { entry in prefix.last.map { entry.seq <= $0.seq } ?? false }
        coveredFrom = 0
    }

    /// Whether `positions` are exactly the index's entries through `checkpoint`: every record whose seq − 1 is a
    /// multiple of 1,024, the first at the first record's offset, offsets ascending and before the checkpoint's,
    /// recorded-at never decreasing.
    static func isPrefix(_ positions: [Entry], through checkpoint: RecordLocation, baseSeq: UInt64) -> Bool {
        let interval = LogFormat.indexInterval
        guard baseSeq == 0, checkpoint.seq >= 1, positions.count == Int((checkpoint.seq - 1) / interval) + 1,
            positions.first?.offset == Int64(LogFormat.fileHeaderSize), let last = positions.last,
            last.offset <= checkpoint.offset
        else { return false }
        var previous: Entry?
        for (index, position) in positions.enumerated() {
            guard position.seq == UInt64(index) * interval + 1 else { return false }
            if let previous, position.offset <= previous.offset || position.recordedAt < previous.recordedAt {
                return false
            }
            previous = position
        }
        return true
    }

    /// Where a read of `range` starts — the entry at or before its first seq, else the log's first record (seq
    /// `baseSeq + 1`, right after the file header) — and how much to read at a time: about the distance to the next
    /// entry past the range (4 KiB to 1 MiB), so a block of records is read in about its own size.
    func read(of range: ClosedRange<UInt64>, baseSeq: UInt64) -> (start: Entry, chunkSize: Int) {
        let origin = Entry(seq: baseSeq + 1, offset: Int64(LogFormat.fileHeaderSize), recordedAt: 0)
        let start = range.lowerBound > baseSeq + 1 ? entry(atOrBefore: range.lowerBound) ?? origin : origin
        let span = entry(after: range.upperBound).map { Int(clamping: $0.offset - start.offset) } ?? (1 << 20)
        return (start, min(1 << 20, max(4096, span)))
    }

    /// The first entry whose seq is > `seq`.
    func entry(after seq: UInt64) -> Entry? {
        let index = lastIndex { $0.seq <= seq }.map { $0 + 1 } ?? 0
        return index < entries.count ? entries[index] : nil
    }

    /// Takes `prefix`, kept by a cache, for the part before `coveredFrom`.
    mutating func take(_ prefix: [Entry]) {
        let through = coveredFrom
        fill(prefix: prefix)
        takenThrough = through
    }

    /// Whether `entry` came from a cache.
    func isTaken(_ entry: Entry) -> Bool { entry.seq <= takenThrough }

    /// Forgets the entries taken from a cache (a read found no record where one said): that part is read again.
    mutating func distrustTaken() {
        guard takenThrough > 0 else { return }
        entries.removeAll { $0.seq <= takenThrough }
        coveredFrom = takenThrough
        takenThrough = 0
    }

    /// The last entry whose seq is ≤ `seq`.
    func entry(atOrBefore seq: UInt64) -> Entry? {
        lastIndex { $0.seq <= seq }.map { entries[$0] }
    }

    /// The last entry whose recorded-at is ≤ `time`.
    func entry(atOrBeforeTime time: Int64) -> Entry? {
        lastIndex { $0.recordedAt <= time }.map { entries[$0] }
    }

    /// Binary search for the last index where `isBefore` holds (the predicate is monotone: true then false).
    private func lastIndex(where isBefore: (Entry) -> Bool) -> Int? {
        var low = 0
        var high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if isBefore(entries[mid]) { low = mid + 1 } else { high = mid }
        }
        return low == 0 ? nil : low - 1
    }
}
