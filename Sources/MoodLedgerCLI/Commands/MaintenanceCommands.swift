import EventLog
import Foundation
import MoodLedger

/// init, snapshot, rebuild, verify, repair, stats.
enum MaintenanceCommands {
    static let all: [CommandSpec] = [initialize, snapshot, rebuild, verify, repair, stats]

    static let initialize = CommandSpec(
        name: "init", summary: "create an empty ledger (directory 0700, files 0600)",
        usage: "init", printsData: false
    ) { context in
        if context.ledgerExists {
            throw CLIError(ExitCode.cannotCreate, "a ledger already exists at \(context.ledgerPath)")
        }
        do {
            let ledger = try context.openLedger(write: true, create: true)
            ledger.close()
        } catch let error as EventLogError where error.code == .io {
            throw CLIError(ExitCode.cannotCreate, "cannot create \(context.ledgerPath): \(error)")
        }
        context.console.line("created \(context.ledgerPath)")
        return ExitCode.ok
    }

    static let snapshot = CommandSpec(
        name: "snapshot", summary: "write a snapshot now", usage: "snapshot",
        printsData: false
    ) { context in
        let ledger = try context.openLedger(write: true)
        defer { ledger.close() }
        let seq = try ledger.snapshot()
        context.console.line(seq == 0 ? "the ledger is empty: nothing to snapshot" : "snapshot at seq \(seq)")
        return ExitCode.ok
    }

    static let rebuild = CommandSpec(
        name: "rebuild", summary: "discard snapshots, replay the whole log, snapshot",
        usage: "rebuild", printsData: false
    ) { context in
        context.console.progress("rebuilding…")
        let ledger = try context.openLedger(write: true)
        defer { ledger.close() }
        let seq = try ledger.rebuild()
        context.console.progressDone()
        context.console.line("rebuilt from \(seq) events; \(ledger.read { $0.entries.count }) entries")
        return ExitCode.ok
    }

    static let verify = CommandSpec(
        name: "verify", summary: "check every record and event; exit 1 on problems",
        usage: "verify"
    ) { context in
        guard context.ledgerExists else {
            throw CLIError(ExitCode.noInput, "no ledger at \(context.ledgerPath)")
        }
        context.console.progress("verifying…")
        let report = try Ledger.verify(at: context.ledgerPath, io: context.baseOptions.io)
        context.console.progressDone()
        if context.json {
            context.printJSON(report.json)
        } else {
            context.console.line(
                report.ok
                    ? "ok: \(report.records) records, no problems"
                    : "\(report.problems.count) problem(s) in \(report.records) readable records:")
            for unfinished in [report.unfinishedWrite, report.unfinishedRedaction].compactMap({ $0 }) {
                context.console.line(
                    "note: at offset \(unfinished.offset), seq \(unfinished.seq): \(unfinished.problem)")
            }
            defer {
                if !report.ok {
                    context.console.line(
                        "repair with `moodledger repair --salvage --ledger \(context.ledgerPath)` "
                            + "(or --truncate); a copy of the damaged log is kept first")
                }
            }
            for problem in report.problems {
                context.console.line("  offset \(problem.offset), seq \(problem.seq): \(problem.problem)")
            }
            if !report.ok {
                context.console.line(
                    "hint: `moodledger repair --salvage` keeps every readable record (and a copy of the file)")
            }
        }
        return report.ok ? ExitCode.ok : ExitCode.problemsFound
    }

    static let repair = CommandSpec(
        name: "repair", summary: "mend a damaged log (a copy of it is kept first)",
        usage: "repair (--truncate | --salvage)", flags: ["truncate", "salvage"]
    ) { context in
        let a = context.arguments
        guard a.has("truncate") != a.has("salvage") else {
            throw UsageError("give exactly one of --truncate, --salvage")
        }
        guard context.ledgerExists else {
            throw CLIError(ExitCode.noInput, "no ledger at \(context.ledgerPath)")
        }
        var report = try Ledger.repair(
            at: context.ledgerPath, mode: a.has("truncate") ? .truncate : .salvage,
            io: context.baseOptions.io)
        if let backup = report.backupPath, !backup.hasPrefix("/") {
            report.backupPath = FileManager.default.currentDirectoryPath + "/" + backup  // absolute, like `stats`
        }
        let lost = report.lostSeqs.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)–\($0.upperBound)" }
        if context.json {
            context.printJSON(
                .object([
                    ("repaired", .bool(report.backupPath != nil)),
                    ("backup", .optional(report.backupPath) { .string($0) }),
                    ("kept_records", .int(Int64(report.keptRecords))),
                    // Numbers for single seqs, [first, last] pairs for ranges (a second reader never parses text).
                    (
                        "lost_seqs",
                        .array(
                            report.lostSeqs.map { range in
                                range.count == 1
                                    ? .int(Int64(range.lowerBound))
                                    : .array([.int(Int64(range.lowerBound)), .int(Int64(range.upperBound))])
                            })
                    ),
                    (
                        "dropped_bytes",
                        .array(
                            report.droppedBytes.map {
                                .object([("from", .int($0.lowerBound)), ("to", .int($0.upperBound))])
                            })
                    )
                ]))
        } else if report.backupPath == nil {
            context.console.line("nothing to repair: the log is sound")
        } else {
            context.console.line(
                "repaired (\(report.mode.rawValue)); the damaged file is kept at \(report.backupPath!)")
            context.console.line(
                "kept \(report.keptRecords) records; lost seqs: \(lost.isEmpty ? "none" : lost.joined(separator: ", "))"
            )
        }
        return ExitCode.ok
    }

    static let stats = CommandSpec(name: "stats", summary: "events, entries, files and bytes", usage: "stats") {
        context in
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        var stats = ledger.stats
        stats.logFiles = stats.logFiles.map(absolute)
        stats.snapshotFiles = stats.snapshotFiles.map(absolute)
        if context.json {
            context.printJSON(stats.json)
        } else {
            context.console.line(
                "events    \(stats.events)\nentries   \(stats.entries)\nlast seq  \(stats.lastSeq)\nbytes     \(stats.bytes)"
            )
            for file in stats.logFiles + stats.snapshotFiles { context.console.line("file      \(file)") }
        }
        return ExitCode.ok
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : URL(fileURLWithPath: path).standardizedFileURL.path
    }
}
