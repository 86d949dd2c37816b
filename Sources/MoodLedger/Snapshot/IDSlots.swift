/// The id slots section of a snapshot being written (`Specs/ledger.md`, *Snapshots*, kind 4): a power of two at or
/// above rows ÷ 0.7, each `u64` holding `row + 1` in its low half and the high 32 bits of the id's hash (a
/// fingerprint: a lookup of an absent id rarely reads a row) in its high half, at the id's hash, linear probing.
/// Rows are placed as they are written, in order.
struct IDSlots {
    /// The slots.
    private(set) var values: [UInt64]

    /// Slots for up to `rows` rows.
    init(rows: Int) {
        var count = 16
        while count * 7 < rows * 10 { count <<= 1 }
        values = [UInt64](repeating: 0, count: count)
    }

    /// Places a row's id.
    mutating func insert(_ id: EntryID, row: Int) {
        let hash = UInt64(bitPattern: Int64(id.slotHash))
        let mask = values.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while values[slot] != 0 { slot = (slot + 1) & mask }
        values[slot] = (hash >> 32) << 32 | UInt64(row + 1)
    }
}
