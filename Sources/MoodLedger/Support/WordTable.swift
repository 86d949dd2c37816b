/// A value a ``WordTable`` holds: one value of the type stands for "no value" in the table's fixed slots.
package protocol WordTableValue: Sendable, Equatable {
    /// The slot value of a word without a value (never stored as a value).
    static var absent: Self { get }
    /// Whether this is ``absent``.
    var isAbsent: Bool { get }
}

/// Values per word of a vocabulary: Apple's words in a fixed array by raw value, custom words in a dictionary.
/// Counting a canonical word costs an array index, not a hash.
///
/// The fixed slots hold the values themselves, an absent word as ``WordTableValue/absent``, not optionals: a
/// replay holds two tables for each of thousands of days, and an optional's tag would widen each slot by a word.
package struct WordTable<Domain: VocabularyDomain, Value: WordTableValue>: Sendable, Equatable {
    private var canonical: [Value]
    private var custom: [String: Value] = [:]

    package init() { canonical = Array(repeating: .absent, count: Domain.canonicalNames.count + 1) }

    /// The value of a word, if any.
    package subscript(word: VocabularyWord<Domain>) -> Value? {
        get {
            switch word.storage {
            case .apple(let raw):
                let value = canonical[Int(raw)]
                return value.isAbsent ? nil : value
            case .custom(let text): return custom[text]
            }
        }
        set {
            precondition(newValue?.isAbsent != true, "a word table's absent value stored as a value")
            switch word.storage {
            case .apple(let raw): canonical[Int(raw)] = newValue ?? .absent
            case .custom(let text): custom[text] = newValue
            }
        }
    }

    /// Mutates a word's value in place (creating it from `default` first), then drops it if `isEmpty` says so.
    @inline(__always)
    package mutating func modify(
        _ word: VocabularyWord<Domain>, default make: @autoclosure () -> Value,
        removeIf isEmpty: (Value) -> Bool, _ body: (inout Value) -> Void
    ) {
        switch word.storage {
        case .apple(let raw):
            let index = Int(raw)
            if canonical[index].isAbsent { canonical[index] = make() }
            body(&canonical[index])
            precondition(!canonical[index].isAbsent, "a word table's absent value stored as a value")
            if isEmpty(canonical[index]) { canonical[index] = .absent }
        case .custom(let text):
            body(&custom[text, default: make()])
            if isEmpty(custom[text]!) { custom[text] = nil }
        }
    }

    /// Calls `body` with every (word, value) where the table holds it, building no list: canonical words in Apple's
    /// order, then custom words in no set order.
    /// - Parameter body: called once per word that has a value.
    @inline(__always)
    package func forEach(_ body: (VocabularyWord<Domain>, Value) -> Void) {
        canonical.withUnsafeBufferPointer { slots in
            for raw in 1..<slots.count where !slots[raw].isAbsent {
                body(VocabularyWord(appleRawValue: raw)!, slots[raw])
            }
        }
        for (text, value) in custom { body(VocabularyWord(custom: text), value) }
    }

    /// Every (word, value): canonical words in Apple's order, then custom words alphabetically.
    package var pairs: [(VocabularyWord<Domain>, Value)] {
        var result: [(VocabularyWord<Domain>, Value)] = []
        for raw in 1..<canonical.count {
            let value = canonical[raw]
            if !value.isAbsent { result.append((VocabularyWord(appleRawValue: raw)!, value)) }
        }
        for text in custom.keys.sorted() { result.append((VocabularyWord(custom: text), custom[text]!)) }
        return result
    }

    /// How many words hold a value.
    package var count: Int { custom.count + canonical.reduce(0) { $0 + ($1.isAbsent ? 0 : 1) } }

    /// Whether no word has a value.
    package var isEmpty: Bool { custom.isEmpty && canonical.allSatisfy(\.isAbsent) }
}

extension WordTable where Value == WordStat {
    /// Counts one entry carrying `word`, with its valence if it has one: ``modify(_:default:removeIf:_:)`` for a
    /// build that only adds (a count it raises is never empty), an Apple word's slot reached through one pointer (a
    /// bulk build of the analytics counts two or three words for each of a million entries).
    @inline(__always)
    mutating func count(_ word: VocabularyWord<Domain>, valence q: Int64?) {
        switch word.storage {
        case .apple(let raw):
            canonical.withUnsafeMutableBufferPointer { slots in
                let slot = slots.baseAddress! + Int(raw)
                if slot.pointee.isAbsent { slot.pointee = WordStat() }
                slot.pointee.add(q, 1)
            }
        case .custom: modify(word, default: WordStat(), removeIf: \.isEmpty) { $0.add(q, 1) }
        }
    }
}
