import MoodLedger

/// `moodledger report`: one self-contained HTML file (inline SVG and CSS, no script, no network reference) with a
/// year in pixels, the daily averages, weekday and time-of-day bars, streaks, factor effects and top words, every
/// chart with a text alternative and its figures in a table (`Specs/analytics.md`, *Report*).
struct ReportHTML {
    var state: LedgerState
    var insights: InsightsReport
    var ledgerName: String
    /// "as of seq N (instant)".
    var asOf: String
    var includeNotes: Bool
    /// Today, in the ledger's zone: the current streak is told only for a period that includes it (`nil`: told).
    var today: LocalDate? = nil
    /// Why the period is not the default one, said under the title (`nil`: nothing to say).
    var periodNote: String? = nil

    // Fixed geometry, so tests can find a day's cell in a screenshot.
    static let headerHeight = 96
    static let yearTitleHeight = 28
    static let pageMargin = 24
    static let gridLeft = 28
    static let gridTop = 16
    static let cellStep = 14
    static let cellSize = 12
    static let yearSectionHeight = yearTitleHeight + gridTop + 7 * cellStep + 44

    /// The page position of the centre of a day's cell, for the year in pixels of `year` (the `index`-th year shown).
    static func cellCentre(_ date: LocalDate, yearIndex: Int) -> (x: Int, y: Int) {
        let (column, row) = date.yearGridCell
        return (
            pageMargin + gridLeft + column * cellStep + cellSize / 2,
            headerHeight + yearIndex * yearSectionHeight + yearTitleHeight + gridTop + row * cellStep + cellSize / 2
        )
    }

    func render() -> String {
        var html = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <title>Mood report \(Self.escape(ledgerName)) \(insights.from)–\(insights.to)</title>
            <style>
            body { margin: 0; background: \(MoodColors.background); color: #222; font: 14px/1.4 sans-serif; }
            header { height: \(Self.headerHeight)px; box-sizing: border-box; padding: 16px \(Self.pageMargin)px; overflow: hidden; }
            header h1 { margin: 0; font-size: 22px; line-height: 30px; }
            header p { margin: 4px 0 0; color: #555; }
            section { padding: 0 \(Self.pageMargin)px; }
            section.year { height: \(Self.yearSectionHeight)px; overflow: hidden; }
            section.year h2 { height: \(Self.yearTitleHeight)px; margin: 0; font-size: 16px; line-height: \(Self.yearTitleHeight)px; }
            h2 { font-size: 16px; margin: 20px 0 6px; }
            svg { display: block; }
            table { border-collapse: collapse; margin: 6px 0 12px; font-size: 12px; }
            th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
            td.text, th.text { text-align: left; }
            th:first-child, td:first-child { text-align: left; }
            caption { text-align: left; color: #555; }
            @media print { section { break-inside: avoid; } }
            </style>
            </head>
            <body>
            <header>
            <h1>Mood report: \(Self.escape(ledgerName))</h1>
            <p>\(insights.from) to \(insights.to) · \(Self.escape(asOf)) · \(state.entries.count) entries in the ledger</p>\(periodNote.map { "<p>\(Self.escape($0))</p>" } ?? "")
            </header>

            """
        let years = Array(insights.from.components.year...insights.to.components.year)
        for year in years { html += yearInPixels(year) }
        html +=
            daily() + bars("By weekday", "weekday", insights.weekdays)
            + bars("By time of day", "time-of-day", insights.timesOfDay)
        html += streaks() + factors() + topWords()
        if includeNotes { html += notes() }
        html +=
            "<footer><section><p>Made by moodledger from the ledger's projections; no causal claim is made by any figure.</p></section></footer>\n</body>\n</html>\n"
        return html
    }

    // MARK: - Charts

    private func yearInPixels(_ year: Int) -> String {
        let width = Self.gridLeft + 54 * Self.cellStep
        let height = Self.gridTop + 7 * Self.cellStep + 40
        var cells = ""
        var rows: [(String, String)] = []
        var sum = 0.0
        var count = 0
        let start = LocalDate(year: year, month: 1, day: 1)!
        let end = LocalDate(year: year, month: 12, day: 31)!
        var day = start
        while day <= end {
            let (column, row) = day.yearGridCell
            let x = Self.gridLeft + column * Self.cellStep
            let y = Self.gridTop + row * Self.cellStep
            let inRange = day >= insights.from && day <= insights.to
            if inRange, let mean = state.analytics.days[day]?.averageValence {
                cells +=
                    "<rect x=\"\(x)\" y=\"\(y)\" width=\"\(Self.cellSize)\" height=\"\(Self.cellSize)\" fill=\"\(MoodColors.hex[MoodColors.bin(mean)])\"><title>\(day): \(Self.number(mean))</title></rect>"
                rows.append((day.description, Self.number(mean)))
                sum += mean
                count += 1
            } else {
                cells +=
                    "<rect x=\"\(x)\" y=\"\(y)\" width=\"\(Self.cellSize)\" height=\"\(Self.cellSize)\" fill=\"\(MoodColors.background)\" stroke=\"#e4e4e4\"/>"
            }
            day = day.advanced(by: 1)
        }
        var labels = ""
        for (index, name) in ["Mon", "Wed", "Fri", "Sun"].enumerated() {
            labels +=
                "<text x=\"0\" y=\"\(Self.gridTop + index * 2 * Self.cellStep + 10)\" font-size=\"10\">\(name)</text>"
        }
        for month in 1...12 {
            let first = LocalDate(year: year, month: month, day: 1)!
            labels +=
                "<text x=\"\(Self.gridLeft + first.yearGridCell.column * Self.cellStep)\" y=\"11\" font-size=\"10\">\(Self.months[month - 1])</text>"
        }
        var legend = ""
        let legendY = Self.gridTop + 7 * Self.cellStep + 12
        for bin in 0..<9 {
            legend +=
                "<rect x=\"\(Self.gridLeft + bin * 40)\" y=\"\(legendY)\" width=\"38\" height=\"10\" fill=\"\(MoodColors.hex[bin])\"/>"
        }
        legend += "<text x=\"\(Self.gridLeft)\" y=\"\(legendY + 24)\" font-size=\"10\">−1 very unpleasant</text>"
        legend +=
            "<text x=\"\(Self.gridLeft + 9 * 40)\" y=\"\(legendY + 24)\" font-size=\"10\" text-anchor=\"end\">+1 very pleasant</text>"
        legend +=
            "<text x=\"\(Self.gridLeft + 9 * 40 + 12)\" y=\"\(legendY + 9)\" font-size=\"10\">blank: no entry</text>"
        let average = count == 0 ? "no entries" : "average \(Self.number(sum / Double(count))) over \(count) days"
        return """
            <section class="year"><h2>\(year) in pixels</h2>
            <svg role="img" aria-labelledby="year\(year)-t year\(year)-d" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)">
            <title id="year\(year)-t">\(year) in pixels</title><desc id="year\(year)-d">One square per day, coloured by the day's average valence from red (−1) to blue (+1); blank days have no entry; \(average).</desc>
            \(labels)\(cells)\(legend)</svg></section>
            \(table("Daily averages \(year)", ["day", "average valence"], rows, hidden: true))
            """
    }

    private func daily() -> String {
        let series = state.dailySeries(from: insights.from, to: insights.to).compactMap { point in
            point.averageValence.map { (point.date, $0) }
        }
        let width = 760
        let height = 216
        let span = max(1, insights.from.distance(to: insights.to))
        func x(_ day: LocalDate) -> Double {
            40 + Double(insights.from.distance(to: day)) / Double(span) * Double(width - 50)
        }
        func y(_ value: Double) -> Double { 10 + (1 - (value + 1) / 2) * Double(height - 46) }
        var points = ""
        var average = ""
        var rows: [(String, String, String)] = []
        for (index, (day, value)) in series.enumerated() {
            points +=
                "<circle cx=\"\(Self.number(x(day)))\" cy=\"\(Self.number(y(value)))\" r=\"2\" fill=\"\(MoodColors.hex[MoodColors.bin(value)])\"/>"
            let window = series[...index].reversed().prefix { $0.0.distance(to: day) < 7 }
            let moving = window.reduce(0) { $0 + $1.1 } / Double(window.count)
            average += (average.isEmpty ? "M" : " L") + "\(Self.number(x(day))) \(Self.number(y(moving)))"
            rows.append((day.description, Self.number(value), Self.number(moving)))
        }
        let axis =
            "<line x1=\"40\" y1=\"\(y(0))\" x2=\"\(width - 10)\" y2=\"\(y(0))\" stroke=\"#999\" stroke-dasharray=\"3 3\"/>"
            + "<text x=\"0\" y=\"\(Self.number(y(1) + 4))\" font-size=\"10\">+1</text><text x=\"0\" y=\"\(Self.number(y(0) + 4))\" font-size=\"10\">0</text>"
            + "<text x=\"0\" y=\"\(Self.number(y(-1) + 4))\" font-size=\"10\">−1</text>"
            + dateAxis(x: x, baseline: y(-1) + 6)
        return """
            <section><h2>Daily averages</h2>
            <svg role="img" aria-labelledby="daily-t daily-d" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)">
            <title id="daily-t">Daily average valence</title><desc id="daily-d">A dot per day with entries (\(series.count) days) and the 7-day moving average as a line.</desc>
            \(axis)\(points)<path d="\(average)" fill="none" stroke="#333" stroke-width="1.5"/></svg>
            \(table("Daily averages", ["day", "average valence", "7-day average"], rows.map { [$0.0, $0.1, $0.2] }, hidden: true))</section>

            """
    }

    /// The daily chart's date axis: a tick and a label at the first day of each month in the period (every second,
    /// third… month when there are many), and at the period's ends.
    private func dateAxis(x: (LocalDate) -> Double, baseline: Double) -> String {
        var months: [LocalDate] = []
        var day = insights.from
        while day <= insights.to {
            if day.components.day == 1 { months.append(day) }
            day = day.advanced(by: 1)
        }
        let step = max(1, (months.count + 5) / 6)
        let shown = months.enumerated().filter { $0.offset % step == 0 }.map(\.element)
        var axis =
            "<line x1=\"40\" y1=\"\(Self.number(baseline))\" x2=\"\(Self.number(x(insights.to)))\" y2=\"\(Self.number(baseline))\" stroke=\"#999\"/>"
        for tick in shown {
            axis +=
                "<line x1=\"\(Self.number(x(tick)))\" y1=\"\(Self.number(baseline))\" x2=\"\(Self.number(x(tick)))\" y2=\"\(Self.number(baseline + 4))\" stroke=\"#999\"/>"
                + "<text x=\"\(Self.number(x(tick)))\" y=\"\(Self.number(baseline + 16))\" font-size=\"10\" text-anchor=\"middle\">\(String(tick.description.prefix(7)))</text>"
        }
        if shown.isEmpty {
            axis +=
                "<text x=\"40\" y=\"\(Self.number(baseline + 16))\" font-size=\"10\">\(insights.from)</text>"
                + "<text x=\"\(Self.number(x(insights.to)))\" y=\"\(Self.number(baseline + 16))\" font-size=\"10\" text-anchor=\"end\">\(insights.to)</text>"
        }
        return axis
    }

    private func bars(_ title: String, _ id: String, _ buckets: [InsightsReport.Bucket]) -> String {
        let width = 520
        let rowHeight = 22
        let height = buckets.count * rowHeight + 10
        var body = "<line x1=\"300\" y1=\"0\" x2=\"300\" y2=\"\(height)\" stroke=\"#999\"/>"
        for (index, bucket) in buckets.enumerated() {
            let y = 4 + index * rowHeight
            body += "<text x=\"0\" y=\"\(y + 14)\" font-size=\"12\">\(bucket.name) (\(bucket.entries))</text>"
            if let average = bucket.averageValence {
                let length = average * 200
                body +=
                    "<rect x=\"\(Self.number(min(300, 300 + length)))\" y=\"\(y)\" width=\"\(Self.number(abs(length)))\" height=\"16\" fill=\"\(MoodColors.hex[MoodColors.bin(average)])\"/>"
                body +=
                    "<text x=\"\(length >= 0 ? 300 + length + 4 : 300 + length - 4)\" y=\"\(y + 13)\" font-size=\"11\" text-anchor=\"\(length >= 0 ? "start" : "end")\">\(Self.number(average))</text>"
            }
        }
        let rows = buckets.map {
            [
                $0.name, String($0.entries), $0.averageValence.map { Self.number($0) } ?? "—",
                $0.averageScore.map { Self.number($0, places: 1) } ?? "—"
            ]
        }
        return """
            <section><h2>\(title)</h2>
            <svg role="img" aria-labelledby="\(id)-t \(id)-d" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)">
            <title id="\(id)-t">Average valence \(title.lowercased())</title><desc id="\(id)-d">Bars left of the centre line are below 0 (unpleasant), right of it above; the entry count is in brackets.</desc>
            \(body)</svg>
            \(table(title, ["bucket", "entries", "average valence", "average score (1–10)"], rows))</section>

            """
    }

    private func streaks() -> String {
        // A streak is "current" only up to today: a past period has none.
        let current =
            today.map { insights.to >= $0 } ?? true
            ? "Current streak: \(insights.currentStreak) day\(insights.currentStreak == 1 ? "" : "s") with at least one entry. "
            : ""
        return """
            <section><h2>Streaks</h2><p>\(current)Longest: \(insights.longestStreak) day\(insights.longestStreak == 1 ? "" : "s")\(insights.longestStreakStart.map { ", from \($0)" } ?? "").</p></section>

            """
    }

    private func factors() -> String {
        let shown = insights.factors.filter(\.enoughData).prefix(12)
        let width = 640
        let rowHeight = 22
        let height = max(1, shown.count) * rowHeight + 24
        func x(_ value: Double) -> Double { 400 + value * 200 }
        var body = "<line x1=\"400\" y1=\"0\" x2=\"400\" y2=\"\(height)\" stroke=\"#999\"/>"
        for (index, factor) in shown.enumerated() {
            guard let interval = factor.interval else { continue }
            let y = 4 + index * rowHeight
            let left = min(x(0), x(interval.difference))
            body +=
                "<text x=\"0\" y=\"\(y + 13)\" font-size=\"12\">\(Self.escape(factor.word)) (\(factor.kind), \(factor.daysWith)/\(factor.daysWithout) days)</text>"
            body +=
                "<rect x=\"\(Self.number(max(200, left)))\" y=\"\(y + 2)\" width=\"\(Self.number(abs(x(interval.difference) - x(0))))\" height=\"12\" fill=\"\(interval.difference >= 0 ? MoodColors.hex[7] : MoodColors.hex[1])\"/>"
            body +=
                "<line x1=\"\(Self.number(max(200, x(interval.low))))\" y1=\"\(y + 8)\" x2=\"\(Self.number(min(Double(width), x(interval.high))))\" y2=\"\(y + 8)\" stroke=\"#222\" stroke-width=\"1.5\"/>"
        }
        if shown.isEmpty {
            body +=
                "<text x=\"0\" y=\"16\" font-size=\"12\">Not enough data: a word needs at least 3 days with it and 3 without.</text>"
        }
        let rows = insights.factors.map { factor in
            [
                factor.word, factor.kind, String(factor.daysWith), String(factor.daysWithout),
                factor.interval.map { Self.number($0.difference) } ?? "not enough data",
                factor.interval.map { "\(Self.number($0.low)) to \(Self.number($0.high))" } ?? "—"
            ]
        }
        return """
            <section><h2>Factor effects</h2>
            <svg role="img" aria-labelledby="factors-t factors-d" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)">
            <title id="factors-t">Mean daily valence with each word minus without it</title><desc id="factors-d">For words seen on at least 3 days and missing on at least 3: the difference of the mean daily valence on days with and without the word, with a 95 % Welch interval as a line. Days with a word are not caused by it.</desc>
            \(body)</svg>
            \(table("Factor effects", ["word", "kind", "days with", "days without", "difference", "95 % interval"], rows))</section>

            """
    }

    private func topWords() -> String {
        var html = "<section><h2>Top labels and associations</h2>"
        for analytics in [
            state.labelAnalytics(from: insights.from, to: insights.to, limit: 8),
            state.associationAnalytics(from: insights.from, to: insights.to, limit: 8)
        ] {
            let maxCount = analytics.words.map(\.count).max() ?? 1
            var body = ""
            for (index, word) in analytics.words.enumerated() {
                let y = 4 + index * 20
                body += "<text x=\"0\" y=\"\(y + 12)\" font-size=\"12\">\(Self.escape(word.word))</text>"
                body +=
                    "<rect x=\"160\" y=\"\(y)\" width=\"\(Self.number(Double(word.count) / Double(maxCount) * 300))\" height=\"14\" fill=\"\(word.averageValence.map { MoodColors.hex[MoodColors.bin($0)] } ?? "#bbb")\"/>"
                body +=
                    "<text x=\"\(Self.number(Double(word.count) / Double(maxCount) * 300 + 164))\" y=\"\(y + 12)\" font-size=\"11\">\(word.count)</text>"
            }
            let height = max(1, analytics.words.count) * 20 + 8
            html += """
                <svg role="img" aria-labelledby="top-\(analytics.kind)-t top-\(analytics.kind)-d" width="520" height="\(height)" viewBox="0 0 520 \(height)">
                <title id="top-\(analytics.kind)-t">Top \(analytics.kind)s</title><desc id="top-\(analytics.kind)-d">The most used \(analytics.kind)s by entry count, coloured by their average valence.</desc>
                \(body)</svg>
                \(table("Top \(analytics.kind)s", [analytics.kind, "entries", "average valence"], analytics.words.map { [$0.word, String($0.count), $0.averageValence.map { Self.number($0) } ?? "—"] }))
                """
        }
        return html + "</section>\n"
    }

    private func notes() -> String {
        var rows: [[String]] = []
        for day in state.entries.activeDays where day >= insights.from && day <= insights.to {
            for entry in state.entries.entries(on: day) {
                if let notes = entry.notes { rows.append([entry.loggedAt.iso8601, notes]) }
            }
        }
        return "<section><h2>Notes</h2>" + table("Notes (included with --include-notes)", ["logged at", "notes"], rows)
            + "</section>\n"
    }

    // MARK: - Helpers

    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    private func table(
        _ caption: String, _ headers: [String], _ rows: [(String, String)], hidden: Bool = false
    ) -> String {
        table(caption, headers, rows.map { [$0.0, $0.1] }, hidden: hidden)
    }

    /// A table of figures; `hidden` ones are for screen readers only (visually clipped, still read).
    private func table(_ caption: String, _ headers: [String], _ rows: [[String]], hidden: Bool = false) -> String {
        let style = hidden ? " style=\"position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)\"" : ""
        return "<table\(style)><caption>\(Self.escape(caption))</caption><tr>"
            + headers.map { "<th\(Self.isText($0) ? " class=\"text\"" : "")>\(Self.escape($0))</th>" }.joined()
            + "</tr>"
            + rows.map { row in
                "<tr>"
                    + zip(headers, row).map { header, cell in
                        "<td\(Self.isText(header) ? " class=\"text\"" : "")>\(Self.escape(cell))</td>"
                    }.joined() + "</tr>"
            }.joined() + "</table>\n"
    }

    /// Whether a column holds text (aligned left) rather than figures (aligned right).
    static func isText(_ header: String) -> Bool { ["notes", "word", "label", "association", "tag"].contains(header) }

    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    static func number(_ value: Double, places: Int = 3) -> String {
        let scale = [1.0, 10, 100, 1000, 10000][min(places, 4)]
        let rounded = (value * scale).rounded() / scale
        var text = String(rounded)
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text == "-0" ? "0" : text
    }
}
