import EventLog
import MoodLedger
import MoodLedgerSync

/// `erase`: remove entries' personal data from the ledger, provably (`Specs/erasure.md`).
enum EraseCommand {
    static let spec = CommandSpec(
        name: "erase", summary: "erase an entry's personal data (or every entry's) from the log and snapshots",
        usage: "erase ID [--reason TEXT] [--yes] [--local-only] [--include-backups] [--credentials FILE]\n"
            + "       erase --all [--before DATE] [--reason TEXT] [--yes] [--local-only] [--include-backups]",
        values: ["reason", "before", "credentials"], flags: ["all", "yes", "local-only", "include-backups"]) { context in
        let all = context.arguments.has("all")
        guard all != (context.arguments.positionals.count == 1) else {
            throw UsageError(all ? "erase --all takes no ID" : "erase needs an entry ID, or --all")
        }
        if context.arguments.value("before") != nil && !all { throw UsageError("--before goes with --all") }
        let reason = context.arguments.value("reason") ?? ""
        let localOnly = context.arguments.has("local-only")
        // Resolve before opening for writing (a prefix resolves among current entries; a whole UUID may be deleted).
        let single: EntryID? = all ? nil : try (EntryID(context.arguments.positionals[0]) ?? context.entryID(0))
        let ledger = try context.openLedger(write: true)
        defer { ledger.close() }
        var ids: [EntryID]
        if all {
            let before = try context.dateOption("before")
            ids = try ledger.erasableEntryIDs(loggedBefore: before)
            if ids.isEmpty {
                context.console.line("nothing to erase")
                return ExitCode.ok
            }
        } else {
            ids = [single!]
        }
        try confirm(context, count: ids.count)
        if !localOnly { try deleteAtDestinations(ids, ledger: ledger, context: context) }
        let report = try ledger.erase(ids, reason: reason, requestedBy: "cli", ignoringDestinations: localOnly)
        var removed: [String] = []
        if context.arguments.has("include-backups") {
            for backup in report.backups {
                try OutputFile.remove(backup)
                removed.append(backup)
            }
        }
        let left = report.backups.filter { !removed.contains($0) }
        if context.json {
            guard case .object(var pairs) = report.json else { return ExitCode.ok }
            pairs.append(("backups_removed", .array(removed.map { .string($0) })))
            context.printJSON(.object(pairs))
        } else {
            context.console.line("erased \(report.erased.count) entr\(report.erased.count == 1 ? "y" : "ies"): "
                + "\(report.recordsRedacted) records redacted, log rewritten (\(report.bytesWritten) bytes), snapshots replaced")
            for backup in removed { context.console.line("removed repair backup \(backup)") }
            if !left.isEmpty {
                context.console.line("not reached: \(left.count) repair backup\(left.count == 1 ? "" : "s") still hold old records "
                    + "(\(left.joined(separator: ", "))); add --include-backups to remove them")
            }
            context.console.line("not reached either: blocks of the old file on the storage device until the filesystem "
                + "reuses them, exports and copies outside the ledger" + (localOnly ? ", and the copies at destinations (--local-only)" : ""))
        }
        return ExitCode.ok
    }

    /// On a terminal: ask. Elsewhere: `--yes` is required.
    private static func confirm(_ context: Context, count: Int) throws {
        if context.arguments.has("yes") { return }
        guard SystemIO.isTerminal(0) else {
            throw UsageError("erase cannot be undone: pass --yes to confirm when not on a terminal")
        }
        context.console.error("Erase \(count) entr\(count == 1 ? "y" : "ies")? Their notes, words and history are "
            + "removed for good. Type 'erase' to confirm: ", terminator: "")
        guard readLine()?.trimmingCharacters(in: .whitespaces) == "erase" else {
            throw CLIError(ExitCode.ok, "not confirmed; nothing was erased")
        }
    }

    /// A copy held by a destination gets a delete first: deleted here, then the delete sent to the backend.
    private static func deleteAtDestinations(_ ids: [EntryID], ledger: Ledger, context: Context) throws {
        func held() -> [(EntryID, SyncDestination)] {
            let state = ledger.state
            return ids.flatMap { id in
                SyncDestination.allCases.compactMap { destination in
                    state.outbox.record(OutboxKey(entryID: id, destination: destination))?.remoteID == nil ? nil : (id, destination)
                }
            }
        }
        guard !held().isEmpty else { return }
        for id in Set(held().map(\.0)) where ledger.entry(id) != nil { try ledger.delete(id) }
        let atBackend = held().filter { $0.1 == .backend }.map(\.0)
        if !atBackend.isEmpty, ledger.state.outbox.progress(.backend).remote != nil {
            let source = SyncCredentials.Source(file: context.arguments.value("credentials"), environment: context.environment)
            do {
                let engine = try SyncEngine(ledger: ledger, credentials: { () throws(SyncError) in try source.load() })
                _ = try engine.run(once: true)
                // The delete leaves the entry in the server's history: ask it to erase that too.
                for (id, why) in engine.eraseAtRemote(atBackend) {
                    context.console.error("moodledger erase: notice: the backend did not erase \(id): \(why)")
                }
            } catch let error as SyncError {
                context.console.error("moodledger erase: notice: the delete could not be sent: \(error.message)")
            }
        }
        let still = held()
        guard still.isEmpty else {
            let names = Set(still.map(\.1.rawValue)).sorted().joined(separator: ", ")
            throw CLIError(ExitCode.unavailable, "\(still.count) cop\(still.count == 1 ? "y is" : "ies are") still at \(names): "
                + "the delete must reach them before the erasure (nothing was erased; the entries are deleted here)",
                hint: "run `moodledger sync` (or `healthkit push --store FILE`) and erase again, or erase only here with --local-only")
        }
    }
}
