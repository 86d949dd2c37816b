/// EntryID → position, open addressing with linear probing and backward-shift deletion.
///
/// Replay does millions of id lookups; this avoids `Dictionary`'s per-lookup SipHash setup and its wide buckets.
/// UUIDs are random, and the hash still mixes both halves, so sequential or crafted ids spread too.
struct IDIndex: Sendable {
    private var ids: [EntryID] = []
    private var positions: [Int32] = []  // -1: empty slot
    private var mask = -1
    private(set) var count = 0

    init(capacity: Int = 0) {
        if capacity > 0 { allocate(Self.slots(for: capacity)) }
    }

    private static func slots(for count: Int) -> Int {
        var size = 16
        while size * 7 < count * 10 { size <<= 1 }  // keep the load at or below 0.7
        return size
    }

    @inline(__always)
    private static func hash(_ id: EntryID) -> Int {
        var h = id.low ^ (id.high &* 0x9E37_79B9_7F4A_7C15)
        h ^= h >> 32
        h &*= 0xD6E8_FEB8_6659_FD93
        h ^= h >> 32
        return Int(truncatingIfNeeded: h)
    }

    private mutating func allocate(_ size: Int) {
        ids = Array(repeating: EntryID(high: 0, low: 0), count: size)
        positions = Array(repeating: -1, count: size)
        mask = size - 1
        count = 0
    }

    /// The position of `id`, if present.
    @inline(__always)
    subscript(id: EntryID) -> Int? {
        guard mask >= 0 else { return nil }
        var slot = Self.hash(id) & mask
        while true {
            let position = positions[slot]
            if position < 0 { return nil }
            if ids[slot] == id { return Int(position) }
            slot = (slot + 1) & mask
        }
    }

    /// Sets the position of `id` (inserting it if absent).
    mutating func set(_ id: EntryID, _ position: Int) {
        if mask < 0 || (count + 1) * 10 > (mask + 1) * 7 { grow() }
        var slot = Self.hash(id) & mask
        while positions[slot] >= 0 {
            if ids[slot] == id {
                positions[slot] = Int32(position)
                return
            }
            slot = (slot + 1) & mask
        }
        ids[slot] = id
        positions[slot] = Int32(position)
        count += 1
    }

    /// Removes `id`; returns its position.
    @discardableResult
    mutating func remove(_ id: EntryID) -> Int? {
        guard mask >= 0 else { return nil }
        var slot = Self.hash(id) & mask
        while true {
            let position = positions[slot]
            if position < 0 { return nil }
            if ids[slot] == id { break }
            slot = (slot + 1) & mask
        }
        let removed = Int(positions[slot])
        // Backward shift: pull later members of the probe run into the hole so lookups never stop early.
        var hole = slot
        var next = (hole + 1) & mask
        while positions[next] >= 0 {
            let home = Self.hash(ids[next]) & mask
            // Move `next` into the hole unless its home lies cyclically in (hole, next].
            let inRange = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next)
            if !inRange {
                ids[hole] = ids[next]
                positions[hole] = positions[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        positions[hole] = -1
        count -= 1
        return removed
    }

    private mutating func grow() {
        let oldIDs = ids
        let oldPositions = positions
        allocate(max(16, (mask + 1) * 2))
        for slot in 0..<oldPositions.count where oldPositions[slot] >= 0 { set(oldIDs[slot], Int(oldPositions[slot])) }
    }
}
