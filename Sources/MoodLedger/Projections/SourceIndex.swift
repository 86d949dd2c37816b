/// (source, source id) → entry, for the entries an ``EntriesState`` holds as values, keyed by a 64-bit hash of the
/// key's bytes instead of by the key: the index holds no strings (an entry's source id is bytes in its extras), and
/// building it hashes eight bytes at a time instead of feeding `Hasher` a `String`.
///
/// A hash says which entry to look at, not which key it is: a lookup checks that the entry found has the key. Two
/// keys with one hash (a crafted log can make them) are both kept: the first in the hash's slot, the other in
/// ``overflow`` under its full key.
struct SourceIndex: Sendable {
    private var byHash: [UInt64: EntryID] = [:]
    /// Keys whose hash another key's entry held when they were set.
    private var overflow: [SourceKey: EntryID] = [:]
    /// The bits of the hash used (all; the tests keep two, so that keys collide).
    var hashMask: UInt64 = .max

    /// How many keys are indexed.
    var count: Int { byHash.count + overflow.count }

    /// The hash of a key (in memory only: never stored).
    @inline(__always)
    static func hash(_ source: MoodSource, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h = (0x243F_6A88_85A3_08D3 ^ UInt64(source.code) << 56 ^ UInt64(bytes.count)) &* 0x9E37_79B9_7F4A_7C15
        var offset = 0
        while offset + 8 <= bytes.count {
            h = (h ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0x9E37_79B9_7F4A_7C15
            h ^= h >> 29
            offset += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while offset < bytes.count {
            tail |= UInt64(bytes[offset]) << shift
            shift += 8
            offset += 1
        }
        h = (h ^ tail) &* 0xD6E8_FEB8_6659_FD93
        return h ^ h >> 32
    }

    /// Whether the entry `id` among `values` has this key.
    @inline(__always)
    private static func holds(
        _ id: EntryID, _ source: MoodSource, _ bytes: UnsafeRawBufferPointer,
        in values: IdentifiedTable<MoodEntry>
    ) -> Bool {
        guard let position = values.position(of: id) else { return false }
        return values[position: position].hasSourceKey(source, bytes)
    }

    /// The entry indexed under a key, if any.
    func entry(_ source: MoodSource, _ bytes: UnsafeRawBufferPointer, in values: IdentifiedTable<MoodEntry>) -> EntryID?
    {
        if let id = byHash[Self.hash(source, bytes) & hashMask], Self.holds(id, source, bytes, in: values) { return id }
        guard !overflow.isEmpty else { return nil }
        return overflow[SourceKey(source: source, bytes: bytes)]
    }

    /// Indexes `id` under a key (replacing the key's entry, if any).
    mutating func set(
        _ source: MoodSource, _ bytes: UnsafeRawBufferPointer, to id: EntryID,
        in values: IdentifiedTable<MoodEntry>
    ) {
        let h = Self.hash(source, bytes) & hashMask
        if let current = byHash[h], current != id, !Self.holds(current, source, bytes, in: values) {
            overflow[SourceKey(source: source, bytes: bytes)] = id
            return
        }
        byHash[h] = id
        if !overflow.isEmpty {
            overflow[SourceKey(source: source, bytes: bytes)] = nil
        }
    }

    /// Indexes `id` under a key of hash `hash` when no key with that hash is indexed (nearly always) and none is
    /// kept beside the hashes: no other entry then holds the key, and ``set(_:_:to:in:)`` would do the same.
    /// - Returns: whether it did (if not, the caller indexes the key with ``set(_:_:to:in:)``).
    mutating func setIfFree(hash: UInt64, to id: EntryID) -> Bool {
        guard overflow.isEmpty else { return false }
        let h = hash & hashMask
        guard let held = byHash.updateValue(id, forKey: h) else { return true }
        byHash[h] = held
        return false
    }

    /// Removes a key if `id` is the entry indexed under it.
    /// - Returns: whether it was.
    mutating func remove(_ source: MoodSource, _ bytes: UnsafeRawBufferPointer, heldBy id: EntryID) -> Bool {
        let h = Self.hash(source, bytes) & hashMask
        if byHash[h] == id {
            byHash[h] = nil
            return true
        }
        guard !overflow.isEmpty else { return false }
        let key = SourceKey(source: source, bytes: bytes)
        guard overflow[key] == id else { return false }
        overflow[key] = nil
        return true
    }
}
