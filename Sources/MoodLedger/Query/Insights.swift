/// Averages by weekday and time of day, streaks, factor effects and words often together, over a period
/// (`Specs/analytics.md`, *Insights*). Computed from the projections at query time, so exact after any update or
/// delete.
public struct InsightsReport: Sendable, Equatable {
    /// One bucket of averages.
    public struct Bucket: Sendable, Equatable {
        public var name: String
        public var entries = 0
        public var valenceCount = 0
        public var valenceSum = 0.0
        public var scoreCount = 0
        public var scoreSum = 0
        public var averageValence: Double? { valenceCount == 0 ? nil : valenceSum / Double(valenceCount) }
        public var averageScore: Double? { scoreCount == 0 ? nil : Double(scoreSum) / Double(scoreCount) }
    }

    /// One word's association with the day's mood.
    public struct Factor: Sendable, Equatable {
        /// `association`, `tag` or `label`.
        public var kind: String
        public var word: String
        public var daysWith: Int
        public var daysWithout: Int
        public var meanWith: Double?
        public var meanWithout: Double?
        /// mean with − mean without, and its 95 % Welch interval, when both sides have at least 3 days.
        public var interval: WelchInterval?
        public var enoughData: Bool { interval != nil }
    }

    /// Two words on the same entry more often than chance.
    public struct Pair: Sendable, Equatable {
        public var first: String
        public var second: String
        public var count: Int
        /// count × N / (count(first) × count(second)); above 1 means more often than chance.
        public var lift: Double
    }

    public var from: LocalDate
    public var to: LocalDate
    /// Monday first.
    public var weekdays: [Bucket]
    /// night 0–6, morning 6–12, afternoon 12–18, evening 18–24 (the entry's local time).
    public var timesOfDay: [Bucket]
    public var currentStreak: Int
    public var longestStreak: Int
    public var longestStreakStart: LocalDate?
    /// Sorted by effect size (|difference|, largest first), those without enough data last.
    public var factors: [Factor]
    public var pairs: [Pair]
    /// The least number of entries a pair must share to be listed.
    public static let minimumPairSupport = 3
    /// The least number of days on each side for a factor's effect to be shown (Bearable's rule).
    public static let minimumFactorDays = 3

    public static let weekdayNames = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
    public static let timeOfDayNames = ["night", "morning", "afternoon", "evening"]
}

extension LocalDate {
    /// 0 = Monday … 6 = Sunday (1970-01-01 was a Thursday).
    public var weekdayIndex: Int { Int((Int64(daysSinceEpoch) + 3).floorModulo(7)) }
}

extension Int64 {
    func floorModulo(_ m: Int64) -> Int64 { ((self % m) + m) % m }
}

extension LedgerState {
    /// Insights over `from...to` (local dates, inclusive).
    /// - Throws: ``MoodError`` `invalid_input` when `from` is after `to`.
    ///
    /// Long because one pass over the period's days fills every bucket (weekdays, times of day, words) at once.
    public func insights(from: LocalDate, to: LocalDate) throws(MoodError) -> InsightsReport {
        guard from <= to else { throw .invalid("from", "must not be after to") }
        var weekdays = InsightsReport.weekdayNames.map { InsightsReport.Bucket(name: $0) }
        var times = InsightsReport.timeOfDayNames.map { InsightsReport.Bucket(name: $0) }
        // Per day: its mean valence (the analytics projection's) and the words of its entries.
        var dayMeans: [(LocalDate, Double)] = []
        var dayWords: [Set<String>] = []
        var entryWords: [Set<String>] = []
        for day in activeDays(from: from, to: to) {
            var words = Set<String>()
            for entry in entries.entries(on: day) {
                let minutes = Int(
                    (entry.loggedAt.milliseconds + Int64(entry.loggedAt.utcOffsetMinutes) * 60_000).floorModulo(
                        86_400_000) / 60_000)
                for index in [day.weekdayIndex + 0, 7 + minutes / 360] {
                    func add(_ bucket: inout InsightsReport.Bucket) {
                        bucket.entries += 1
                        if let valence = entry.valence { bucket.valenceCount += 1; bucket.valenceSum += valence }
                        if let score = entry.score { bucket.scoreCount += 1; bucket.scoreSum += score }
                    }
                    if index < 7 { add(&weekdays[index]) } else { add(&times[index - 7]) }
                }
                let these = Set(
                    entry.labels.map { "label:" + $0.wireName }
                        + entry.associations.map { "association:" + $0.wireName }
                        + entry.tags.map { "tag:" + $0.lowercased() })
                entryWords.append(these)
                words.formUnion(these)
            }
            if let mean = analytics.days[day]?.averageValence {
                dayMeans.append((day, mean))
                dayWords.append(words)
            }
        }
        // Streaks: runs of consecutive days with at least one entry.
        let days = Array(activeDays(from: from, to: to))
        var longest = 0
        var longestStart: LocalDate?
        var run = 0
        var runStart: LocalDate?
        for (index, day) in days.enumerated() {
            if index > 0, days[index - 1].advanced(by: 1) == day { run += 1 } else { run = 1; runStart = day }
            if run > longest { longest = run; longestStart = runStart }
        }
        var current = 0
        if let last = days.last, last == to || last == to.advanced(by: -1) {
            current = 1
            var index = days.count - 1
            while index > 0, days[index - 1].advanced(by: 1) == days[index] { current += 1; index -= 1 }
        }
        // Factor effects over days with a mean valence.
        var factors: [InsightsReport.Factor] = []
        let allWords = dayWords.reduce(into: Set<String>()) { $0.formUnion($1) }
        for key in allWords.sorted() {
            var with: [Double] = []
            var without: [Double] = []
            for (index, (_, mean)) in dayMeans.enumerated() {
                if dayWords[index].contains(key) { with.append(mean) } else { without.append(mean) }
            }
            let parts = key.split(separator: ":", maxSplits: 1)
            let enough =
                with.count >= InsightsReport.minimumFactorDays && without.count >= InsightsReport.minimumFactorDays
            factors.append(
                InsightsReport.Factor(
                    kind: String(parts[0]), word: String(parts[1]), daysWith: with.count, daysWithout: without.count,
                    meanWith: with.isEmpty ? nil : with.reduce(0, +) / Double(with.count),
                    meanWithout: without.isEmpty ? nil : without.reduce(0, +) / Double(without.count),
                    interval: enough ? WelchInterval.of(with, without) : nil))
        }
        factors.sort { a, b in
            switch (a.interval, b.interval) {
            case (let x?, let y?):
                return abs(x.difference) != abs(y.difference)
                    ? abs(x.difference) > abs(y.difference) : (a.kind, a.word) < (b.kind, b.word)
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return (a.kind, a.word) < (b.kind, b.word)
            }
        }
        // Often together: pairs sharing entries, with lift.
        var single: [String: Int] = [:]
        var pairCounts: [String: Int] = [:]
        for words in entryWords {
            let sorted = words.sorted()
            for word in sorted { single[word, default: 0] += 1 }
            for i in sorted.indices {
                for j in sorted.indices where j > i { pairCounts[sorted[i] + "\u{0}" + sorted[j], default: 0] += 1 }
            }
        }
        let total = Double(entryWords.count)
        var pairs: [InsightsReport.Pair] = []
        for (key, count) in pairCounts where count >= InsightsReport.minimumPairSupport {
            let names = key.split(separator: "\u{0}").map(String.init)
            let lift = Double(count) * total / (Double(single[names[0]]!) * Double(single[names[1]]!))
            if lift > 1 {
                pairs.append(InsightsReport.Pair(first: names[0], second: names[1], count: count, lift: lift))
            }
        }
        pairs.sort { ($0.lift, $0.count, $1.first, $1.second) > ($1.lift, $1.count, $0.first, $0.second) }
        return InsightsReport(
            from: from, to: to, weekdays: weekdays, timesOfDay: times, currentStreak: current,
            longestStreak: longest, longestStreakStart: longestStart, factors: factors,
            pairs: Array(pairs.prefix(20)))
    }
}

extension InsightsReport {
    /// The report as JSON (`moodledger insights --json`).
    public var json: JSONValue {
        func bucket(_ b: Bucket) -> JSONValue {
            .object([
                ("name", .string(b.name)), ("entries", .int(Int64(b.entries))),
                ("average_valence", .rounded(b.averageValence)), ("valence_count", .int(Int64(b.valenceCount))),
                ("average_score", .rounded(b.averageScore, places: 2)), ("score_count", .int(Int64(b.scoreCount)))
            ])
        }
        return .object([
            ("period", .object([("from", .string(from.description)), ("to", .string(to.description))])),
            ("by_weekday", .array(weekdays.map(bucket))), ("by_time_of_day", .array(timesOfDay.map(bucket))),
            (
                "streaks",
                .object([
                    ("current_days", .int(Int64(currentStreak))), ("longest_days", .int(Int64(longestStreak))),
                    ("longest_start", .optional(longestStreakStart) { .string($0.description) })
                ])
            ),
            (
                "factors",
                .array(
                    factors.map { factor in
                        .object([
                            ("kind", .string(factor.kind)), ("word", .string(factor.word)),
                            ("days_with", .int(Int64(factor.daysWith))),
                            ("days_without", .int(Int64(factor.daysWithout))),
                            ("mean_valence_with", .rounded(factor.meanWith)),
                            ("mean_valence_without", .rounded(factor.meanWithout)),
                            ("difference", .rounded(factor.interval?.difference)),
                            ("ci95_low", .rounded(factor.interval?.low)),
                            ("ci95_high", .rounded(factor.interval?.high)),
                            ("enough_data", .bool(factor.enoughData))
                        ])
                    })
            ),
            (
                "often_together",
                .object([
                    ("minimum_support", .int(Int64(Self.minimumPairSupport))),
                    (
                        "pairs",
                        .array(
                            pairs.map {
                                .object([
                                    ("first", .string($0.first)), ("second", .string($0.second)),
                                    ("count", .int(Int64($0.count))),
                                    ("lift", .rounded($0.lift, places: 2))
                                ])
                            })
                    )
                ])
            )
        ])
    }
}
