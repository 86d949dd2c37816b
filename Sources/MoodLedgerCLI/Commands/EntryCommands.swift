import Foundation
import MoodLedger

/// log, update, labels, associations, tags, delete, show, list.
enum EntryCommands {
    static let all: [CommandSpec] = [
        log, update, words("labels"), words("associations"), words("tags"), delete, show, list
    ]

    static let log = CommandSpec(
        name: "log", summary: "log a mood entry; prints its id (--json: the entry)",
        usage: "log [--valence V | --score N] [--label L]… [--association A]… [--tag T]… [--note TEXT] "
            + "[--kind momentary|daily] [--time TIME] [--source manual|healthkit|backend] [--source-id ID]",
        values: [
            "valence", "score", "label", "association", "tag", "note", "kind", "time", "at", "source", "source-id"
        ],
        flags: ["suggest"]
    ) { context in
        let a = context.arguments
        var draft = MoodDraft()
        draft.valence = try a.value("valence").map { try number($0, "valence") }
        draft.score = try a.value("score").map { try Context.integer($0, "score", in: MoodRules.scoreRange) }
        draft.labels = a.list("label")
        draft.associations = a.list("association")
        draft.tags = a.values["tag"] ?? []
        draft.notes = a.value("note")
        draft.kind = try a.value("kind").map(kind) ?? .momentaryEmotion
        draft.loggedAt = try context.loggedTimeOption()
        draft.source = try a.value("source").map(source) ?? .manual
        draft.sourceID = a.value("source-id")
        draft.suggestLabels = a.has("suggest")
        let ledger = try context.openLedger(write: true)
        defer { ledger.close() }
        let outcome = try ledger.log(draft)
        let entry = outcome.entry!  // a log always names its entry
        reportWords(draft, entry, context: context)
        if context.json {
            context.printJSON(entry.json)
        } else {
            context.console.line(entry.id.description)
            if !outcome.created {
                context.console.error(
                    outcome.appended
                        ? "moodledger: updated the day's existing daily mood"
                        : "moodledger: already logged (same source id); nothing appended")
            }
        }
        return ExitCode.ok
    }

    /// Says on stderr which typed words were recorded in Apple's spelling of the same word (`Current Events` →
    /// `current_events`; a different word is kept as typed and says nothing), and what would have been suggested
    /// for a score given without labels (stored only with `--suggest`).
    static func reportWords(_ draft: MoodDraft, _ entry: MoodEntry, context: Context) {
        func aliases<D>(_ typed: [String], _ as: VocabularyWord<D>.Type) -> [String] {
            typed.compactMap { text in
                guard let word = try? VocabularyWord<D>.parse(text), !word.isCustom,
                    word.wireName != text.lowercased().trimmingCharacters(in: .whitespaces)
                else { return nil }
                return "\(D.fieldName) \"\(text)\" recorded as \"\(word.wireName)\""
            }
        }
        for line in aliases(draft.labels, MoodLabel.self) + aliases(draft.associations, MoodAssociation.self) {
            context.console.error("moodledger: \(line)")
        }
        if let score = draft.score, draft.labels.isEmpty, !draft.suggestLabels, entry.labels.isEmpty {
            let labels = Suggestions.labels(forScore: score, notes: draft.notes).map(\.wireName)
            let associations = Suggestions.associations(forNotes: draft.notes).map(\.wireName)
            context.console.error(
                "moodledger: suggested labels: \(labels.joined(separator: ", "))"
                    + (associations.isEmpty ? "" : "; associations: \(associations.joined(separator: ", "))")
                    + " (not stored; add them with --suggest or `moodledger labels \(entry.id) --add …`)")
        }
    }

    static let update = CommandSpec(
        name: "update", summary: "change an entry's valence or score, note, time or kind",
        usage:
            "update ID [--valence V | --score N] [--note TEXT | --clear-note] [--time TIME] [--kind momentary|daily]",
        values: ["valence", "score", "note", "time", "at", "kind"], flags: ["clear-note"]
    ) { context in
        let a = context.arguments
        var changes = MoodChanges()
        changes.valence = try a.value("valence").map { try number($0, "valence") }
        changes.score = try a.value("score").map { try Context.integer($0, "score", in: MoodRules.scoreRange) }
        if a.has("clear-note") && a.value("note") != nil { throw UsageError("give --note or --clear-note, not both") }
        if let note = a.value("note") { changes.notes = .set(note) }
        if a.has("clear-note") { changes.notes = .clear }
        changes.loggedAt = try context.loggedTimeOption()
        changes.kind = try a.value("kind").map(kind)
        let ledger = try context.openLedger(write: true)
        defer { ledger.close() }
        let entry = try ledger.update(try context.entryID(in: ledger), changes)
        context.json
            ? context.printJSON(entry.json)
            : context.console.line(HumanFormat.entryLine(entry, color: context.console.color))
        return ExitCode.ok
    }

    static func words(_ field: String) -> CommandSpec {
        CommandSpec(
            name: field, summary: "set, add or remove an entry's \(field)",
            usage: "\(field) ID (--set W,W… | --add W | --remove W)", values: ["set", "add", "remove"]
        ) { context in
            let a = context.arguments
            let given = ["set", "add", "remove"].filter { a.values[$0] != nil }
            guard given.count == 1 else { throw UsageError("give exactly one of --set, --add, --remove") }
            let edit: WordEdit
            switch given[0] {
            case "set": edit = .set(a.list("set"))
            case "add": edit = .add(a.value("add")!)
            default: edit = .remove(a.value("remove")!)
            }
            let ledger = try context.openLedger(write: true)
            defer { ledger.close() }
            let id = try context.entryID(in: ledger)
            let entry: MoodEntry
            switch field {
            case "labels": entry = try ledger.editLabels(id, edit)
            case "associations": entry = try ledger.editAssociations(id, edit)
            default: entry = try ledger.editTags(id, edit)
            }
            context.json
                ? context.printJSON(entry.json)
                : context.console.line(HumanFormat.entryLine(entry, color: context.console.color))
            return ExitCode.ok
        }
    }

    static let delete = CommandSpec(
        name: "delete", summary: "delete an entry (its history stays in the log)",
        usage: "delete ID", printsData: false
    ) { context in
        let ledger = try context.openLedger(write: true)
        defer { ledger.close() }
        let id = try context.entryID(in: ledger)
        try ledger.delete(id)
        context.console.line("deleted \(id)")
        return ExitCode.ok
    }

    static let show = CommandSpec(
        name: "show", summary: "one entry, now or at a point", usage: "show ID [--at POINT]",
        values: ["at"]
    ) { context in
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        let id = try context.entryID(in: ledger)
        guard let entry = try context.read(ledger, { $0.entries[id] }) else {
            throw CLIError(
                ExitCode.noInput, "no entry \(id)" + (context.arguments.value("at").map { " at \($0)" } ?? ""),
                hint: "`moodledger history \(id)` shows what happened to it")
        }
        context.json ? context.printJSON(entry.json) : context.console.line(HumanFormat.entryDetail(entry))
        return ExitCode.ok
    }

    static let list = CommandSpec(
        name: "list", summary: "entries, newest first, with the backend API's filters",
        usage: "list [--from DATE] [--to DATE] [--source S] [--label L] [--association A] [--tag T] [--search TEXT] "
            + "[--min-valence V] [--max-valence V] [--limit N] [--offset N] [--all] [--at POINT]",
        values: [
            "from", "to", "source", "label", "association", "tag", "search", "min-valence", "max-valence", "limit",
            "offset", "at"
        ], flags: ["all"]
    ) { context in
        let a = context.arguments
        var query = EntryQuery()
        query.from = try context.dateOption("from")
        query.to = try context.dateOption("to")
        query.source = try a.value("source").map(source)
        query.label = try a.value("label").map { try MoodLabel.parse($0) }
        query.association = try a.value("association").map { try MoodAssociation.parse($0) }
        query.tag = a.value("tag")
        query.search = a.value("search")
        query.minValence = try a.value("min-valence").map { try number($0, "min-valence") }
        query.maxValence = try a.value("max-valence").map { try number($0, "max-valence") }
        query.limit = try a.value("limit").map { try Context.integer($0, "limit", in: MoodRules.pageSizeRange) } ?? 30
        query.offset = try a.value("offset").map { try Context.integer($0, "offset", in: 0...Int(Int32.max)) } ?? 0
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        // --all: the whole match in one pass.
        let page = try context.read(ledger) { a.has("all") ? try $0.listAll(query) : try $0.list(query) }
        if context.json {
            context.printJSON(page.json)
        } else {
            let color = context.console.color
            context.printLines(page.entries.map { HumanFormat.entryLine($0, color: color) })
            let shown = page.entries.isEmpty ? "no entries" : "\(page.offset + 1)–\(page.offset + page.entries.count)"
            context.console.line(
                "\(shown) of \(HumanFormat.count(page.total, "entry", "entries"))"
                    + (page.hasMore ? " (more: --offset \(page.offset + page.entries.count), or --all)" : ""))
        }
        return ExitCode.ok
    }

    // MARK: - Input parsing (errors are invalid input, exit 65, naming the field)

    static func number(_ text: String, _ field: String) throws -> Double {
        guard let value = Double(text), value.isFinite else { throw MoodError.invalid(field, "must be a number") }
        return value
    }

    static func kind(_ text: String) throws -> MoodKind {
        guard let kind = MoodKind(parsing: text) else { throw MoodError.invalid("kind", "must be momentary or daily") }
        return kind
    }

    static func source(_ text: String) throws -> MoodSource {
        guard let source = MoodSource(rawValue: text.lowercased()) else {
            throw MoodError.invalid("source", "must be manual, healthkit, backend, import or ai_analysis")
        }
        return source
    }

    static func instant(_ text: String) throws -> LoggedAt {
        guard let instant = ISO8601.parse(text) else {
            throw MoodError.invalid(
                "logged_at", "must be an ISO 8601 instant with an offset, e.g. 2026-03-01T08:15:00+01:00")
        }
        return instant
    }

    static func date(_ text: String, _ field: String) throws -> LocalDate {
        guard let date = LocalDate(text) else { throw MoodError.invalid(field, "must be a date yyyy-MM-dd") }
        return date
    }
}
