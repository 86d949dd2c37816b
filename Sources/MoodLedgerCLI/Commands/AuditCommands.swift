import MoodLedger

/// history, events, diff: what happened, when, and what it changed.
enum AuditCommands {
    static let all: [CommandSpec] = [history, events, diff]

    static let history = CommandSpec(
        name: "history", summary: "every event that touched an entry, with what changed",
        usage: "history ID"
    ) { context in
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        let id = try context.entryID(in: ledger, includingPast: true)
        let items = try ledger.history(of: id)
        if items.isEmpty {
            throw CLIError(ExitCode.noInput, "no event ever named \(id)", hint: "check the id with `moodledger list`")
        }
        if context.json {
            context.printJSON(.object([("entry_id", .string(id.description)), ("events", .array(items.map(\.json)))]))
        } else {
            for item in items { context.console.line(HumanFormat.eventLine(item.event, changes: item.changes)) }
        }
        return ExitCode.ok
    }

    static let events = CommandSpec(
        name: "events", summary: "the raw log, oldest first (--json: one object per line)",
        usage: "events [--after-seq N] [--until-seq N] [--entry ID] [--type T]",
        values: ["after-seq", "until-seq", "entry", "type"]
    ) { context in
        let a = context.arguments
        let after = try a.value("after-seq").map { try seq($0, "after-seq") } ?? 0
        let until = try a.value("until-seq").map { try seq($0, "until-seq") } ?? .max
        var filter = EventFilter()
        if let text = a.value("type") {
            guard let type = EventType(name: text) else {
                throw UsageError(
                    "unknown event type \(text) (one of \(EventType.allCases.map(\.name).joined(separator: ", ")))")
            }
            filter.type = type
        }
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        if let text = a.value("entry") {
            filter.entryID = try context.resolveEntry(text, in: ledger, includingPast: true)
        }
        for event in try ledger.events(after: after, through: until, filter: filter) {
            context.console.line(context.json ? event.json.serialized() : HumanFormat.eventLine(event))
        }
        return ExitCode.ok
    }

    static let diff = CommandSpec(
        name: "diff", summary: "what changed between two points (seq or instant)",
        usage: "diff POINT POINT"
    ) { context in
        let from = try Context.point(try context.positional(0, "the first POINT"))
        let to = try Context.point(try context.positional(1, "the second POINT"))
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        let diff = try ledger.diff(from: from, to: to)
        if context.json {
            context.printJSON(diff.json)
            return ExitCode.ok
        }
        let console = context.console
        console.line("from seq \(diff.fromSeq) to seq \(diff.toSeq)")
        console.line(
            "added \(diff.added.count), removed \(diff.removed.count), changed \(diff.changed.count), "
                + "outbox items changed \(diff.outbox.count)")
        for entry in diff.added { console.line("+ " + HumanFormat.entryLine(entry, color: console.color)) }
        for entry in diff.removed { console.line("- " + HumanFormat.entryLine(entry, color: console.color)) }
        for (before, after) in diff.changed {
            console.line("~ " + HumanFormat.entryLine(after, color: console.color))
            for field in Ledger.fieldChanges(before: before, after: after) {
                console.line("      \(field.field): \(field.before.serialized()) → \(field.after.serialized())")
            }
        }
        for difference in diff.outbox {
            let (item, before, after) = (difference.item, difference.before, difference.after)
            console.line(
                "outbox \(item.entryID) \(item.destination.rawValue): "
                    + "\(before.map { "\($0.operation?.rawValue ?? "synced") \($0.status)" } ?? "—") → "
                    + "\(after.map { "\($0.operation?.rawValue ?? "synced") \($0.status)" } ?? "—")")
        }
        return ExitCode.ok
    }

    static func seq(_ text: String, _ name: String) throws -> UInt64 {
        try Context.integer(text, name, in: 0...UInt64.max)
    }
}
