import CPlatform

/// EntryID → position, open addressing with linear probing and backward-shift deletion.
///
/// Replay does millions of id lookups; this avoids `Dictionary`'s per-lookup SipHash setup and its wide buckets.
/// UUIDs are random, and the hash still mixes both halves, so sequential or crafted ids spread too.
struct IDIndex: Sendable {
    /// One slot: the id and its position (-1: empty), side by side so a probe touches one cache line.
    private struct Slot {
        var id: EntryID
        var position: Int32
    }

    private var slots: [Slot] = []
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

    /// The slot hash (also the snapshot's id-slot hash, `Specs/ledger.md`).
    @inline(__always)
    static func hash(_ id: EntryID) -> Int {
        var h = id.low ^ (id.high &* 0x9E37_79B9_7F4A_7C15)
        h ^= h >> 32
        h &*= 0xD6E8_FEB8_6659_FD93
        h ^= h >> 32
        return Int(truncatingIfNeeded: h)
    }

    private mutating func allocate(_ size: Int) {
        slots = Array(repeating: Slot(id: EntryID(high: 0, low: 0), position: -1), count: size)
        mask = size - 1
        count = 0
    }

    /// Starts loading the slot where a lookup of `id` begins into the CPU's caches (a hint: replay gives it a few
    /// events ahead, so the lookup does not wait on memory).
    @inline(__always)
    func prefetch(_ id: EntryID) {
        guard mask >= 0 else { return }
        slots.withUnsafeBufferPointer { cplatform_prefetch($0.baseAddress! + (Self.hash(id) & mask)) }
    }

    /// The position of `id`, if present.
    @inline(__always)
    subscript(id: EntryID) -> Int? {
        guard mask >= 0 else { return nil }
        var slot = Self.hash(id) & mask
        while true {
            let entry = slots[slot]
            if entry.position < 0 { return nil }
            if entry.id == id { return Int(entry.position) }
            slot = (slot + 1) & mask
        }
    }

    /// Sets the position of `id` (inserting it if absent).
    mutating func set(_ id: EntryID, _ position: Int) {
        if mask < 0 || (count + 1) * 10 > (mask + 1) * 7 { grow() }
        var slot = Self.hash(id) & mask
        while slots[slot].position >= 0 {
            if slots[slot].id == id {
                slots[slot].position = Int32(position)
                return
            }
            slot = (slot + 1) & mask
        }
        slots[slot] = Slot(id: id, position: Int32(position))
        count += 1
    }

    /// Removes `id`; returns its position.
    @discardableResult
    mutating func remove(_ id: EntryID) -> Int? {
        guard mask >= 0 else { return nil }
        var slot = Self.hash(id) & mask
        while true {
            let entry = slots[slot]
            if entry.position < 0 { return nil }
            if entry.id == id { break }
            slot = (slot + 1) & mask
        }
        let removed = Int(slots[slot].position)
        // Backward shift: pull later members of the probe run into the hole so lookups never stop early.
        var hole = slot
        var next = (hole + 1) & mask
        while slots[next].position >= 0 {
            let home = Self.hash(slots[next].id) & mask
            // Move `next` into the hole unless its home lies cyclically in (hole, next].
            let inRange = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next)
            if !inRange {
                slots[hole] = slots[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        slots[hole].position = -1
        count -= 1
        return removed
    }

    private mutating func grow() {
        let old = slots
        allocate(max(16, (mask + 1) * 2))
        for slot in old where slot.position >= 0 { set(slot.id, Int(slot.position)) }
    }
}
