import EventLog
import Foundation
import TestSupport
import Testing

@testable import MoodInterchange
@testable import MoodLedger
@testable import MoodModel

/// An import holds the entries it creates apart and reads them back from the log (`ImportScratch`): its decisions
/// must be the plain fold's (a dry run folds every event, and is the reference), and the state it leaves — the held
/// entries read back into it, or a snapshot written from it day by day — must be the full replay's.
@Suite("An import holds its new entries apart and decides as the plain fold")
struct ImportScratchTests {
    /// A seeded file whose rows meet every path: new entries, repeats of this file's and the ledger's source ids
    /// (some with other values), second daily moods of a day (merges), explicit ids new and repeated, plain rows.
    /// Daily moods go only to days without a HealthKit one (a merge into one is refused, failing the whole import).
    static func plan(
        _ random: inout SeededRandom, rows: Int, ledgerSourceIDs: [String], start: Int64,
        readOnlyMoodDays: Set<LocalDate> = []
    ) -> ImportPlan {
        var plan = ImportPlan(format: .moodAPI)
        var ownSourceIDs: [String] = []
        var explicitIDs: [EntryID] = []
        for line in 1...rows {
            var draft = MoodDraft(valence: (Double.random(in: -1...1, using: &random) * 100).rounded() / 100)
            draft.loggedAt = LoggedAt(
                milliseconds: start + Int64.random(in: 0..<(12 * 86_400_000), using: &random) + Int64(line) * 60_000,
                utcOffsetMinutes: [0, 60, -300].randomElement(using: &random)!)
            if Int.random(in: 0..<3, using: &random) == 0 { draft.notes = "row \(line)" }
            if Bool.random(using: &random) { draft.labels = ["calm"] }
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<45:
                draft.source = .import
                draft.sourceID = "file-\(line)"
                ownSourceIDs.append("file-\(line)")
            case 45..<57 where !ownSourceIDs.isEmpty:
                draft.source = .import
                draft.sourceID = ownSourceIDs.randomElement(using: &random)!
            case 57..<65 where !ledgerSourceIDs.isEmpty:
                draft.source = .import
                draft.sourceID = ledgerSourceIDs.randomElement(using: &random)!
            case 65..<82:
                let loggedAt = LoggedAt(
                    milliseconds: start + Int64(Int.random(in: 0..<12, using: &random)) * 86_400_000 + 43_200_000
                        + Int64.random(in: -3_600_000...3_600_000, using: &random),
                    utcOffsetMinutes: 60)
                if !readOnlyMoodDays.contains(loggedAt.localDate) {
                    draft.kind = .dailyMood
                    draft.loggedAt = loggedAt
                }
            case 82..<90:
                if explicitIDs.isEmpty || Bool.random(using: &random) {
                    explicitIDs.append(EntryID.random(using: &random))
                }
                draft.id = explicitIDs.randomElement(using: &random)!
            default:
                break
            }
            plan.rows.append(ImportRow(line: line, draft: draft))
        }
        return plan
    }

    /// The state a replay of the whole log gives.
    static func replayed(_ ledger: Ledger) throws -> LedgerState {
        var state = LedgerState()
        try ledger.eventLog.forEach(from: 1, through: ledger.lastSeq) { view in
            try state.fold(view)
            return true
        }
        return state
    }

    @Test(
        "Seeded files into seeded ledgers (with and without a snapshot), through both ends (entries read back into the state, or a snapshot written day by day): the dry run's decisions, and live == full replay == reopened == a snapshot encoded from the replay",
        arguments: [(7 as UInt64, false), (8, true), (9, false), (10, true)])
    func sameAsPlainFold(seed: UInt64, baseSnapshot: Bool) throws {
        try Self.check(
            seed: seed, baseSnapshot: baseSnapshot, rows: 300,
            cases: [(100_000, false), (100_000, true), (25, false), (25, true)])
    }

    @Test(
        "A file of 15,000 rows, its batch written a MiB at a time: repeats read their entries back from the file as well as from what is not written yet"
    )
    func readBackFromTheFile() throws {
        try Self.check(seed: 11, baseSnapshot: true, rows: 15_000, cases: [(100_000, true)])
    }

    @Test(
        "The snapshot a large import makes due fails to be written (a write, its sync, its rename): the import stands, its entries are read back into the state, and nothing half-written is left",
        arguments: ["write", "sync", "rename"])
    func snapshotFault(step: String) throws {
        let dir = TemporaryDirectory("import-scratch-fault")
        let io = FaultInjectingIO()
        let clock = ManualClock()
        var options = ledgerOptions(clock: clock, ids: IDSource(seed: 5), snapshotInterval: 50)
        options.snapshotOnCloseMinimum = .max
        options.io = io
        let ledger = try Ledger.open(at: dir.path, options: options)
        var random = SeededRandom(seed: 12, test: "import-scratch-fault")
        let plan = Self.plan(&random, rows: 200, ledgerSourceIDs: [], start: clock.now - 20 * 86_400_000)
        io.plan.withLock { plan in
            // The batch's one write and one sync go through; the snapshot's first write, its sync or its rename fail.
            switch step {
            case "write": (plan.failNextWrite, plan.writesBeforeFailure) = (.noSpace, 1)
            case "sync": (plan.failNextSync, plan.syncsBeforeFailure) = (.ioError, 1)
            default: plan.failNextRename = .ioError
            }
        }
        let report = try ledger.importPlan(plan)
        #expect(report.created > 100)
        #expect(ledger.state == (try Self.replayed(ledger)))
        #expect(ledger.state.entries.image == nil, "no snapshot read through")
        let snapshots = (try? FileManager.default.contentsOfDirectory(atPath: dir.sub("snapshots"))) ?? []
        #expect(snapshots.isEmpty, "\(snapshots)")
        ledger.close()
        let reopened = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock))
        #expect(reopened.state == (try Self.replayed(reopened)))
        #expect(reopened.state.entries.count == ledger.state.entries.count)
        reopened.close()
    }

    /// Imports a seeded file into a seeded ledger for each (snapshot interval, update existing) case and checks the
    /// report against a dry run's and the state against the full replay's.
    static func check(seed: UInt64, baseSnapshot: Bool, rows: Int, cases: [(Int, Bool)]) throws {
        var random = SeededRandom(seed: seed, test: "import-scratch")
        for (interval, updateExisting) in cases {
            let base = TemporaryDirectory("import-scratch")
            let clock = ManualClock()
            let ids = IDSource(seed: seed)
            var options = ledgerOptions(clock: clock, ids: ids, snapshotInterval: interval)
            options.snapshotOnCloseMinimum = .max
            var ledgerSourceIDs: [String] = []
            var readOnlyMoodDays: Set<LocalDate> = []
            do {
                let ledger = try Ledger.open(at: base.path, options: options)
                var workload = Workload(random: random, clock: clock)
                for _ in 0..<80 { try workload.step(ledger) }
                random = workload.random
                // Entries with source ids of the file's source, for repeats of the ledger's own.
                let first = Self.plan(&random, rows: 40, ledgerSourceIDs: [], start: clock.now - 20 * 86_400_000)
                _ = try ledger.importPlan(first)
                ledgerSourceIDs = ledger.state.entries.all.compactMap { $0.source == .import ? $0.sourceID : nil }
                readOnlyMoodDays = Set(
                    ledger.state.entries.all.filter { $0.source == .healthkit && $0.kind == .dailyMood }.map(
                        \.localDate))
                if baseSnapshot { _ = try ledger.snapshot() }
                ledger.close()
            }
            let plan = Self.plan(
                &random, rows: rows, ledgerSourceIDs: ledgerSourceIDs, start: clock.now - 25 * 86_400_000,
                readOnlyMoodDays: readOnlyMoodDays)
            let dryDirectory = TemporaryDirectory("import-scratch-dry")
            try FileManager.default.removeItem(atPath: dryDirectory.path)
            try FileManager.default.copyItem(atPath: base.path, toPath: dryDirectory.path)

            // Both draw the same ids (which entry is a day's daily mood, or holds a shared key, can turn on them).
            let importIDs = [IDSource(seed: seed + 1000), IDSource(seed: seed + 1000)]
            options.newID = { importIDs[0].next() }
            let dry = try Ledger.open(at: dryDirectory.path, options: options)
            let expected = try dry.importPlan(plan, dryRun: true, updateExisting: updateExisting)
            dry.close()
            options.newID = { importIDs[1].next() }
            let ledger = try Ledger.open(at: base.path, options: options)
            let report = try ledger.importPlan(plan, updateExisting: updateExisting)
            let context = "seed \(seed), snapshot interval \(interval), update \(updateExisting)"
            #expect(report.created == expected.created, "\(context)")
            #expect(report.existing == expected.existing, "\(context)")
            #expect(report.merged == expected.merged, "\(context)")
            #expect(report.differing == expected.differing, "\(context)")
            #expect(report.updated == expected.updated, "\(context)")
            #expect(report.created > 100 && report.merged > 0 && report.existing > 0, "\(context): every path met")

            let replay = try Self.replayed(ledger)
            #expect(ledger.state == replay, "\(context): live == full replay")
            if interval < report.appended {
                // The import made a snapshot due: written from the scratch, day by day, and read through since.
                let snapshot = Bytes.read(
                    base.sub("snapshots/snapshot-\(String(format: "%020llu", ledger.lastSeq)).bin"))
                #expect(snapshot == (try snapshotEncodedFromReplay(ledger)), "\(context): the snapshot's bytes")
                #expect(ledger.state.entries.image?.seq == ledger.lastSeq, "\(context): read through it")
            }
            ledger.close()
            let reopened = try Ledger.open(at: base.path, options: options)
            #expect(reopened.state == replay, "\(context): reopened == full replay")
            reopened.close()
        }
    }
}
