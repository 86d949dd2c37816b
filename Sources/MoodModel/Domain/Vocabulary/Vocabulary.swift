import Foundation  // NFC (precomposedStringWithCanonicalMapping): the standard library has no public normaliser

/// The words of one vocabulary (labels or associations): Apple's canonical names in Apple's order, the nearest
/// Apple word for words an edge that cannot carry them translates, and how the words are spelt on the wire.
public protocol VocabularyDomain: Sendable {
    /// Canonical camelCase names; index + 1 is Apple's raw value.
    static var canonicalNames: [String] { get }
    /// Other words → the nearest canonical name, for the edges whose vocabulary is Apple's fixed list (the HealthKit
    /// port). Parsing never applies it: a different word is kept as itself (`Specs/mood-model.md`, *Words*).
    static var nearestApple: [String: String] { get }
    /// The field name used in validation errors ("labels", "associations").
    static var fieldName: String { get }
}

/// A word of a vocabulary: one of Apple's canonical words or a custom word the user brought.
///
/// Custom words are kept (lowercased, trimmed, at most 50 characters), never silently dropped.
public struct VocabularyWord<Domain: VocabularyDomain>: Hashable, Sendable, Comparable, CustomStringConvertible {
    package enum Storage: Hashable, Sendable {
        case apple(UInt8)
        case custom(String)
    }

    package let storage: Storage

    /// The word with Apple's raw value `rawValue`, if there is one.
    public init?(appleRawValue rawValue: Int) {
        guard rawValue >= 1, rawValue <= Domain.canonicalNames.count else { return nil }
        storage = .apple(UInt8(rawValue))
    }

    package init(custom word: String) { storage = .custom(word) }

    /// Apple's raw value, or `nil` for a custom word.
    public var appleRawValue: Int? {
        if case .apple(let value) = storage { return Int(value) }
        return nil
    }

    /// Whether this word is not one of Apple's.
    public var isCustom: Bool { appleRawValue == nil }

    /// The canonical camelCase name (`currentEvents`), or the custom word.
    public var name: String {
        switch storage {
        case .apple(let value): return Domain.canonicalNames[Int(value) - 1]
        case .custom(let word): return word
        }
    }

    /// The wire spelling: snake_case for canonical words (`current_events`), the custom word as is.
    public var wireName: String {
        switch storage {
        case .apple(let value): return VocabularyTables.tables(for: Domain.self).wireNames[Int(value) - 1]
        case .custom(let word): return word
        }
    }

    public var description: String { wireName }

    /// The wire spelling as a JSON string.
    func writeJSON(to out: inout JSONBytes) {
        switch storage {
        case .apple(let value): out.fragment(VocabularyTables.tables(for: Domain.self).json[Int(value) - 1])
        case .custom(let word): out.string(word)
        }
    }

    /// Every canonical word, in Apple's order.
    public static var allCanonical: [VocabularyWord] {
        (1...Domain.canonicalNames.count).map { VocabularyWord(appleRawValue: $0)! }
    }

    /// Parses user or wire input: case-, space-, underscore- and hyphen-insensitive for canonical words; anything
    /// else — another word, even one with a near Apple word — becomes a custom word, kept as the user chose it.
    /// - Parameter text: the input word.
    /// - Returns: the word.
    /// - Throws: ``MoodError`` when the word is empty or longer than 50 characters.
    public static func parse(_ text: String) throws(MoodError) -> VocabularyWord {
        let key = WordNormalizer.key(text)
        if let raw = lookup[key] { return VocabularyWord(appleRawValue: raw)! }
        let custom = WordNormalizer.custom(text)
        guard !custom.isEmpty else {
            throw MoodError.invalid(Domain.fieldName, "a word must not be empty")
        }
        guard custom.count <= 50, text.unicodeScalars.count <= 50 else {
            throw MoodError.invalid(Domain.fieldName, "a word must be at most 50 characters")
        }
        return VocabularyWord(custom: custom)
    }

    /// Normalised key → Apple raw value, for canonical names.
    private static var lookup: [String: Int] { VocabularyTables.tables(for: Domain.self).lookup }

    /// The Apple word an edge with Apple's fixed vocabulary sends for this one: itself when canonical, else the
    /// documented nearest word (``VocabularyDomain/nearestApple``), else `nil` (it cannot be carried).
    public var nearestApple: VocabularyWord? {
        switch storage {
        case .apple: return self
        case .custom(let word):
            return VocabularyTables.tables(for: Domain.self).nearestLookup[WordNormalizer.key(word)].flatMap {
                VocabularyWord(appleRawValue: $0)
            }
        }
    }

    /// Apple's word closest to this one: itself when canonical, else the documented nearest word
    /// (``VocabularyDomain/nearestApple``), else the canonical word fewest single-letter edits away from it (its
    /// normalised spelling; the first in Apple's order on a tie) — `calmm` → `calm`, `anxios` → `anxious`.
    public var closestApple: VocabularyWord {
        if let nearest = nearestApple { return nearest }
        let key = Array(WordNormalizer.key(name).unicodeScalars)
        var best = (distance: Int.max, raw: 1)
        for (index, canonical) in Domain.canonicalNames.enumerated() {
            let distance = Self.editDistance(key, Array(WordNormalizer.key(canonical).unicodeScalars))
            if distance < best.distance { best = (distance, index + 1) }
        }
        return VocabularyWord(appleRawValue: best.raw)!
    }

    /// Levenshtein distance (insertions, deletions, substitutions), on words of at most 50 scalars.
    private static func editDistance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        var previous = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in 1...max(1, b.count) where !b.isEmpty {
                current[j] = Swift.min(
                    previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return a.isEmpty ? b.count : previous[b.count]
    }

    /// Canonical words first (in Apple's order), then custom words alphabetically.
    public static func < (a: VocabularyWord, b: VocabularyWord) -> Bool {
        switch (a.storage, b.storage) {
        case (.apple(let x), .apple(let y)): return x < y
        case (.apple, .custom): return true
        case (.custom, .apple): return false
        case (.custom(let x), .custom(let y)): return x < y
        }
    }
}

/// Tables built once per vocabulary.
struct VocabularyTables: Sendable {
    /// Normalised key → Apple raw value, for canonical names (and their spelling variants).
    let lookup: [String: Int]
    /// Normalised key of another word → the raw value of its nearest Apple word (``VocabularyDomain/nearestApple``).
    let nearestLookup: [String: Int]
    /// The wire spellings of the canonical words, in Apple's order (computed once: they are on every response).
    let wireNames: [String]
    /// The wire spellings as quoted JSON strings, ready to copy into a response.
    let json: [[UInt8]]

    static let labels = VocabularyTables(LabelDomain.self)
    static let associations = VocabularyTables(AssociationDomain.self)

    static func tables<D: VocabularyDomain>(for domain: D.Type) -> VocabularyTables {
        domain == LabelDomain.self ? labels : associations
    }

    private init<D: VocabularyDomain>(_ domain: D.Type) {
        var table: [String: Int] = [:]
        for (index, name) in D.canonicalNames.enumerated() { table[WordNormalizer.key(name)] = index + 1 }
        lookup = table
        var nearest: [String: Int] = [:]
        for (word, target) in D.nearestApple { nearest[WordNormalizer.key(word)] = table[WordNormalizer.key(target)]! }
        nearestLookup = nearest
        wireNames = D.canonicalNames.map(WordNormalizer.snakeCase)
        json = wireNames.map { name in
            var bytes: [UInt8] = []
            JSONValue.quote(name, into: &bytes)
            return bytes
        }
    }
}

/// How words are compared and kept.
package enum WordNormalizer {
    /// Lowercased with spaces, underscores and hyphens removed: `Current Events` → `currentevents`.
    static func key(_ text: String) -> String {
        if let key = asciiWords(text, separator: nil) { return key }
        return String(text.lowercased().unicodeScalars.filter { !$0.properties.isWhitespace && $0 != "_" && $0 != "-" })
    }

    /// Lowercased, trimmed, inner whitespace runs collapsed to one space.
    package static func custom(_ text: String) -> String {
        if let custom = asciiWords(text, separator: 0x20) { return custom }
        return nfc(text.lowercased().split(whereSeparator: { $0.isWhitespace }).joined(separator: " "))
    }

    /// ``key(_:)`` (no `separator`: white space, `_` and `-` dropped) or ``custom(_:)`` (white space runs become one
    /// `separator`, none at either end) of an ASCII text, from its bytes; nil for any other text. ASCII's white
    /// space is tab, line feed, vertical tab, form feed, carriage return and space, as Unicode's is for these bytes.
    private static func asciiWords(_ text: String, separator: UInt8?) -> String? {
        var text = text
        return text.withUTF8 { bytes -> String? in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            return String(unsafeUninitializedCapacity: bytes.count) { out in
                var count = 0
                var pendingSpace = false
                for byte in bytes {
                    if byte == 0x20 || (0x09...0x0D).contains(byte) {
                        pendingSpace = count > 0
                        continue
                    }
                    if separator == nil, byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") { continue }
                    if pendingSpace, let separator {
                        out[count] = separator
                        count += 1
                    }
                    pendingSpace = false
                    out[count] = (0x41...0x5A).contains(byte) ? byte + 0x20 : byte
                    count += 1
                }
                return count
            }
        }
    }

    /// Unicode Normalization Form C: canonically equivalent spellings (`é` and `e` + U+0301) become one, so a word
    /// typed on two keyboards is one word everywhere (entries, analytics, filters). ASCII is already NFC.
    static func nfc(_ text: String) -> String {
        text.utf8.allSatisfy { $0 < 0x80 } ? text : text.precomposedStringWithCanonicalMapping
    }

    /// `currentEvents` → `current_events`.
    static func snakeCase(_ name: String) -> String {
        var result = ""
        for character in name {
            if character.isUppercase {
                result += "_" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }
}

/// Apple's `HKStateOfMind.Label` vocabulary.
public enum LabelDomain: VocabularyDomain {
    public static let canonicalNames = [
        "amazed", "amused", "angry", "anxious", "ashamed", "brave", "calm", "content", "disappointed", "discouraged",
        "disgusted", "embarrassed", "excited", "frustrated", "grateful", "guilty", "happy", "hopeless", "irritated",
        "jealous", "joyful", "lonely", "passionate", "peaceful", "proud", "relieved", "sad", "scared", "stressed",
        "surprised", "worried", "annoyed", "confident", "drained", "hopeful", "indifferent", "overwhelmed",
        "satisfied"
    ]
    public static let nearestApple = ["depressed": "hopeless", "energetic": "excited", "tired": "drained"]
    public static let fieldName = "labels"
}

/// Apple's `HKStateOfMind.Association` vocabulary.
public enum AssociationDomain: VocabularyDomain {
    public static let canonicalNames = [
        "community", "currentEvents", "dating", "education", "family", "fitness", "friends", "health", "hobbies",
        "identity", "money", "partner", "selfCare", "spirituality", "tasks", "travel", "work", "weather"
    ]
    public static let nearestApple = [
        "exercise": "fitness", "sport": "fitness", "social": "friends", "socialInteraction": "friends",
        "finances": "money"
    ]
    public static let fieldName = "associations"
}

/// One of Apple's 38 state-of-mind labels, or a custom word.
public typealias MoodLabel = VocabularyWord<LabelDomain>
/// One of Apple's 18 state-of-mind associations, or a custom word.
public typealias MoodAssociation = VocabularyWord<AssociationDomain>

extension VocabularyWord where Domain == LabelDomain {
    static func named(_ name: String) -> MoodLabel { try! parse(name) }
}

extension VocabularyWord where Domain == AssociationDomain {
    static func named(_ name: String) -> MoodAssociation { try! parse(name) }
}
