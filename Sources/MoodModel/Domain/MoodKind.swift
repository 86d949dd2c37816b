/// Whether an entry is a momentary emotion or the mood of a whole day (Apple's raw values 1 and 2).
public enum MoodKind: Int, Sendable, CaseIterable, Hashable {
    case momentaryEmotion = 1
    case dailyMood = 2

    /// Wire spelling: `momentary_emotion`, `daily_mood`.
    public var wireName: String { self == .momentaryEmotion ? "momentary_emotion" : "daily_mood" }

    /// Parses `momentary`, `momentary_emotion`, `momentaryEmotion`, `1`, `daily`, `daily_mood`, `dailyMood`, `2`.
    public init?(parsing text: String) {
        switch WordNormalizer.key(text) {
        case "momentary", "momentaryemotion", "1": self = .momentaryEmotion
        case "daily", "dailymood", "2": self = .dailyMood
        default: return nil
        }
    }
}

/// Where an entry came from.
public enum MoodSource: String, Sendable, CaseIterable, Hashable {
    case manual
    case healthkit
    case backend
    case `import`
    /// The backend API's `ai_analysis` source (code 4).
    case aiAnalysis = "ai_analysis"

    /// The on-disk code (`Specs/events.md`, *Entry body*): 0 manual, 1 healthkit, 2 backend, 3 import,
    /// 4 ai_analysis.
    package var code: UInt8 {
        switch self {
        case .manual: 0
        case .healthkit: 1
        case .backend: 2
        case .import: 3
        case .aiAnalysis: 4
        }
    }

    package init?(code: UInt8) {
        switch code {
        case 0: self = .manual
        case 1: self = .healthkit
        case 2: self = .backend
        case 3: self = .import
        case 4: self = .aiAnalysis
        default: return nil
        }
    }
}

/// Where the outbox sends entries.
public enum SyncDestination: String, Sendable, CaseIterable, Hashable, Comparable {
    case backend
    case healthkit

    package var code: UInt8 { self == .backend ? 0 : 1 }
    package init?(code: UInt8) {
        switch code {
        case 0: self = .backend
        case 1: self = .healthkit
        default: return nil
        }
    }

    /// The source of entries that came from this destination (never sent back to it).
    package var originSource: MoodSource { self == .backend ? .backend : .healthkit }

    public static func < (a: SyncDestination, b: SyncDestination) -> Bool { a.code < b.code }
}
