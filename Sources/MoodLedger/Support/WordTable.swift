/// Values per word of a vocabulary: Apple's words in a fixed array by raw value, custom words in a dictionary.
/// Counting a canonical word costs an array index, not a hash.
public struct WordTable<Domain: VocabularyDomain, Value: Sendable & Equatable>: Sendable, Equatable {
    private var canonical: [Value?]
    private var custom: [String: Value] = [:]

    public init() { canonical = Array(repeating: nil, count: Domain.canonicalNames.count + 1) }

    /// The value of a word, if any.
    public subscript(word: VocabularyWord<Domain>) -> Value? {
        get {
            switch word.storage {
            case .apple(let raw): return canonical[Int(raw)]
            case .custom(let text): return custom[text]
            }
        }
        set {
            switch word.storage {
            case .apple(let raw): canonical[Int(raw)] = newValue
            case .custom(let text): custom[text] = newValue
            }
        }
    }

    /// Mutates a word's value in place (creating it from `default` first), then drops it if `isEmpty` says so.
    @inline(__always)
    public mutating func modify(_ word: VocabularyWord<Domain>, default make: @autoclosure () -> Value,
                                removeIf isEmpty: (Value) -> Bool, _ body: (inout Value) -> Void) {
        switch word.storage {
        case .apple(let raw):
            let index = Int(raw)
            if canonical[index] == nil { canonical[index] = make() }
            body(&canonical[index]!)
            if isEmpty(canonical[index]!) { canonical[index] = nil }
        case .custom(let text):
            body(&custom[text, default: make()])
            if isEmpty(custom[text]!) { custom[text] = nil }
        }
    }

    /// Every (word, value): canonical words in Apple's order, then custom words alphabetically.
    public var pairs: [(VocabularyWord<Domain>, Value)] {
        var result: [(VocabularyWord<Domain>, Value)] = []
        for raw in 1..<canonical.count {
            if let value = canonical[raw] { result.append((VocabularyWord(appleRawValue: raw)!, value)) }
        }
        for text in custom.keys.sorted() { result.append((VocabularyWord(custom: text), custom[text]!)) }
        return result
    }

    /// Whether no word has a value.
    /// How many words hold a value.
    public var count: Int { custom.count + canonical.reduce(0) { $0 + ($1 == nil ? 0 : 1) } }

    public var isEmpty: Bool { custom.isEmpty && !canonical.contains { $0 != nil } }
}
