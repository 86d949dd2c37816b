/// How many times each 64-bit key was seen: the keys in an open-addressing table (8 bytes a slot, at most 70 % full,
/// linear probing), the rare counts above one beside it. A Daylio import numbers the rows of each local minute with
/// it — 1.9 million minutes in 32 MB, where a dictionary of counts held 64 MB and twice that while it grew.
struct OccurrenceCounter {
    /// The keys; ``empty`` marks a free slot.
    private var slots = [Int64](repeating: empty, count: 16)
    /// Keys held in ``slots``.
    private var used = 0
    /// Counts of the keys seen more than once.
    private var repeats: [Int64: Int] = [:]
    /// How many times the key equal to ``empty`` was seen (it cannot mark itself).
    private var emptyKeyCount = 0

    private static let empty = Int64.min

    /// Counts one more occurrence of `key`.
    /// - Returns: how many times it was seen before.
    mutating func count(_ key: Int64) -> Int {
        if key == Self.empty {
            defer { emptyKeyCount += 1 }
            return emptyKeyCount
        }
        if (used + 1) * 10 > slots.count * 7 { grow() }
        var slot = Self.home(key, slots.count)
        while slots[slot] != Self.empty {
            if slots[slot] == key {
                let seen = repeats[key, default: 1]
                repeats[key] = seen + 1
                return seen
            }
            slot = (slot + 1) & (slots.count - 1)
        }
        slots[slot] = key
        used += 1
        return 0
    }

    /// A key's first slot: its minute (keys are instants in ms), the bits above 2^21 minutes (four years) folded in —
    /// a file in time order probes neighbouring slots, not one cache miss a row, and keys years apart spread.
    private static func home(_ key: Int64, _ count: Int) -> Int {
        let minute = UInt64(bitPattern: key.floorDivided(by: 60_000))
        return Int(truncatingIfNeeded: minute ^ (minute >> 21) &* 0x9E37) & (count - 1)
    }

    private mutating func grow() {
        let old = slots
        slots = [Int64](repeating: Self.empty, count: old.count * 2)
        for key in old where key != Self.empty {
            var slot = Self.home(key, slots.count)
            while slots[slot] != Self.empty { slot = (slot + 1) & (slots.count - 1) }
            slots[slot] = key
        }
    }
}
