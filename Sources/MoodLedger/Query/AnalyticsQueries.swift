extension LedgerState {
    /// The days with entries within `from...to` (either end open), ascending.
    func activeDays(from: LocalDate?, to: LocalDate?) -> ArraySlice<LocalDate> {
        let days = entries.activeDays
        let start = from.map { f in days.partitioningIndex { $0 >= f } } ?? days.startIndex
        let end = to.map { t in days.partitioningIndex { $0 > t } } ?? days.endIndex
        return start < end ? days[start..<end] : []
    }

    /// The backend API's daily aggregate.
    /// - Parameters:
    ///   - date: the local date.
    ///   - includeEntries: also list the day's entries.
    public func day(_ date: LocalDate, includeEntries: Bool = false) -> DayReport {
        let aggregate = analytics.days[date] ?? DayAggregate()
        let scale = Double(Valence.scale)
        return DayReport(
            date: date, entryCount: aggregate.count, averageValence: aggregate.averageValence,
            valenceRange: aggregate.valences.isEmpty
                ? nil
                : (Double(aggregate.valences.first!) / scale, Double(aggregate.valences.last!) / scale),
            topLabels: Self.top(aggregate.labels, total: aggregate.count, limit: 5),
            topAssociations: Self.top(
                aggregate.associations, total: aggregate.count, limit: 5,
                overall: aggregate.averageValence),
            entries: includeEntries ? entries.entries(on: date) : nil)
    }

    /// Trends between two local dates (inclusive): totals, exact statistics, the daily series and the direction.
    public func trends(from: LocalDate, to: LocalDate) throws(MoodError) -> TrendReport {
        guard from <= to else { throw .invalid("from", "must not be after to") }
        var total = 0
        var values: [Int64] = []
        var sum: Int64 = 0
        var squares: Int128 = 0
        var daily: [DailyPoint] = []
        for date in activeDays(from: from, to: to) {
            let aggregate = analytics.days[date]!
            total += aggregate.count
            values.append(contentsOf: aggregate.valences)
            sum += aggregate.valenceSum
            squares += aggregate.valenceSquareSum
            daily.append(
                DailyPoint(
                    date: date, entryCount: aggregate.count, averageValence: aggregate.averageValence,
                    topLabels: Self.top(aggregate.labels, total: aggregate.count, limit: 3)))
        }
        let statistics = ValenceStatistics(values: values, sum: sum, squareSum: squares)
        return TrendReport(
            from: from, to: to, totalEntries: total, averageValence: statistics.mean,
            direction: Self.direction(daily), statistics: statistics, daily: daily)
    }

    /// The daily series alone (what charts draw): one point per day with entries.
    public func dailySeries(from: LocalDate? = nil, to: LocalDate? = nil) -> [DailyPoint] {
        activeDays(from: from, to: to).map { date in
            let aggregate = analytics.days[date]!
            return DailyPoint(date: date, entryCount: aggregate.count, averageValence: aggregate.averageValence)
        }
    }

    /// Label analytics over a period (all time when both ends are `nil`).
    public func labelAnalytics(from: LocalDate? = nil, to: LocalDate? = nil, limit: Int = .max) -> WordAnalytics {
        let (stats, total, _) = wordStats(from: from, to: to, \.labels, totals: analytics.labelTotals)
        return WordAnalytics(
            kind: "label", from: from, to: to, totalEntries: total, unique: stats.count,
            words: Self.top(stats, total: total, limit: limit))
    }

    /// Association analytics over a period, with each association's valence impact.
    public func associationAnalytics(from: LocalDate? = nil, to: LocalDate? = nil, limit: Int = .max) -> WordAnalytics {
        let (stats, total, average) = wordStats(
            from: from, to: to, \.associations,
            totals: analytics.associationTotals)
        return WordAnalytics(
            kind: "association", from: from, to: to, totalEntries: total, unique: stats.count,
            words: Self.top(stats, total: total, limit: limit, overall: average))
    }

    /// Tag analytics over a period, in the label analytics' shape (`unique_tags`, `top_tags`): a fold of the period's
    /// entries (tags are free text, so they have no per-day table).
    public func tagAnalytics(from: LocalDate? = nil, to: LocalDate? = nil, limit: Int = .max) -> WordAnalytics {
        var stats: [String: (count: Int, sum: Int64, valued: Int)] = [:]
        var order: [String] = []
        var total = 0
        for date in activeDays(from: from, to: to) {
            for entry in entries.entries(on: date) {
                total += 1
                for tag in entry.tags {
                    if stats[tag] == nil { order.append(tag) }
                    var stat = stats[tag] ?? (0, 0, 0)
                    stat.count += 1
                    if let q = entry.valenceGrid { stat.sum += q; stat.valued += 1 }
                    stats[tag] = stat
                }
            }
        }
        let words = order.sorted { (stats[$0]!.count, $1) > (stats[$1]!.count, $0) }.prefix(limit).map { tag in
            let stat = stats[tag]!
            return WordReport(
                word: tag, count: stat.count,
                percentage: total == 0 ? 0 : (Double(stat.count) * 1000 / Double(total)).rounded() / 10,
                averageValence: stat.valued == 0 ? nil : Double(stat.sum) / Double(stat.valued) / Double(Valence.scale))
        }
        return WordAnalytics(
            kind: "tag", from: from, to: to, totalEntries: total, unique: stats.count, words: Array(words))
    }

    /// A 7D, 30D, 90D or 1Y summary ending `today`, or a custom one.
    public func summary(
        range: String, today: LocalDate, from customFrom: LocalDate? = nil,
        to customTo: LocalDate? = nil
    ) throws(MoodError) -> RangeSummary {
        let days: Int
        switch range.uppercased() {
        case "7D": days = 7
        case "30D": days = 30
        case "90D": days = 90
        case "1Y": days = 365
        case "CUSTOM": days = 0
        default: throw .invalid("range", "must be 7D, 30D, 90D, 1Y or custom")
        }
        let from: LocalDate
        let to: LocalDate
        if days == 0 {
            guard let customFrom, let customTo else { throw .invalid("range", "custom needs from and to") }
            guard customFrom <= customTo else { throw .invalid("from", "must not be after to") }
            (from, to) = (customFrom, customTo)
        } else {
            (from, to) = (today.advanced(by: -(days - 1)), today)
        }
        var summary = RangeSummary(
            range: range.uppercased() == "CUSTOM" ? "custom" : range.uppercased(), from: from,
            to: to, entryCount: 0)
        var sum: Int64 = 0
        var valued = 0
        var scoreSum = 0
        var scored = 0
        for date in activeDays(from: from, to: to) {
            let aggregate = analytics.days[date]!
            summary.entryCount += aggregate.count
            sum += aggregate.valenceSum
            valued += aggregate.valences.count
            for entry in entries.entries(on: date) {
                if let score = entry.score {
                    scoreSum += score
                    scored += 1
                    summary.highestScore = max(summary.highestScore ?? score, score)
                    summary.lowestScore = min(summary.lowestScore ?? score, score)
                }
                if summary.latest == nil || MoodEntry.newestFirst(entry, summary.latest!) { summary.latest = entry }
                guard let v = entry.valence else { continue }
                if summary.highest?.valence.map({ v > $0 }) ?? true { summary.highest = entry }
                if summary.lowest?.valence.map({ v < $0 }) ?? true { summary.lowest = entry }
            }
        }
        summary.averageValence = valued == 0 ? nil : Double(sum) / Double(valued) / Double(Valence.scale)
        summary.averageScore = scored == 0 ? nil : Double(scoreSum) / Double(scored)
        return summary
    }

    // MARK: - Helpers

    private func wordStats<D>(
        from: LocalDate?, to: LocalDate?, _ path: KeyPath<DayAggregate, WordTable<D, WordStat>>,
        totals: WordTable<D, WordStat>
    ) -> (WordTable<D, WordStat>, Int, Double?) {
        var total = 0
        var sum: Int64 = 0
        var valued = 0
        let days = activeDays(from: from, to: to)
        var stats = WordTable<D, WordStat>()
        for date in days {
            let aggregate = analytics.days[date]!
            total += aggregate.count
            sum += aggregate.valenceSum
            valued += aggregate.valences.count
            if from != nil || to != nil {
                for (word, stat) in aggregate[keyPath: path].pairs {
                    stats.modify(word, default: WordStat(), removeIf: { _ in false }) {
                        $0.count += stat.count
                        $0.valenceCount += stat.valenceCount
                        $0.valenceSum += stat.valenceSum
                    }
                }
            }
        }
        if from == nil && to == nil { stats = totals }
        let average = valued == 0 ? nil : Double(sum) / Double(valued) / Double(Valence.scale)
        return (stats, total, average)
    }

    /// The words by count (descending), ties in canonical order, with percentages and averages.
    static func top<D>(
        _ stats: WordTable<D, WordStat>, total: Int, limit: Int,
        overall: Double?? = nil
    ) -> [WordReport] {
        stats.pairs.sorted { $0.1.count != $1.1.count ? $0.1.count > $1.1.count : $0.0 < $1.0 }
            .prefix(limit)
            .map { word, stat in
                var report = WordReport(
                    word: word.wireName, count: stat.count,
                    percentage: total == 0 ? 0 : (Double(stat.count) * 1000 / Double(total)).rounded() / 10,
                    averageValence: stat.averageValence)
                if let overall {
                    report.valenceImpact = impact(stat.averageValence, against: overall)
                }
                return report
            }
    }

    /// positive / negative when the word's average is more than 0.1 above / below the period's; else neutral.
    static func impact(_ average: Double?, against overall: Double?) -> String {
        guard let average, let overall else { return "neutral" }
        if average - overall > 0.1 { return "positive" }
        if average - overall < -0.1 { return "negative" }
        return "neutral"
    }

    /// Least-squares slope of the daily averages against the day number, projected over the period's span:
    /// above +0.1 improving, below −0.1 declining, else stable; fewer than 3 days with a valence: insufficient_data.
    static func direction(_ daily: [DailyPoint]) -> String {
        let points = daily.compactMap { p in p.averageValence.map { (Double(p.date.daysSinceEpoch), $0) } }
        guard points.count >= 3 else { return "insufficient_data" }
        let n = Double(points.count)
        let meanX = points.reduce(0) { $0 + $1.0 } / n
        let meanY = points.reduce(0) { $0 + $1.1 } / n
        var sxy = 0.0
        var sxx = 0.0
        for (x, y) in points {
            sxy += (x - meanX) * (y - meanY)
            sxx += (x - meanX) * (x - meanX)
        }
        guard sxx > 0 else { return "stable" }
        let change = sxy / sxx * (points.last!.0 - points.first!.0)
        if change > 0.1 { return "improving" }
        if change < -0.1 { return "declining" }
        return "stable"
    }
}

extension RandomAccessCollection {
    /// The first index where `predicate` is true (it must be false then true along the collection).
    func partitioningIndex(where predicate: (Element) -> Bool) -> Index {
        var low = startIndex
        var count = self.count
        while count > 0 {
            let half = count / 2
            let mid = index(low, offsetBy: half)
            if predicate(self[mid]) {
                count = half
            } else {
                low = index(after: mid)
                count -= half + 1
            }
        }
        return low
    }
}
