/// How a label or association figures in a period.
public struct WordReport: Sendable, Equatable {
    /// Wire name.
    public var word: String
    public var count: Int
    /// count / entries in the period × 100, one decimal.
    public var percentage: Double
    public var averageValence: Double?
    /// For associations: positive, negative or neutral against the period's average (±0.1).
    public var valenceImpact: String?

    func json(key: String) -> JSONValue {
        var pairs: [(String, JSONValue)] = [
            (key, .string(word)), ("count", .int(Int64(count))),
            ("percentage", .double(percentage)),
            ("average_valence", .rounded(averageValence))
        ]
        if let valenceImpact { pairs.append(("valence_impact", .string(valenceImpact))) }
        return .object(pairs)
    }
}

/// The daily aggregate of the backend API.
public struct DayReport: Sendable, Equatable {
    public var date: LocalDate
    public var entryCount: Int
    public var averageValence: Double?
    public var valenceRange: (min: Double, max: Double)?
    public var topLabels: [WordReport]
    public var topAssociations: [WordReport]
    /// The day's entries, newest first, when asked for.
    public var entries: [MoodEntry]?

    public static func == (a: DayReport, b: DayReport) -> Bool {
        a.date == b.date && a.entryCount == b.entryCount && a.averageValence == b.averageValence
            && a.valenceRange?.min == b.valenceRange?.min && a.valenceRange?.max == b.valenceRange?.max
            && a.topLabels == b.topLabels && a.topAssociations == b.topAssociations && a.entries == b.entries
    }

    public var json: JSONValue {
        var pairs: [(String, JSONValue)] = [
            ("date", .string(date.description)),
            ("entry_count", .int(Int64(entryCount))),
            ("average_valence", .rounded(averageValence)),
            (
                "valence_range",
                valenceRange.map { .object([("min", .rounded($0.min)), ("max", .rounded($0.max))]) } ?? .null
            ),
            ("top_labels", .array(topLabels.map { $0.json(key: "label") })),
            ("top_associations", .array(topAssociations.map { $0.json(key: "association") }))
        ]
        if let entries { pairs.append(("entries", .array(entries.map(\.json)))) }
        return .object(pairs)
    }
}

/// Trends over a period.
public struct TrendReport: Sendable, Equatable {
    public var from: LocalDate
    public var to: LocalDate
    public var totalEntries: Int
    public var averageValence: Double?
    /// improving, stable, declining or insufficient_data.
    public var direction: String
    public var statistics: ValenceStatistics
    /// Days with entries: (date, entry count, average valence).
    public var daily: [DailyPoint]

    /// `{"start_date", "end_date", "total_entries", "average_valence", "trend_direction", "valence_statistics",
    /// "daily_data": [{"date", "entry_count", "average_valence", "top_labels"}]}` (the backend API's shape).
    public var json: JSONValue {
        .object([
            ("start_date", .string(from.description)), ("end_date", .string(to.description)),
            ("total_entries", .int(Int64(totalEntries))), ("average_valence", .rounded(averageValence)),
            ("trend_direction", .string(direction)), ("valence_statistics", statistics.json),
            ("daily_data", .array(daily.map(\.json)))
        ])
    }
}

/// One day of a series.
public struct DailyPoint: Sendable, Equatable {
    public var date: LocalDate
    public var entryCount: Int
    public var averageValence: Double?
    /// The day's most used labels (up to 3).
    public var topLabels: [WordReport] = []

    var json: JSONValue {
        .object([
            ("date", .string(date.description)), ("entry_count", .int(Int64(entryCount))),
            ("average_valence", .rounded(averageValence)),
            ("top_labels", .array(topLabels.map { $0.json(key: "label") }))
        ])
    }
}

/// Label or association analytics over a period.
public struct WordAnalytics: Sendable, Equatable {
    /// "label" or "association".
    public var kind: String
    /// The period (either end `nil`: open).
    public var from: LocalDate?
    public var to: LocalDate?
    public var totalEntries: Int
    /// How many distinct words the period has (before any limit).
    public var unique: Int
    /// The most used words, at most the limit asked for.
    public var words: [WordReport]

    /// `{"period": {"from", "to"}, "total_entries", "unique_<kind>s", "top_<kind>s": [...]}` (the backend API's shape).
    public var json: JSONValue {
        .object([
            (
                "period",
                .object([
                    ("from", .optional(from) { .string($0.description) }),
                    ("to", .optional(to) { .string($0.description) })
                ])
            ),
            ("total_entries", .int(Int64(totalEntries))), ("unique_\(kind)s", .int(Int64(unique))),
            ("top_\(kind)s", .array(words.map { $0.json(key: kind) }))
        ])
    }
}

/// A 7D/30D/90D/1Y/custom summary.
public struct RangeSummary: Sendable, Equatable {
    public var range: String
    public var from: LocalDate
    public var to: LocalDate
    public var entryCount: Int
    public var averageValence: Double?
    public var highest: MoodEntry?
    public var lowest: MoodEntry?
    public var latest: MoodEntry?
    /// The older app's 1–10 view: the mean of the entries' scores (one decimal), and the extremes.
    public var averageScore: Double?
    public var highestScore: Int?
    public var lowestScore: Int?

    public var json: JSONValue {
        .object([
            ("range", .string(range)), ("from", .string(from.description)), ("to", .string(to.description)),
            ("entry_count", .int(Int64(entryCount))), ("average_valence", .rounded(averageValence)),
            ("average_score", .optional(averageScore) { .double(($0 * 10).rounded() / 10) }),
            ("highest_score", .optional(highestScore) { .int(Int64($0)) }),
            ("lowest_score", .optional(lowestScore) { .int(Int64($0)) }),
            ("highest", .optional(highest) { $0.json }), ("lowest", .optional(lowest) { $0.json }),
            ("latest", .optional(latest) { $0.json })
        ])
    }
}
