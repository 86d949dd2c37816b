/// An error of the mood domain or the ledger: a stable code, the field and rule where that applies, and a
/// description that never contains the user's notes.
public struct MoodError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error kind; each maps to one CLI exit code.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Input broke a validation rule (exit 65).
        public static let invalidInput = Code(rawValue: "invalid_input")
        /// The entry came from HealthKit and cannot be edited here (exit 65).
        public static let readOnly = Code(rawValue: "read_only")
        /// No such entry (exit 66).
        public static let notFound = Code(rawValue: "not_found")
        /// A stored event could not be decoded (exit 74).
        public static let corruptEvent = Code(rawValue: "corrupt_event")
        /// A stored event has a type or schema version this reader does not know: a newer version wrote it (exit 74).
        public static let newerVersion = Code(rawValue: "newer_version")
        /// A destination still holds a copy that must be deleted there first (exit 69).
        public static let heldElsewhere = Code(rawValue: "held_elsewhere")
    }

    /// What kind of error.
    public var code: Code
    /// The field concerned (`valence`, `notes`, `labels`…), if any.
    public var field: String?
    /// The rule that was broken, in words.
    public var rule: String

    /// Creates an error.
    public init(code: Code, field: String?, rule: String) {
        self.code = code
        self.field = field
        self.rule = rule
    }

    /// An invalid-input error for `field` breaking `rule`.
    public static func invalid(_ field: String, _ rule: String) -> MoodError {
        MoodError(code: .invalidInput, field: field, rule: rule)
    }

    public var description: String {
        if let field, code != .corruptEvent, code != .newerVersion { return "invalid \(field): \(rule)" }
        return rule
    }
}
