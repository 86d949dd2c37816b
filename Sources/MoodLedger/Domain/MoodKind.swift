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

    var code: UInt8 { UInt8(MoodSource.allCases.firstIndex(of: self)!) }
    init?(code: UInt8) {
        guard Int(code) < MoodSource.allCases.count else { return nil }
        self = MoodSource.allCases[Int(code)]
    }
}

/// Where the outbox sends entries.
public enum SyncDestination: String, Sendable, CaseIterable, Hashable, Comparable {
    case backend
    case healthkit

    var code: UInt8 { self == .backend ? 0 : 1 }
    init?(code: UInt8) {
        switch code {
        case 0: self = .backend
        case 1: self = .healthkit
        default: return nil
        }
    }

    /// The source of entries that came from this destination (never sent back to it).
    var originSource: MoodSource { self == .backend ? .backend : .healthkit }

    public static func < (a: SyncDestination, b: SyncDestination) -> Bool { a.code < b.code }
}
