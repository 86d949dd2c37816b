import CPlatform
import EventLog

/// The snapshot's outbox: an index of entry ids (ascending) searched by interpolation, and each entry's records
/// decoded when asked for (`Specs/ledger.md`, sections 10 and 11).
extension SnapshotImage {
    /// How many entries have outbox records.
    var outboxCount: Int { outboxIndex.count / SnapshotLayout.outboxIndexSize }

    @inline(__always)
    private func outboxID(at position: Int) -> EntryID {
        check(.outboxIndex, position * SnapshotLayout.outboxIndexSize, 16)
        return outboxIndex.entryID(position * SnapshotLayout.outboxIndexSize)
    }

    /// Where a key would sit among positions `low..<high` whose keys run evenly from `lowKey` to `highKey`.
    @inline(__always)
    private static func interpolate(_ key: UInt64, low: Int, high: Int, lowKey: UInt64, highKey: UInt64) -> Int {
        let fraction = Double(key - lowKey) / Double(highKey - lowKey)
        return low + min(high - low - 1, Int(fraction * Double(high - low)))
    }

    /// Starts loading the outbox index entry a search for `id` probes first (a hint, like ``prefetch(_:)``).
    @inline(__always)
    func prefetchOutbox(_ id: EntryID) {
        let count = outboxCount
        guard count > 0, let base = outboxIndex.baseAddress else { return }
        cplatform_prefetch(
            base + Self.interpolate(id.high, low: 0, high: count, lowKey: 0, highKey: .max)
                * SnapshotLayout.outboxIndexSize)
    }

    /// The position of an entry in the outbox index (ids ascending), if it has records.
    func outboxPosition(of id: EntryID) -> Int? { Self.position(of: id, count: outboxCount, idAt: outboxID(at:)) }

    /// The position of `id` among `count` ids ascending, `idAt` reading each (checked where read).
    ///
    /// Ids are mostly random (version 4 UUIDs): spread evenly, so the first probes interpolate on the first 8 bytes
    /// (a handful of probes instead of 17 at 100,000 entries, each a likely cache miss; a replay asks for every event
    /// that changes an entry). After eight of them, or when the id falls outside the keys probed (ids not random, or
    /// a crafted file's out of order), it bisects: never more than 8 + log₂ m probes.
    @inline(__always)
    static func position(of id: EntryID, count: Int, idAt: (Int) -> EntryID) -> Int? {
        var low = 0
        var high = count
        var lowKey: UInt64 = 0  // the first 8 bytes of ids at `low` and before `high`: assumed, then probed
        var highKey: UInt64 = .max
        var interpolations = 0
        while low < high {
            var mid = (low + high) / 2
            if interpolations < 8, lowKey < highKey, id.high >= lowKey, id.high <= highKey {
                interpolations += 1
                mid = Self.interpolate(id.high, low: low, high: high, lowKey: lowKey, highKey: highKey)
            }
            let found = idAt(mid)
            if found == id { return mid }
            if found < id {
                low = mid + 1
                lowKey = found.high
            } else {
                high = mid
                highKey = found.high
            }
        }
        return nil
    }

    /// A filter of every id in the outbox index (in whatever order a crafted file holds them): a "no" from it means
    /// ``outboxPosition(of:)`` would find nothing.
    func outboxFilter() -> IDFilter {
        var filter = IDFilter(capacity: outboxCount)
        for position in 0..<outboxCount { filter.insert(outboxID(at: position)) }
        return filter
    }

    /// The records at an index position (nil if they break a rule: only a crafted file holds such a pair).
    private func outboxPair(at position: Int) -> (OutboxRecord?, OutboxRecord?)? {
        let at = position * SnapshotLayout.outboxIndexSize
        check(.outboxIndex, at + 16, 8)
        let offset = Int(outboxIndex.le(at + 16) as UInt32)
        let length = Int(outboxIndex.le(at + 20) as UInt32)
        guard offset <= outboxRecords.count, length <= outboxRecords.count - offset else { return nil }
        check(.outboxRecords, offset, length)
        var r = ByteReader(UnsafeRawBufferPointer(rebasing: outboxRecords[offset..<(offset + length)]))
        guard let pair = try? SnapshotCodec.readPair(from: &r), r.isAtEnd else { return nil }
        return pair
    }

    /// An entry's outbox records (by destination code), if the snapshot holds any.
    func outboxPair(of id: EntryID) -> (OutboxRecord?, OutboxRecord?)? {
        outboxPosition(of: id).flatMap(outboxPair(at:))
    }

    /// Calls `body` with every entry's records, ids ascending (an id out of order, only in a crafted file, is
    /// skipped: binary search could not find it).
    func forEachOutboxPair(_ body: (EntryID, (OutboxRecord?, OutboxRecord?)) -> Void) {
        var previous: EntryID?
        for position in 0..<outboxCount {
            let id = outboxID(at: position)
            if let previous, !(previous < id) { continue }
            previous = id
            if let pair = outboxPair(at: position) { body(id, pair) }
        }
    }
}
