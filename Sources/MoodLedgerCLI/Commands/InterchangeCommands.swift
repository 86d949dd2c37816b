import Foundation
import MoodInterchange
import MoodLedger

/// import, export, healthkit push|pull.
enum InterchangeCommands {
    static let all: [CommandSpec] = [importFile, export, healthkit]

    static let importFile = CommandSpec(
        name: "import", summary: "import a file atomically and idempotently (--dry-run: report only)",
        usage:
            "import FILE --format daylio|progress|legacy-mood|mood-api|json|healthkit|csv [--tz ZONE | --utc-offset ±HH:MM] "
            + "[--mood-map \"Name=level,…\"] [--suggest] [--update-existing] [--truncate-notes] [--dry-run]",
        values: ["format", "mood-map"], flags: ["truncate-notes", "dry-run", "suggest", "update-existing"]
    ) { context in
        let a = context.arguments
        let path = try context.positional(0, "FILE")
        guard let formatName = a.value("format") else { throw UsageError("import needs --format") }
        guard let format = ImportFormat(named: formatName) else {
            throw UsageError(
                "unknown format \(formatName) (one of \(ImportFormat.allCases.map(\.rawValue).joined(separator: ", ")), "
                    + "or json for mood-api)")
        }
        var options = ImportOptions()
        options.zone = try context.zone()
        options.suggest = a.has("suggest")
        options.truncateNotes = a.has("truncate-notes")
        for pair in a.list("mood-map") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let level = Int(parts[1].trimmingCharacters(in: .whitespaces)),
                (1...5).contains(level)
            else {
                throw UsageError("--mood-map takes Name=level pairs with levels 1...5")
            }
            options.moodMap[String(parts[0])] = level
        }
        let io = context.baseOptions.io
        let fd: Int32
        do { fd = try io.open(path, .readOnly) } catch {
            throw CLIError(ExitCode.noInput, "cannot read \(path): \(error)")
        }
        defer { io.close(fd) }
        var position: Int64 = 0
        let read: (UnsafeMutableRawBufferPointer) throws -> Int = { buffer in
            // Interrupted: the batch being streamed is cut off, and nothing of the import is kept.
            try Interrupted.check("nothing of this import was kept")
            let count = try io.read(fd, into: buffer, at: position)
            position += Int64(count)
            return count
        }
        let report: ImportReport
        do {
            if var stream = try ImportStream.open(format: format, options: options, read: read) {
                // CSV formats stream: the file, its rows and its events are never all in memory.
                let ledger = try context.openLedger(write: !a.has("dry-run"))
                defer { ledger.close() }
                context.console.progress("importing…")
                report = try ledger.importStream(
                    &stream, dryRun: a.has("dry-run"), updateExisting: a.has("update-existing"))
            } else {
                let bytes = try UserFiles.read(path, limit: 1 << 30, io: io)
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw CLIError(ExitCode.invalidInput, "\(path) is not UTF-8 text; nothing was imported")
                }
                let plan = try Importer.plan(text, format: format, options: options)
                let ledger = try context.openLedger(write: !a.has("dry-run"))
                defer { ledger.close() }
                try Interrupted.check("nothing of this import was kept")
                context.console.progress("importing \(plan.rows.count) rows…")
                report = try ledger.importPlan(plan, dryRun: a.has("dry-run"), updateExisting: a.has("update-existing"))
            }
        } catch let error as ImportError {
            throw CLIError(ExitCode.invalidInput, "\(path): \(error); nothing was imported")
        }
        context.console.progressDone()
        if context.json {
            context.printJSON(report.json)
        } else {
            context.console.line(
                (report.dryRun ? "dry run: would import" : "imported") + " \(report.rows) rows: "
                    + "\(report.created) new, \(report.existing) already there, \(report.merged) merged into a day's mood"
            )
            for line in report.truncatedLines { context.console.line("line \(line): notes cut to 500 characters") }
            for skipped in report.skipped { context.console.line("skipped \(skipped)") }
            for adjusted in report.adjustedTimes { context.console.line(adjusted) }
            if report.differing > 0 {
                context.console.line(
                    report.updated > 0
                        ? "\(report.updated) rows already imported with different values were updated"
                        : "\(report.differing) rows already imported with different values (update them with --update-existing)"
                )
            }
        }
        return ExitCode.ok
    }

    static let export = CommandSpec(
        name: "export", summary: "every entry as json, csv or healthkit, now or at a point",
        usage: "export --format json|csv|healthkit|progress [--at POINT]", values: ["format", "at"],
        printsData: false
    ) { context in
        guard let name = context.arguments.value("format"), let format = ExportFormat(rawValue: name) else {
            throw UsageError("export needs --format json, csv, healthkit or progress")
        }
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        // Written as it is made: memory holds a day of entries and 64 KiB of text, whatever the ledger's size.
        try context.read(ledger) { state in
            Exporter.stream(state, format: format) { context.console.write(String(decoding: $0, as: UTF8.self)) }
        }
        return ExitCode.ok
    }

    static let healthkit = CommandSpec(
        name: "healthkit", summary: "sync with a (simulated) HealthKit store file",
        usage: "healthkit push|pull --store FILE", values: ["store"]
    ) { context in
        let direction = try context.positional(0, "push or pull")
        guard let path = context.arguments.value("store") else { throw UsageError("healthkit needs --store FILE") }
        let store = FileHealthStore(path: path)
        let ledger = try context.openLedger(write: true)
        defer { ledger.close() }
        let report: HealthKitSyncReport
        do {
            switch direction {
            case "push": report = try ledger.pushToHealthKit(store, now: ledger.options.clock())
            case "pull": report = try ledger.pullFromHealthKit(store)
            default: throw UsageError("healthkit takes push or pull")
            }
        } catch let error as HealthStoreError {
            let code =
                error.code == .authorizationDenied || error.code == .invalidData
                ? ExitCode.invalidInput
                : ExitCode.ioError
            throw CLIError(code, "\(path): \(error.message); nothing was recorded")
        }
        if context.json {
            context.printJSON(report.json)
        } else if direction == "pull" {
            context.console.line("pull: \(HumanFormat.count(report.pulled, "sample", "samples")) read")
        } else {
            context.console.line(
                "push: saved \(report.saved), replaced \(report.replaced), deleted \(report.deleted), "
                    + "failed \(report.failed)"
                    + (report.skippedCustomWords > 0
                        ? "; \(report.skippedCustomWords) custom words left out (HealthKit cannot hold them)" : ""))
            for failure in report.failures { context.console.line("  failed \(failure.entryID): \(failure.error)") }
        }
        // Only a push where nothing failed is a success (69, EX_UNAVAILABLE, otherwise; the items stay queued).
        return report.failed > 0 ? ExitCode.unavailable : ExitCode.ok
    }

    /// `+02:00`, `-05:30`, `+0200`, `Z` → minutes.
    static func offset(_ text: String) throws -> Int {
        if text == "Z" || text == "+00:00" || text == "-00:00" { return 0 }
        guard let probe = ISO8601.parse("2000-01-01T00:00:00" + text) else {
            throw MoodError.invalid("utc_offset", "must look like +02:00 or -05:30")
        }
        return probe.utcOffsetMinutes
    }
}
