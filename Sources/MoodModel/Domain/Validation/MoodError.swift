import Foundation  // LocalizedError: what an app's alert shows.

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
        if let field, code == .invalidInput || code == .readOnly { return "invalid \(field): \(rule)" }
        return rule
    }
}

extension MoodError: LocalizedError {
    /// A sentence about the user's data, for an alert: the field and the rule, never a note's text.
    public var errorDescription: String? {
        switch code {
        case .invalidInput: return "The \(Self.spoken(field)) is not valid: \(rule)."
        case .readOnly: return "This entry came from Apple Health and can only be changed in the Health app."
        case .notFound: return "That mood entry no longer exists (\(rule))."
        case .corruptEvent: return "The mood ledger's data is damaged: \(rule)."
        case .newerVersion: return "The mood ledger was written by a newer version of this app: \(rule)."
        case .heldElsewhere: return "A copy of this entry is still on the server: \(rule)."
        default: return "The mood ledger refused the change: \(rule)."
        }
    }

    /// What the user can do about it, where there is something.
    public var recoverySuggestion: String? {
        switch code {
        case .invalidInput: return "Correct the \(Self.spoken(field)) and try again."
        case .readOnly: return "Open the Health app to change or delete it."
        case .corruptEvent: return "Repair the ledger: the damaged part is kept in a copy."
        case .newerVersion: return "Update the app to the newest version."
        case .heldElsewhere: return "Sync after deleting it, then erase it."
        default: return nil
        }
    }

    /// A field's name as words (`entry_id` → `entry id`).
    private static func spoken(_ field: String?) -> String {
        guard let field else { return "input" }
        return field.replacingOccurrences(of: "_", with: " ")
    }
}
