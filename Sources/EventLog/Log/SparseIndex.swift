/// Every 1,024th record's position, so reads from a sequence number or an instant do not scan the whole file.
struct SparseIndex: Sendable {
    struct Entry: Sendable {
        var seq: UInt64
        var offset: Int64
        var recordedAt: Int64
    }

    private(set) var entries: [Entry] = []
    /// Records before this sequence number are not indexed yet (open resumed from a checkpoint).
    var coveredFrom: UInt64 = 0

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
