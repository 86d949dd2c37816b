import CPlatform

/// A value that belongs to one entry (what ``IdentifiedTable`` indexes by).
protocol EntryKeyed {
    /// The entry the value belongs to.
    var id: EntryID { get }
}

/// Values keyed by entry id, kept densely in chunks, with an open-addressing index of 8-byte slots.
///
/// Replay does millions of id lookups; this avoids `Dictionary`'s per-lookup SipHash setup and its wide buckets. A
/// slot holds the id hash's high 32 bits (the fingerprint) and the value's position + 1 (0: empty); the id itself
/// is read from the value when a fingerprint matches. The fingerprint's top bits choose the home slot, so growing
/// and backward-shift deletion never read a value: a slot says where it belongs. Eight bytes a slot instead of 24
/// (an id and a position) keeps the index of 1,000,000 entries at 16 MB, which the caches and the TLB reach better.
struct IdentifiedTable<Element: EntryKeyed> {
    /// The values, densely, in no particular order (removal moves the last value into the hole).
    private(set) var values = ChunkedArray<Element>()
    private var slots: [UInt64] = []
    /// log₂ of the slot count (0: no slots yet).
    private var bits = 0

    init() {}

    /// The number of values.
    var count: Int { values.count }

    /// The index's hash of an id's high 32 bits.
    @inline(__always)
    private static func fingerprint(_ id: EntryID) -> UInt64 { UInt64(bitPattern: Int64(id.slotHash)) >> 32 }

    /// The slot where a fingerprint's probe run starts: its top `bits` bits.
    @inline(__always)
    private func home(_ fingerprint: UInt64) -> Int { Int(truncatingIfNeeded: fingerprint >> UInt64(32 - bits)) }

    /// The position of the value of `id`, if any.
    @inline(__always)
    func position(of id: EntryID) -> Int? {
        guard bits > 0 else { return nil }
        let fingerprint = Self.fingerprint(id)
        let mask = (1 << bits) - 1
        var slot = home(fingerprint)
        while true {
            let value = slots[slot]
            if value == 0 { return nil }
            if value >> 32 == fingerprint {
                let position = Int(truncatingIfNeeded: value & 0xFFFF_FFFF) - 1
                if values[position].id == id { return position }
            }
            slot = (slot + 1) & mask
        }
    }

    /// The value of `id`, if any.
    subscript(id: EntryID) -> Element? {
        position(of: id).map { values[$0] }
    }

    /// The value at a position; a write must keep the value's id.
    subscript(position position: Int) -> Element {
        _read { yield values[position] }
        _modify {
            let id = values[position].id
            defer { precondition(values[position].id == id, "a write changed the id of an indexed value") }
            yield &values[position]
        }
    }

    /// Edits the value at a position where it is held (no copy of it is made); the edit must keep the value's id.
    @inline(__always)
    mutating func modify(at position: Int, _ body: (inout Element) -> Void) {
        let id = values[position].id
        body(&values[position])
        precondition(values[position].id == id, "a write changed the id of an indexed value")
    }

    /// Starts loading the slot where a lookup of `id` begins into the CPU's caches (a hint: replay gives it a few
    /// events ahead, so the lookup does not wait on memory).
    @inline(__always)
    func prefetch(_ id: EntryID) {
        guard bits > 0 else { return }
        slots.withUnsafeBufferPointer { cplatform_prefetch($0.baseAddress! + home(Self.fingerprint(id))) }
    }

    /// Starts loading the value of `id` when its home slot (already asked for by ``prefetch(_:)``) names one with the
    /// id's fingerprint: the second of a lookup's two dependent reads.
    @inline(__always)
    func prefetchValue(_ id: EntryID) {
        if let position = likelyPosition(of: id) { values.prefetch(position) }
    }

    /// The position its home slot names when that slot holds the id's fingerprint (the value is then most likely
    /// the id's, unchecked): what a replay prefetches, and what it prefetches beside the value.
    @inline(__always)
    func likelyPosition(of id: EntryID) -> Int? {
        guard bits > 0 else { return nil }
        let fingerprint = Self.fingerprint(id)
        let value = slots[home(fingerprint)]
        guard value >> 32 == fingerprint else { return nil }
        return Int(truncatingIfNeeded: value & 0xFFFF_FFFF) - 1
    }

    /// Adds a value, or replaces the value with the same id.
    /// - Returns: the value's position (it stays there until a removal moves the last value).
    @discardableResult
    mutating func set(_ element: Element) -> Int {
        if let position = position(of: element.id) {
            values[position] = element
            return position
        }
        return add(element)
    }

    /// Adds the value of an id the table does not hold (the caller has just looked), moved in: no second lookup,
    /// and no copy of the value to retain and release.
    /// - Returns: its position.
    mutating func add(_ element: consuming Element) -> Int {
        if bits == 0 || (values.count + 1) * 10 > (1 << bits) * 7 { grow() }  // keep the load at or below 0.7
        place(Self.fingerprint(element.id), at: values.count)
        values.append(element)
        return values.count - 1
    }

    /// Removes the value of `id` (the last value takes its position).
    /// - Returns: the removed value, if there was one.
    @discardableResult
    mutating func remove(_ id: EntryID) -> Element? {
        guard let position = position(of: id) else { return nil }
        let removed = values[position]
        clear(slot(holding: Self.fingerprint(id), at: position))
        let last = values.count - 1
        if position < last {
            let moved = values[last]
            let fingerprint = Self.fingerprint(moved.id)
            slots[slot(holding: fingerprint, at: last)] = fingerprint << 32 | UInt64(position + 1)
            values[position] = moved
        }
        values.removeLast()
        return removed
    }

    /// The slot that holds exactly (fingerprint, position) — it must exist.
    private func slot(holding fingerprint: UInt64, at position: Int) -> Int {
        let wanted = fingerprint << 32 | UInt64(position + 1)
        let mask = (1 << bits) - 1
        var slot = home(fingerprint)
        while slots[slot] != wanted { slot = (slot + 1) & mask }
        return slot
    }

    /// Puts (fingerprint, position) in the first empty slot of its probe run.
    private mutating func place(_ fingerprint: UInt64, at position: Int) {
        let mask = (1 << bits) - 1
        var slot = home(fingerprint)
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = fingerprint << 32 | UInt64(position + 1)
    }

    /// Empties a slot, pulling later members of its probe run back so that lookups never stop early.
    private mutating func clear(_ slot: Int) {
        let mask = (1 << bits) - 1
        var hole = slot
        var next = (hole + 1) & mask
        while slots[next] != 0 {
            let home = home(slots[next] >> 32)
            // Move `next` into the hole unless its home lies cyclically in (hole, next].
            let inRange = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next)
            if !inRange {
                slots[hole] = slots[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        slots[hole] = 0
    }

    /// Doubles the slots (16 at first) and places every slot again by its fingerprint.
    private mutating func grow() {
        precondition(bits < 32, "more than 2³² slots")
        let old = slots
        bits = max(4, bits + 1)
        slots = [UInt64](repeating: 0, count: 1 << bits)
        for value in old where value != 0 { place(value >> 32, at: Int(truncatingIfNeeded: value & 0xFFFF_FFFF) - 1) }
    }
}

extension IdentifiedTable: Sendable where Element: Sendable {}

extension EntryID {
    /// The id's slot hash: the snapshot's id slots (`Specs/ledger.md`) and the in-memory index both use it.
    /// UUIDs are random, and the hash still mixes both halves, so sequential or crafted ids spread too.
    @inline(__always)
    var slotHash: Int {
        var h = low ^ (high &* 0x9E37_79B9_7F4A_7C15)
        h ^= h >> 32
        h &*= 0xD6E8_FEB8_6659_FD93
        h ^= h >> 32
        return Int(truncatingIfNeeded: h)
    }
}

extension MoodEntry: EntryKeyed {}
