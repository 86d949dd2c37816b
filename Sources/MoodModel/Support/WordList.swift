/// An ordered, duplicate-free list of vocabulary words, stored inline when it can be.
///
/// Up to eight of Apple's words are packed into one `UInt64` (7 bits each, count in the low 4 bits): no heap
/// allocation, no reference counting. Lists with custom words or more than eight words fall back to an array.
/// The representation is canonical (packed whenever possible), so `==` compares contents.
package struct WordList<Domain: VocabularyDomain>: Sendable, Equatable, Hashable {
    @usableFromInline var packed: UInt64 = 0
    @usableFromInline var spilled: [VocabularyWord<Domain>]?

    init() {}

    package init(_ words: [VocabularyWord<Domain>]) {
        guard words.count <= 8, words.allSatisfy({ !$0.isCustom }) else {
            spilled = words
            return
        }
        var value = UInt64(words.count)
        for (index, word) in words.enumerated() { value |= UInt64(word.appleRawValue!) << (4 + 7 * UInt64(index)) }
        packed = value
    }

    /// Builds a list of Apple raw values without an intermediate array (the codec's hot path).
    package init?(rawValues: UnsafeRawBufferPointer) {
        guard rawValues.count <= 8 else { return nil }
        var value = UInt64(rawValues.count)
        for (index, raw) in rawValues.enumerated() {
            guard raw != 0 else { return nil }
            value |= UInt64(raw) << (4 + 7 * UInt64(index))
        }
        packed = value
    }

    /// A list in its packed form.
    @inline(__always)
    init(packed: UInt64) { self.packed = packed }

    var count: Int { spilled?.count ?? Int(packed & 0xF) }
    var isEmpty: Bool { count == 0 }

    /// The words as an array (allocates; hot paths use ``forEach(_:)`` and ``contains(_:)``).
    var array: [VocabularyWord<Domain>] {
        if let spilled { return spilled }
        var words: [VocabularyWord<Domain>] = []
        words.reserveCapacity(count)
        forEach { words.append($0) }
        return words
    }

    @inlinable @inline(__always)
    package func forEach(_ body: (VocabularyWord<Domain>) -> Void) {
        if let spilled {
            for word in spilled { body(word) }
            return
        }
        var value = packed >> 4
        for _ in 0..<(packed & 0xF) {
            body(VocabularyWord(packedRaw: UInt8(value & 0x7F)))
            value >>= 7
        }
    }

    /// This list in a narrower packing (count in the low 3 bits, then `width` bits a word: at most five of Apple's
    /// words whose raw values fit), or `nil` when it does not fit.
    @inline(__always)
    func compact(width: UInt64) -> UInt64? {
        guard spilled == nil else { return nil }
        let count = packed & 0xF
        guard count <= 5 else { return nil }
        var result = count
        var value = packed >> 4
        for index in 0..<count {
            let raw = value & 0x7F
            guard raw < 1 << width else { return nil }
            result |= raw << (3 + width * index)
            value >>= 7
        }
        return result
    }

    /// A list from its narrower packing (what ``compact(width:)`` returned).
    @inline(__always)
    init(compact: UInt64, width: UInt64) {
        let count = compact & 0x7
        var value = compact >> 3
        var packed = count
        for index in 0..<count {
            packed |= (value & (1 << width - 1)) << (4 + 7 * index)
            value >>= width
        }
        self.init(packed: packed)
    }

    @inlinable
    package func contains(_ word: VocabularyWord<Domain>) -> Bool {
        if let spilled { return spilled.contains(word) }
        guard let raw = word.appleRawValue else { return false }
        var value = packed >> 4
        for _ in 0..<(packed & 0xF) {
            if value & 0x7F == UInt64(raw) { return true }
            value >>= 7
        }
        return false
    }
}

extension VocabularyWord {
    /// A canonical word from a raw value already known to be valid.
    @usableFromInline @inline(__always)
    init(packedRaw raw: UInt8) { storage = .apple(raw) }
}
