/// Keys in the order they were last appended, oldest first, with O(1) append (a key already there moves to the
/// end), removal and access to the oldest: a doubly linked list threaded through a dictionary.
struct RecencyList<Key: Hashable> {
    private struct Links {
        var older: Key?
        var newer: Key?
    }

    private var links: [Key: Links] = [:]
    private var oldest: Key?
    private var newest: Key?

    /// How many keys it holds.
    var count: Int { links.count }

    /// Puts `key` at the newest end (moving it there if it is already in the list).
    mutating func append(_ key: Key) {
        remove(key)
        links[key] = Links(older: newest, newer: nil)
        if let newest { links[newest]?.newer = key } else { oldest = key }
        newest = key
        assert(links.count == 1 || links[key]?.older != nil)
    }

    /// Takes `key` out of the list, if it is there.
    mutating func remove(_ key: Key) {
        guard let link = links.removeValue(forKey: key) else { return }
        if let older = link.older { links[older]?.newer = link.newer } else { oldest = link.newer }
        if let newer = link.newer { links[newer]?.older = link.older } else { newest = link.older }
    }

    /// The oldest key that satisfies `predicate`, looking from the oldest on.
    func first(where predicate: (Key) -> Bool) -> Key? {
        var cursor = oldest
        while let key = cursor {
            if predicate(key) { return key }
            cursor = links[key]?.newer
        }
        return nil
    }

    /// Every key, oldest first.
    var keys: [Key] {
        var result: [Key] = []
        result.reserveCapacity(links.count)
        var cursor = oldest
        while let key = cursor {
            result.append(key)
            cursor = links[key]?.newer
        }
        return result
    }
}
