import MoodLedger
import MoodLedgerSync

/// `conflicts [resolve]`: what merges recorded as changed on both sides, and choosing a side (`Specs/sync.md`).
enum ConflictCommands {
    static let spec = CommandSpec(
        name: "conflicts",
        summary: "conflicts sync recorded (both sides changed a field); resolve one by choosing a side",
        usage: "conflicts [--at POINT]\n       conflicts resolve ID --take here|server [--field FIELD]",
        values: ["at", "take", "field"]
    ) { context in
        switch context.arguments.positionals.first {
        case nil: return try list(context)
        case "resolve"?: return try resolve(context)
        case let other?: throw UsageError("conflicts takes resolve, not \(other)")
        }
    }

    private static func list(_ context: Context) throws -> Int32 {
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        var through = UInt64.max
        if let text = context.arguments.value("at") {
            let point = try Context.point(text)
            if case .seq(let seq) = point, seq > ledger.lastSeq {
                throw CLIError(
                    ExitCode.invalidInput, "--at \(seq) is past the end of the log (the last seq is \(ledger.lastSeq))")
            }
            through = try ledger.seq(at: point)
        }
        let conflicts = try ledger.conflicts(through: through)
        if context.json {
            context.printJSON(.array(conflicts.map(json)))
            return ExitCode.ok
        }
        if conflicts.isEmpty { context.console.line("no open conflicts") }
        for conflict in conflicts {
            let field = MergeFields.named.first { $0.field == conflict.field }?.name ?? "field"
            let show = { (entry: MoodEntry?) in MergeStory.value(conflict.field, of: entry, showNotes: true) }
            if conflict.field == .existence {
                context.console.line(
                    "\(conflict.entryID)  entry  "
                        + (conflict.here == nil && conflict.server != nil
                            ? "deleted here, changed on the server" : "deleted on the server, changed here")
                        + (conflict.result == nil ? " → deleted" : " → kept") + "  (seq \(conflict.seq))")
                continue
            }
            context.console.line(
                "\(conflict.entryID)  \(field)  base \(show(conflict.base))  here \(show(conflict.here))  "
                    + "server \(show(conflict.server))  → \(conflict.winner == .here ? "here" : "server") won  (seq \(conflict.seq))"
            )
        }
        return ExitCode.ok
    }

    static func json(_ conflict: OpenConflict) -> JSONValue {
        .object([
            ("entry_id", .string(conflict.entryID.description)),
            ("field", .string(conflict.field.names.first ?? "")),
            ("seq", .int(Int64(conflict.seq))),
            ("at", .string(ISO8601.format(milliseconds: conflict.at, offsetMinutes: 0))),
            ("base", MergeStory.json(conflict.field, of: conflict.base)),
            ("here", MergeStory.json(conflict.field, of: conflict.here)),
            ("server", MergeStory.json(conflict.field, of: conflict.server)),
            ("result", MergeStory.json(conflict.field, of: conflict.result)),
            ("won", .string(conflict.winner == .here ? "here" : "server"))
        ])
    }

    /// Closes the entry's open conflicts (one field with `--field`): `--take here` keeps what is here; `--take server`
    /// sets each field to the server's value with ordinary edit events, which then sync. One command, one batch.
    private static func resolve(_ context: Context) throws -> Int32 {
        guard context.arguments.positionals.count == 2 else { throw UsageError("conflicts resolve takes one entry ID") }
        let choice: ConflictChoice
        switch context.arguments.value("take") {
        case "here"?: choice = .here
        case "server"?: choice = .server
        case let other?: throw UsageError("--take must be here or server, not \(other)")
        case nil: throw UsageError("conflicts resolve needs --take here|server")
        }
        var only: MergeFields?
        if let name = context.arguments.value("field") {
            guard let known = MergeFields.named.first(where: { $0.name == name }) else {
                throw UsageError(
                    "--field must be one of " + MergeFields.named.map(\.name).joined(separator: ", ") + ", not \(name)")
            }
            only = known.field
        }
        let ledger = try context.openLedger(write: true)
        defer { ledger.close() }
        let id = try context.entryID(1, in: ledger, includingPast: true)
        let fields = try ledger.resolvingConflict(id, take: choice, field: only).fields
        context.console.line(
            "resolved \(fields.names.joined(separator: ", ")) of \(id): "
                + (choice == .here
                    ? "the value here stays"
                    : "the server's value is the entry's now; it syncs with the next `moodledger sync`"))
        return ExitCode.ok
    }
}
