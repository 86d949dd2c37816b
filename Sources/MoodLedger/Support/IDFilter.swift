/// A set of entry ids that can only say "maybe" or "no": one bit per id hash, about 16 bits per id (a false
/// "maybe" for ~6 % of the ids not in it). Answers whether a large index on disk needs searching at all.
struct IDFilter: Sendable {
    private var words: [UInt64]
    /// How far the hash is shifted right to give a bit index (64 − log₂ of the bit count).
    private let shift: UInt64

    /// A filter for `count` ids, empty; ``insert(_:)`` adds them.
    /// - Parameter count: how many ids it will hold (sizes it; more only raise the false "maybe"s).
    init(capacity count: Int) {
        var bits = 1 << 12
        // at most 128 MiB (a crafted file's huge index: more false "maybe"s)
        while bits < count * 16, bits < 1 << 30 { bits <<= 1 }
        words = Array(repeating: 0, count: bits / 64)
        shift = UInt64(64 - bits.trailingZeroBitCount)
    }

    /// The bit of an id: the top bits of its slot hash (the slot tables use the low ones).
    @inline(__always)
    private func bit(_ id: EntryID) -> Int { Int(UInt64(bitPattern: Int64(id.slotHash)) >> shift) }

    mutating func insert(_ id: EntryID) {
        let bit = bit(id)
        words[bit >> 6] |= 1 << UInt64(bit & 63)
    }

    /// False only if `id` was never inserted.
    @inline(__always)
    func mayContain(_ id: EntryID) -> Bool {
        let bit = bit(id)
        return words[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }
}
