import Foundation
import MoodLedger

/// `insights`, `report` and `year`: the figures and pictures, drawn from the projections (`Specs/analytics.md`).
enum PictureCommands {
    static let all: [CommandSpec] = [insights, report, year]

    /// The period: `--from`/`--to`, by default the 365 days ending today.
    static func period(_ context: Context) throws -> (LocalDate, LocalDate) {
        let to = try context.dateOption("to") ?? context.today()
        let from = try context.dateOption("from") ?? to.advanced(by: -364)
        guard from <= to else { throw MoodError.invalid("from", "must not be after to") }
        return (from, to)
    }

    static let insights = CommandSpec(
        name: "insights", summary: "averages by weekday and time of day, streaks, factor effects, words often together",
        usage: "insights [--from DATE] [--to DATE] [--at POINT]", values: ["from", "to", "at"]
    ) { context in
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        let (from, to) = try period(context)
        let report = try context.read(ledger) { try $0.insights(from: from, to: to) }
        if context.json { context.printJSON(report.json); return ExitCode.ok }
        let console = context.console
        console.line("insights \(from) to \(to)")
        for (title, buckets) in [("by weekday", report.weekdays), ("by time of day", report.timesOfDay)] {
            console.line(title + ":")
            for bucket in buckets {
                console.line(
                    "  " + bucket.name.column(10)
                        + (bucket.averageValence.map { "valence \(ReportHTML.number($0)) (\(bucket.valenceCount))" }
                            ?? "no valence")
                        + (bucket.averageScore.map {
                            ", score \(ReportHTML.number($0, places: 1)) (\(bucket.scoreCount))"
                        } ?? ""))
            }
        }
        console.line(
            "streaks: current \(report.currentStreak) days, longest \(report.longestStreak) days"
                + (report.longestStreakStart.map { " from \($0)" } ?? ""))
        console.line("factor effects (mean daily valence with − without, 95 % Welch interval; no causal claim):")
        for factor in report.factors.prefix(15) {
            let name = "  \(factor.word) (\(factor.kind), \(factor.daysWith)/\(factor.daysWithout) days)"
            if let interval = factor.interval {
                console.line(
                    name
                        + ": \(ReportHTML.number(interval.difference)) [\(ReportHTML.number(interval.low)), \(ReportHTML.number(interval.high))]"
                )
            } else {
                console.line(name + ": not enough data (3 days with and without needed)")
            }
        }
        console.line("often together (at least \(InsightsReport.minimumPairSupport) entries):")
        for pair in report.pairs.prefix(10) {
            console.line(
                "  \(pair.first) + \(pair.second): \(pair.count) entries, lift \(ReportHTML.number(pair.lift, places: 2))"
            )
        }
        return ExitCode.ok
    }

    static let report = CommandSpec(
        name: "report", summary: "write a self-contained HTML report (year in pixels, trend, factor effects, bars)",
        usage: "report --out FILE.html [--from DATE] [--to DATE] [--at POINT] [--include-notes]",
        values: ["out", "from", "to", "at"], flags: ["include-notes"], printsData: false
    ) { context in
        guard let out = context.arguments.value("out") else { throw UsageError("report needs --out FILE.html") }
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        var (from, to) = try period(context)
        let today = try context.today()
        let chosen = context.arguments.value("from") != nil || context.arguments.value("to") != nil
        let (html, asOf) = try context.read(ledger) { state in
            let asOf =
                "as of seq \(state.seq)"
                + (state.recordedAt == 0
                    ? "" : " (\(ISO8601.format(milliseconds: state.recordedAt / 1000, offsetMinutes: 0)))")
            // The default year is the last 365 days; when they hold nothing, the year up to the last entry, said so.
            var note: String?
            if !chosen, let last = state.entries.activeDays.last, last < from {
                to = last
                from = last.advanced(by: -364)
                note = "No entries in the last 365 days: this is the year up to the last entry (\(last))."
            }
            let html = ReportHTML(
                state: state, insights: try state.insights(from: from, to: to),
                ledgerName: URL(fileURLWithPath: context.ledgerPath).lastPathComponent, asOf: asOf,
                includeNotes: context.arguments.has("include-notes"), today: today, periodNote: note
            ).render()
            return (html, asOf)
        }
        let folder = URL(fileURLWithPath: out).deletingLastPathComponent().path
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw CLIError(ExitCode.cannotCreate, "cannot write \(out): the directory \(folder) does not exist")
        }
        do { try UserFiles.write(Array(html.utf8), to: out) } catch {
            throw CLIError(ExitCode.cannotCreate, "cannot write \(out): \(error)")
        }
        context.console.line("wrote \(out) (\(html.utf8.count) bytes, \(from) to \(to), \(asOf))")
        return ExitCode.ok
    }

    static let year = CommandSpec(
        name: "year", summary: "a year in pixels in the terminal",
        usage: "year [YEAR] [--at POINT]", values: ["at"], printsData: false
    ) { context in
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        var year = try context.today().components.year
        if let text = context.arguments.positionals.first {
            year = try Context.integer(text, "year", in: 1...9999)
        }
        let color = context.console.color
        context.console.line(try context.read(ledger) { YearView.render($0, year: year, color: color) })
        return ExitCode.ok
    }
}
