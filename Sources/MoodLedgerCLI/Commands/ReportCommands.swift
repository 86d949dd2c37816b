import MoodLedger

/// day, trends, analytics, summary, outbox: the answers, now or as they were at a point.
enum ReportCommands {
    static let all: [CommandSpec] = [day, trends, analytics, summary, outbox]

    static let day = CommandSpec(
        name: "day", summary: "the daily aggregate of a local date",
        usage: "day [DATE] [--entries] [--at POINT]", values: ["at"], flags: ["entries"]
    ) { context in
        // Today when no date is given.
        let date = try context.arguments.positionals.first.map { try context.date($0, "date") } ?? context.today()
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        let report = try context.read(ledger) { $0.day(date, includeEntries: context.arguments.has("entries")) }
        if context.json {
            context.printJSON(report.json)
        } else {
            let console = context.console
            console.line(
                "\(date): \(HumanFormat.count(report.entryCount, "entry", "entries")), average valence "
                    + "\(HumanFormat.number(report.averageValence))\(HumanFormat.scoreNote(report.averageValence))"
                    + (report.valenceRange.map {
                        " (range \(HumanFormat.number($0.min)) … \(HumanFormat.number($0.max)))"
                    } ?? ""))
            console.line("labels:       \(HumanFormat.words(report.topLabels))")
            console.line("associations: \(HumanFormat.words(report.topAssociations))")
            for entry in report.entries ?? [] {
                console.line("  " + HumanFormat.entryLine(entry, color: console.color))
            }
        }
        return ExitCode.ok
    }

    static let trends = CommandSpec(
        name: "trends", summary: "statistics and direction over a period",
        usage: "trends [--from DATE] [--to DATE] [--at POINT]", values: ["from", "to", "at"]
    ) { context in
        // The API's defaults: the last 30 days ending today.
        let to = try context.dateOption("to") ?? context.today()
        let from = try context.dateOption("from") ?? to.advanced(by: -29)
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        let report = try context.read(ledger) { try $0.trends(from: from, to: to) }
        if context.json {
            context.printJSON(report.json)
        } else {
            let s = report.statistics
            context.console.line(
                "\(from) … \(to): \(HumanFormat.count(report.totalEntries, "entry", "entries")), trend \(report.direction)"
            )
            if !report.daily.isEmpty {
                context.console.line(
                    "daily:   " + HumanFormat.sparkline(report.daily.map(\.averageValence))
                        + "  (\(report.daily.first!.date) … \(report.daily.last!.date), days with entries)")
            }
            context.console.line(
                "valence: average \(HumanFormat.number(report.averageValence))\(HumanFormat.scoreNote(report.averageValence)), median \(HumanFormat.number(s.median)), "
                    + "min \(HumanFormat.number(s.min)), max \(HumanFormat.number(s.max)), "
                    + "std deviation \(HumanFormat.number(s.standardDeviation))")
            context.console.line("days with entries: \(report.daily.count)")
        }
        return ExitCode.ok
    }

    static let analytics = CommandSpec(
        name: "analytics", summary: "label or association analytics",
        usage: "analytics labels|associations|tags [--from DATE] [--to DATE] [--limit N] [--at POINT]",
        values: ["from", "to", "limit", "at"]
    ) { context in
        let which = try context.positional(0, "labels, associations or tags")
        guard ["labels", "associations", "tags"].contains(which) else {
            throw UsageError("analytics takes labels, associations or tags")
        }
        // The last 30 days ending today unless a period is given (--from alone runs to today).
        let to = try context.dateOption("to") ?? context.today()
        let from = try context.dateOption("from") ?? to.advanced(by: -29)
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        let limit =
            try context.arguments.value("limit").map { try Context.integer($0, "limit", in: 1...Int.max) } ?? .max
        let report = try context.read(ledger) { state in
            which == "labels"
                ? state.labelAnalytics(from: from, to: to, limit: limit)
                : which == "tags"
                    ? state.tagAnalytics(from: from, to: to, limit: limit)
                    : state.associationAnalytics(from: from, to: to, limit: limit)
        }
        if context.json {
            context.printJSON(report.json)
        } else {
            context.console.line(
                "\(HumanFormat.count(report.totalEntries, "entry", "entries")), "
                    + HumanFormat.count(report.unique, String(which.dropLast()), which))
            for word in report.words {
                context.console.line(
                    word.word.column(18)
                        + String(word.count).leftPad(7) + String(format: "%7.1f%%", word.percentage)
                        + "  avg " + HumanFormat.number(word.averageValence)
                        + (word.valenceImpact.map { "  \($0)" } ?? ""))
            }
        }
        return ExitCode.ok
    }

    static let summary = CommandSpec(
        name: "summary", summary: "7D, 30D, 90D or 1Y summary ending today (or custom)",
        usage: "summary [7D|30D|90D|1Y|custom] [--from DATE --to DATE] [--today DATE] [--at POINT]",
        values: ["from", "to", "today", "at"]
    ) { context in
        let range = context.arguments.positionals.first ?? "30D"  // the API's default: 30 days ending today
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        let today = try context.dateOption("today") ?? context.today()
        let (from, to) = (try context.dateOption("from"), try context.dateOption("to"))
        let report = try context.read(ledger) { try $0.summary(range: range, today: today, from: from, to: to) }
        if context.json {
            context.printJSON(report.json)
        } else {
            context.console.line(
                "\(report.range) \(report.from) … \(report.to): \(HumanFormat.count(report.entryCount, "entry", "entries")), "
                    + "average valence \(HumanFormat.number(report.averageValence))"
                    + (report.averageScore.map { String(format: ", average score %.1f/10", $0) } ?? "")
                    + (report.highestScore.map { " (\(report.lowestScore!)–\($0))" } ?? ""))
            for (name, entry) in [("highest", report.highest), ("lowest", report.lowest), ("latest", report.latest)] {
                if let entry {
                    context.console.line(
                        "\(name.column(8)) "
                            + HumanFormat.entryLine(entry, color: context.console.color))
                }
            }
        }
        return ExitCode.ok
    }

    static let outbox = CommandSpec(
        name: "outbox", summary: "what still has to reach each destination",
        usage: "outbox [--destination backend|healthkit] [--all] [--at POINT]",
        values: ["destination", "at"], flags: ["all"]
    ) { context in
        let destination = try context.arguments.value("destination").map { text -> SyncDestination in
            guard let destination = SyncDestination(rawValue: text) else {
                throw MoodError.invalid("destination", "must be backend or healthkit")
            }
            return destination
        }
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        let items = try context.read(ledger) {
            $0.outboxItems(includeSynced: context.arguments.has("all"), destination: destination)
        }
        if context.json {
            context.printJSON(.object([("items", .array(items.map(\.json)))]))
        } else {
            context.printLines(
                items.lazy.map { item in
                    var line =
                        "\(item.entryID)  \(HumanFormat.pad(item.destination.rawValue, 9)) "
                        + "\(HumanFormat.pad(item.operation?.rawValue ?? "—", 6)) "
                        + "\(HumanFormat.pad(item.status, 7)) attempts \(item.attempts)"
                    if let error = item.lastError { line += "  last error: \(error)" }
                    if let next = item.nextAttemptAt {
                        line += "  next \(ISO8601.format(milliseconds: next, offsetMinutes: 0))"
                    }
                    return line
                })
            context.console.line("\(items.count) item(s)")
        }
        return ExitCode.ok
    }
}
