import Foundation
import MoodLedger
import Synchronization

/// `demo`: builds a deterministic sample ledger (a year of entries, edits, deletes, failed and retried syncs) and
/// gives a short guided tour.
enum DemoCommand {
    static let marker = ".moodledger-demo"

    static let spec = CommandSpec(
        name: "demo", summary: "build a sample ledger (default ./demo.ledger) and tour it",
        usage: "demo [--ledger PATH]", printsData: false
    ) { context in
        if !context.ledgerNamed { context.ledgerPath = "./demo.ledger" }
        let path = context.ledgerPath
        let io = context.baseOptions.io
        if io.exists(path) {
            guard io.exists(path + "/" + marker) else {
                throw CLIError(
                    ExitCode.cannotCreate, "\(path) exists and is not a demo ledger; not touching it",
                    hint: "give another --ledger PATH")
            }
            try UserFiles.removeTree(path, io: io)
        }
        // The demo's year ends yesterday, so that every default view (the last 30 days, the report's year) shows it.
        let clock = DemoClock(endingBefore: context.baseOptions.clock())
        var options = context.baseOptions
        options.clock = { clock.now }
        options.utcOffsetMinutes = 60
        options.zone = .fixed(minutes: 60)
        context.zoneOverride = .fixed(minutes: 60)
        let ids = DemoIDs()
        options.newID = { ids.next() }
        context.baseOptions = options
        let ledger = try context.openLedger(write: true, create: true)
        try UserFiles.write(Array("built by `moodledger demo`\n".utf8), to: path + "/" + marker, io: io)
        let story = try DemoStory.build(ledger, clock: clock)
        ledger.close()
        tour(context, story)
        return ExitCode.ok
    }

    static func tour(_ context: Context, _ story: DemoStory.Summary) {
        let console = context.console
        // Every command is printed as it can be pasted into a shell: with the ledger it uses.
        let ledger = context.ledgerPath.contains(" ") ? "'\(context.ledgerPath)'" : context.ledgerPath
        let run: ([String]) -> Void = { words in
            console.line("\n$ moodledger --ledger \(ledger) " + words.joined(separator: " "))
            _ = CLI.run(
                words + ["--ledger", context.ledgerPath], environment: context.environment, console: console,
                options: context.baseOptions)
        }
        console.line(
            "Built \(context.ledgerPath): \(story.events) events, \(story.entries) entries over a year "
                + "(\(story.edits) edits, \(story.deletes) deletes, \(story.failedSyncs) failed sync attempts).")
        console.line("\n1. The most recent entries:")
        run(["list", "--limit", "5"])
        console.line("\n2. How the last 30 days went:")
        run(["trends", "--from", story.lastMonthStart, "--to", story.lastDay])
        console.line("\n3. Everything that happened to one entry (logged, failed to sync, retried):")
        run(["history", story.auditedEntry])
        console.line("\n4. The outbox as it was before that retry succeeded — time travel, the way to debug sync:")
        run(["outbox", "--destination", "backend", "--at", String(story.beforeRetrySeq)])
        console.line("\n5. Every record checked:")
        run(["verify"])
        console.line("\nTry next:")
        console.line("$ moodledger --ledger \(ledger) day \(story.lastDay)")
        console.line("$ moodledger --ledger \(ledger) diff \(story.beforeRetrySeq) \(story.events)")
        console.line("$ moodledger --ledger \(ledger) events --entry \(story.auditedEntry) --json")
    }
}

/// The demo's clock: 07:00 UTC of the day 365 days before the day it is built onward, moved by the story.
final class DemoClock: Sendable {
    let milliseconds: Mutex<Int64>

    /// A clock whose story of 365 days ends the day before `now` (ms).
    init(endingBefore now: Int64) {
        let today = now - ((now % 86_400_000) + 86_400_000) % 86_400_000
        milliseconds = Mutex(today - 365 * 86_400_000 + 7 * 3_600_000)
    }

    var now: Int64 { milliseconds.withLock { $0 } }
    func set(_ value: Int64) { milliseconds.withLock { $0 = max($0, value) } }
    func advance(_ ms: Int64) { milliseconds.withLock { $0 += ms } }
}

/// Seeded entry and command ids, so every demo ledger is the same.
final class DemoIDs: Sendable {
    let generator = Mutex(SplitMix64(seed: 2025))
    func next() -> EntryID { generator.withLock { EntryID.random(using: &$0) } }
}
