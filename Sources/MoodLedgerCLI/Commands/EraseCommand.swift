import MoodLedger
import MoodLedgerSync
import Platform

/// `erase`: remove entries' personal data from the ledger, provably (`Specs/erasure.md`).
enum EraseCommand {
    static let spec = CommandSpec(
        name: "erase", summary: "erase an entry's personal data (or every entry's) from the log and snapshots",
        usage: "erase ID [--reason TEXT] [--yes] [--local-only] [--include-backups] [--credentials FILE]\n"
            + "       erase --all [--before DATE] [--include-healthkit] [--reason TEXT] [--yes] [--local-only] [--include-backups]",
        values: ["reason", "before", "credentials"],
        flags: ["all", "yes", "local-only", "include-backups", "include-healthkit"]
    ) { context in
        let all = context.arguments.has("all")
        guard all != (context.arguments.positionals.count == 1) else {
            throw UsageError(all ? "erase --all takes no ID" : "erase needs an entry ID, or --all")
        }
        if context.arguments.value("before") != nil && !all { throw UsageError("--before goes with --all") }
        if context.arguments.has("include-healthkit") && !all {
            throw UsageError("--include-healthkit goes with --all")
        }
        let reason = context.arguments.value("reason") ?? ""
        let localOnly = context.arguments.has("local-only")
        let ledger = try context.openLedger(write: true)
        defer { ledger.close() }
        let before = try context.dateOption("before")
        if all && before == nil {
            return try eraseEverything(context, ledger: ledger, reason: reason, localOnly: localOnly)
        }
        var ids: [EntryID]
        var skipped = 0
        if all {
            ids = try ledger.erasableEntryIDs(loggedBefore: before)
            if !context.arguments.has("include-healthkit") {
                // HealthKit's samples live in the Health app: erasing the copy here alone would not forget them
                // (a `healthkit pull` brings them back), so `--all` leaves them unless asked.
                let candidates = ids
                let fromHealthKit = ledger.read { state in
                    Set(candidates.filter { state.entries[$0]?.source == .healthkit })
                }
                skipped = fromHealthKit.count
                ids.removeAll { fromHealthKit.contains($0) }
            }
            if ids.isEmpty {
                context.console.line("nothing to erase" + skippedNote(skipped))
                return ExitCode.ok
            }
        } else {
            // An id never logged or already erased has no copy anywhere, and `erase` refuses it (66) before appending.
            ids = [try context.entryID(0, in: ledger, includingPast: true)]
        }
        try confirm(context, count: "\(ids.count) entr\(ids.count == 1 ? "y" : "ies")")
        // Everything that can refuse is decided before anything is appended: a copy held elsewhere is removed first
        // (or the command refuses, having changed nothing), then the erasure is one batch.
        if !localOnly {
            let candidates = Set(ids)
            try removeCopies(
                held(ledger, where: { id, _ in candidates.contains(id) }), ledger: ledger, context: context)
        }
        // Once `entry.erased` is appended the erasure finishes even when interrupted (it must not stop half-way).
        try Interrupted.check("nothing was erased")
        let report = try ledger.erase(ids, reason: reason, requestedBy: "cli", ignoringDestinations: true)
        return try finish(context, report: report, skipped: skipped, localOnly: localOnly)
    }

    /// `erase --all` without a date: one `ledger.erased` for every entry (`Specs/erasure.md`, *Erasing everything*),
    /// its cost one pass over the log whatever the number of entries.
    private static func eraseEverything(
        _ context: Context, ledger: Ledger, reason: String, localOnly: Bool
    ) throws -> Int32 {
        let keepHealthKit = !context.arguments.has("include-healthkit")
        let scope = Erasure(reason: reason, requestedBy: "cli", keepsHealthKit: keepHealthKit)
        // Counting HealthKit's copies decodes every entry: only for the question (the erasure counts what it kept).
        try confirm(
            context,
            count: ledger.read { state in
                let kept = keepHealthKit ? state.entries.count(source: .healthkit) : 0
                return "every entry (\(state.entries.count - kept) current, and every deleted one)"
            })
        if !localOnly {
            // HealthKit's copies that stay are not asked to be deleted anywhere.
            try removeCopies(
                held(ledger, where: { _, entry in !scope.keeps(entry) }), ledger: ledger,
                context: context)
        }
        try Interrupted.check("nothing was erased")
        let report = try ledger.eraseAll(
            keepingHealthKit: keepHealthKit, reason: reason, requestedBy: "cli", ignoringDestinations: true)
        if report.erasedAll == 0 && report.recordsRedacted == 0 && !context.json {
            context.console.line("nothing to erase" + skippedNote(report.kept))
            return ExitCode.ok
        }
        return try finish(context, report: report, skipped: report.kept, localOnly: localOnly)
    }

    /// Prints what an erasure did and removes the repair backups when asked.
    private static func finish(_ context: Context, report: EraseReport, skipped: Int, localOnly: Bool) throws -> Int32 {
        var removed: [String] = []
        if context.arguments.has("include-backups") {
            for backup in report.backups {
                try UserFiles.remove(backup)
                removed.append(backup)
            }
        }
        let left = report.backups.filter { !removed.contains($0) }
        if context.json {
            guard case .object(var pairs) = report.json else { return ExitCode.ok }
            pairs.append(("backups_removed", .array(removed.map { .string($0) })))
            pairs.append(("skipped_healthkit", .int(Int64(skipped))))
            context.printJSON(.object(pairs))
        } else {
            let what =
                report.erasedAll.map { "every entry (\($0) current)" }
                ?? "\(report.erased.count) entr\(report.erased.count == 1 ? "y" : "ies")"
            context.console.line(
                "erased \(what): "
                    + "\(report.recordsRedacted) records redacted, log rewritten (\(report.bytesWritten) bytes), snapshots replaced"
                    + skippedNote(skipped))
            for backup in removed { context.console.line("removed repair backup \(backup)") }
            if !left.isEmpty {
                context.console.line(
                    "not reached: \(left.count) repair backup\(left.count == 1 ? "" : "s") still hold old records "
                        + "(\(left.joined(separator: ", "))); add --include-backups to remove them")
            }
            context.console.line(
                "not reached either: blocks of the old file on the storage device until the filesystem "
                    + "reuses them, exports and copies outside the ledger"
                    + (localOnly ? ", and the copies at destinations (--local-only)" : ""))
        }
        return ExitCode.ok
    }

    private static func skippedNote(_ skipped: Int) -> String {
        skipped == 0
            ? ""
            : "; skipped \(skipped) entr\(skipped == 1 ? "y" : "ies") from HealthKit (they live in the Health "
                + "app: delete them there; --include-healthkit erases the copies here too)"
    }

    /// On a terminal: ask. Elsewhere: `--yes` is required.
    /// - Parameter count: what is to be erased, worded (asked for only when the question is put).
    private static func confirm(_ context: Context, count: @autoclosure () -> String) throws {
        if context.arguments.has("yes") { return }
        guard SystemIO.isTerminal(0) else {
            throw UsageError("erase cannot be undone: pass --yes to confirm when not on a terminal")
        }
        context.console.error(
            "Erase \(count())? Their notes, words and history are "
                + "removed for good. Type 'erase' to confirm: ", terminator: "")
        guard readLine()?.trimmingCharacters(in: .whitespaces) == "erase" else {
            throw CLIError(ExitCode.ok, "not confirmed; nothing was erased")
        }
    }

    /// Removes the copies destinations hold before anything is appended: the backend is asked to delete and erase
    /// its copy (`DELETE …/{id}?erase=true`, idempotent: 404 means it is already gone). A copy that cannot be removed
    /// from here — in HealthKit, at a backend no longer configured, or one the backend did not erase — refuses the
    /// command (69) with nothing changed.
    private static func removeCopies(
        _ held: (copies: [SyncDestination: [EntryID]], configured: Bool), ledger: Ledger, context: Context
    ) throws {
        let (held, configured) = held
        let hint = "or erase only here with --local-only (the copy then stays where it is)"
        if let atHealthKit = held[.healthkit] {
            throw CLIError(
                ExitCode.unavailable,
                "\(copies(atHealthKit.count)) in HealthKit, which erase cannot reach; nothing was erased",
                hint: "delete (`moodledger delete ID`) and run `moodledger healthkit push --store FILE` first, " + hint)
        }
        guard let atBackend = held[.backend] else { return }
        guard configured else {
            throw CLIError(
                ExitCode.unavailable,
                "\(copies(atBackend.count)) at a backend that is not configured here; nothing was erased",
                hint: "configure it with `moodledger remote set URL --dialect …` and erase again, " + hint)
        }
        let source = SyncCredentials.Source(
            file: context.arguments.value("credentials"), environment: context.environment)
        let engine: SyncEngine
        switch Result(catching: { () throws(SyncError) in
            try SyncEngine(ledger: ledger, credentials: { () throws(SyncError) in try source.load() })
        }) {
        case .success(let made): engine = made
        case .failure(let error):
            throw CLIError(
                ExitCode.unavailable,
                "\(copies(atBackend.count)) at the backend, which cannot be asked to erase it "
                    + "(\(error.message)); nothing was erased", hint: hint)
        }
        let failures = engine.eraseAtRemote(atBackend)
        if let (id, why) = failures.min(by: { $0.key < $1.key }) {
            throw CLIError(
                ExitCode.unavailable,
                "the backend did not erase its copy of \(failures.count == 1 ? "1 entry" : "\(failures.count) entries") "
                    + "(\(id): \(why)); nothing was erased",
                hint: "try again when the backend answers, " + hint)
        }
    }

    /// The copies destinations hold of the entries `erases` picks (by id and current entry), and whether a backend
    /// is configured.
    private static func held(
        _ ledger: Ledger, where erases: (EntryID, MoodEntry?) -> Bool
    ) -> (copies: [SyncDestination: [EntryID]], configured: Bool) {
        ledger.read { state in
            var held: [SyncDestination: [EntryID]] = [:]
            for destination in SyncDestination.allCases {
                let ids = state.outbox.entriesHeld(at: destination).filter { erases($0, state.entries[$0]) }
                if !ids.isEmpty { held[destination] = ids }
            }
            return (held, state.outbox.progress(.backend).remote != nil)
        }
    }

    private static func copies(_ count: Int) -> String {
        count == 1 ? "1 entry has a copy" : "\(count) entries have copies"
    }
}
