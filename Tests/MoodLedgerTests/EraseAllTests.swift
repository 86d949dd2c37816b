import EventLog
import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

@Suite("Erasing everything: one ledger.erased, one rewrite")
struct EraseAllTests {
    /// A ledger with the erasure tests' entries (one full of secrets) and two HealthKit copies whose data must stay
    /// when the erasure keeps them; returns the secrets and the HealthKit entries.
    static func populate(_ ledger: Ledger) throws -> (needles: [String], healthKit: [MoodEntry]) {
        let (_, needles) = try ErasureTests.populate(ledger)
        let gone = try ledger.log(MoodDraft(valence: 0.4, labels: ["calm"], notes: "deleted secret")).entry.id
        _ = try ledger.delete(gone)
        var healthKit: [MoodEntry] = []
        for i in 0..<2 {
            healthKit.append(
                try ledger.log(
                    MoodDraft(
                        valence: 0.5, labels: ["grateful"], notes: "health app note \(i)", source: .healthkit,
                        sourceID: "hk-sample-\(i)")
                ).entry)
        }
        return (needles + ["deleted secret"], healthKit)
    }

    /// The equivalences every projection keeps: live == snapshot + tail == full replay, and time travel to several
    /// points == folding the (rewritten) log up to them.
    static func expectEquivalent(_ dir: String, live: LedgerState, options: Ledger.Options) throws {
        let warm = try Ledger.open(at: dir, options: options)
        let warmSame = warm.state == live
        #expect(warmSame, "snapshot + tail")
        for seq in stride(from: UInt64(1), through: live.seq, by: UInt64.Stride(max(1, live.seq / 9))) {
            var folded = LedgerState()
            for event in try warm.events(after: 0, through: seq) { folded.apply(event) }
            let travelled = try warm.state(at: .seq(seq))
            let same =
                travelled.entries == folded.entries && travelled.outbox == folded.outbox
                && travelled.analytics == folded.analytics
            #expect(same, "time travel to \(seq)")
        }
        warm.close()
        var cold = options
        cold.useSnapshots = false
        cold.readOnly = true
        let replayed = try Ledger.open(at: dir, options: cold)
        let coldSame = replayed.state == live
        #expect(coldSame, "full replay")
        replayed.close()
        #expect(try Ledger.verify(at: dir).ok)
    }

    @Test(
        "eraseAll keeping HealthKit: no other entry's data in any file, the copies intact, one event appended; again: nothing appended",
        arguments: [false, true])
    func eraseAll(keepingHealthKit: Bool) throws {
        let dir = TemporaryDirectory("erase-all")
        var options = Ledger.Options()
        options.snapshotInterval = 20  // snapshots that hold the entries exist before the erasure
        let ledger = try Ledger.open(at: dir.path, options: options)
        let (needles, healthKit) = try Self.populate(ledger)
        try ledger.snapshot()
        #expect(!ErasureTests.containing(needles, in: dir.path).isEmpty)
        let current = ledger.state.entries.count
        let seqBefore = ledger.lastSeq
        let erasedID = ledger.state.entries.all.first { $0.source != .healthkit }!.id
        let report = try ledger.eraseAll(
            keepingHealthKit: keepingHealthKit, reason: "everything, please", ignoringDestinations: true)
        #expect(report.erasedAll == current - (keepingHealthKit ? 2 : 0))
        #expect(report.kept == (keepingHealthKit ? 2 : 0))
        #expect(ledger.lastSeq == seqBefore + 1, "one event for every entry")
        #expect(ledger.state.entries.all.map(\.id).sorted() == (keepingHealthKit ? healthKit.map(\.id).sorted() : []))
        #expect(ledger.state.pendingErasures.isEmpty)
        let healthKitNotes = healthKit.compactMap(\.notes)
        #expect(
            ErasureTests.containing(healthKitNotes, in: dir.path).isEmpty != keepingHealthKit,
            "HealthKit's copies stay exactly when kept")
        // A tail after the erasure's snapshot, then every equivalence.
        for i in 0..<12 { _ = try ledger.log(MoodDraft(valence: 0.1, labels: ["calm"], notes: "after \(i)")) }
        let live = ledger.state
        let history = try ledger.history(of: erasedID)
        #expect(
            history.dropLast().allSatisfy { if case .redacted = $0.event.event { return true } else { return false } })
        if case .ledgerErased(let erasure) = history.last?.event.event {
            #expect(erasure.complete && erasure.reason == "everything, please")
        } else {
            Issue.record("the history ends with the erasure of every entry")
        }
        ledger.close()
        #expect(
            ErasureTests.containing(needles, in: dir.path).isEmpty, "\(ErasureTests.containing(needles, in: dir.path))")
        try Self.expectEquivalent(dir.path, live: live, options: options)

        let again = try Ledger.open(at: dir.path, options: options)
        defer { again.close() }
        let seq = again.lastSeq
        let second = try again.eraseAll(keepingHealthKit: keepingHealthKit, ignoringDestinations: true)
        #expect(second.erasedAll == 12 && again.lastSeq == seq + 1)
        let third = try again.eraseAll(keepingHealthKit: keepingHealthKit, ignoringDestinations: true)
        #expect(third.erasedAll == 0 && third.recordsRedacted == 0 && again.lastSeq == seq + 1, "nothing to erase")
    }

    @Test(
        "Erasures of everything in the middle of a random workload keep every equivalence (seeded), replayed on one thread or two",
        arguments: [false, true])
    func workload(pipelined: Bool) throws {
        let dir = TemporaryDirectory("erase-all-workload")
        let clock = ManualClock()
        var workload = Workload(random: SeededRandom(), clock: clock)
        var options = ledgerOptions(clock: clock, snapshotInterval: 53)
        // Two threads: the reading one folds the record folds and hands them back at each `ledger.erased`.
        if pipelined { options.parallelReplayThreshold = 0 }
        let ledger = try Ledger.open(at: dir.path, options: options)
        for round in 0..<3 {
            for _ in 0..<150 { try workload.step(ledger) }
            let healthKit = ledger.state.entries.all.filter { $0.source == .healthkit }
            try ledger.eraseAll(keepingHealthKit: round != 1, reason: "round \(round)", ignoringDestinations: true)
            let kept = ledger.state.entries.all.sorted { $0.id < $1.id }
            #expect(kept == (round != 1 ? healthKit.sorted { $0.id < $1.id } : []))
            workload.ids = kept.map(\.id)
        }
        for _ in 0..<60 { try workload.step(ledger) }
        let live = ledger.state
        ledger.close()
        try Self.expectEquivalent(dir.path, live: live, options: options)
    }

    @Test(
        "A fault at every step of erasing everything: reopening gives the ledger before it or the finished erasure",
        arguments: ErasureTests.Step.wholeRewrite)
    func faults(step: ErasureTests.Step) throws {
        let dir = TemporaryDirectory("erase-all-fault")
        let io = FaultInjectingIO()
        var options = Ledger.Options()
        options.io = io
        let ledger = try Ledger.open(at: dir.path, options: options)
        let (needles, healthKit) = try Self.populate(ledger)
        let before = ledger.state.entries.count
        step.fail(io)
        #expect(throws: (any Error).self) { try ledger.eraseAll(keepingHealthKit: true) }
        ledger.close()
        let reopened = try Ledger.open(at: dir.path)
        defer { reopened.close() }
        #expect(try Ledger.verify(at: dir.path).ok)
        let ids = reopened.state.entries.all.map(\.id).sorted()
        if ids == healthKit.map(\.id).sorted() {
            #expect(reopened.state.pendingErasures.isEmpty)
            #expect(
                ErasureTests.containing(needles, in: dir.path).isEmpty,
                "finished on open: \(ErasureTests.containing(needles, in: dir.path))")
            #expect(reopened.notices.contains { $0.contains("every entry") } || step == .directorySync)
        } else {
            #expect(ids.count == before, "all or nothing")
            #expect(step == .appendWrite || step == .appendSync, "only a failed append leaves the entries")
        }
        #expect(!ErasureTests.files(dir.path).contains { $0.contains(".tmp-") })
    }

    @Test("eraseAll refuses, appending nothing, while a destination holds a copy of an entry it would erase")
    func heldElsewhere() throws {
        let dir = TemporaryDirectory("erase-all-held")
        let (ledger, id) = try ErasureTests.withBackendCopy(dir)
        defer { ledger.close() }
        let seq = ledger.lastSeq
        #expect(throws: MoodError.self) { try ledger.eraseAll(keepingHealthKit: true) }
        #expect(ledger.lastSeq == seq)
        try ledger.eraseAll(keepingHealthKit: true, ignoringDestinations: true)
        #expect(ledger.state.outbox.record(OutboxKey(entryID: id, destination: .backend)) == nil)
        #expect(ErasureTests.containing(["remote-secret-id"], in: dir.path).isEmpty)
    }
}

@Suite("Conflicts after an erasure of every entry")
struct ErasedConflictTests {
    /// A merge with a notes conflict on an entry of `source`.
    static func merge(_ id: EntryID, source: MoodSource) throws -> MoodEvent {
        func version(_ notes: String) throws -> MoodEntry {
            var entry = try MoodRules.validate(
                MoodDraft(valence: 0.2, labels: ["calm"], notes: notes, source: source, sourceID: "s-\(notes)", id: id),
                now: 1_780_000_000_000, bounds: .storage, newID: { id })
            entry.createdAt = 1_780_000_000_000
            entry.updatedAt = 1_780_000_000_000
            return entry
        }
        return .syncMerged(
            SyncMerge(
                entryID: id, remoteID: id.description, serverRevision: 5, baseRevision: 3, base: try version("base"),
                here: try version("secret here"), theirs: try version("secret there"),
                merged: try version("secret here")))
    }

    @Test("ledger.erased closes the conflicts of every entry it erases at once, with HealthKit's copies kept or not")
    func erasedConflictsClose() throws {
        let manual = EntryID(high: 1, low: 1)
        let health = EntryID(high: 1, low: 2)
        for keepsHealthKit in [true, false] {
            var fold = ConflictsFold()
            var seq: UInt64 = 0
            func apply(_ event: MoodEvent) {
                seq += 1
                fold.apply(
                    RecordedEvent(
                        seq: seq, recordedAt: 1_780_000_000_000_000 + Int64(seq), commandID: EntryID(high: 9, low: seq),
                        event: event, offset: 0, size: 0))
            }
            apply(try Self.merge(manual, source: .manual))
            apply(try Self.merge(health, source: .healthkit))
            #expect(fold.conflicts.count == 2)
            apply(.ledgerErased(Erasure(reason: "asked", requestedBy: "cli", keepsHealthKit: keepsHealthKit)))
            // No erased text is ever shown: only a kept HealthKit copy's conflict may stay.
            #expect(fold.conflicts.map(\.entryID) == (keepsHealthKit ? [health] : []))
        }
    }

    @Test(
        "A HealthKit copy deleted before the erasure loses its conflicts with its records: live == a replay of the rewritten log, on one thread or two",
        arguments: [false, true])
    func deletedHealthKitCopy(pipelined: Bool) throws {
        let dir = TemporaryDirectory("erase-all-deleted-copy")
        let clock = ManualClock()
        var options = ledgerOptions(clock: clock)
        if pipelined { options.parallelReplayThreshold = 0 }
        let ledger = try Ledger.open(at: dir.path, options: options)
        let copies = try ledger.log(
            contentsOf: (1...2).map { MoodDraft(valence: 0.2, source: .healthkit, sourceID: "hk-\($0)") })
        let (current, deleted) = (copies[0].id, copies[1].id)
        for copy in copies {
            // Both sides changed the mood since the base: a conflict. The first merge keeps the copy; the second
            // deletes it (the server's deletion of it won).
            var base = copy
            base.valence = 0.1
            var theirs = copy
            theirs.valence = 0.5
            let merge = SyncMerge(
                entryID: copy.id, remoteID: "srv-\(copy.id.low % 1000)", serverRevision: 5, baseRevision: 3, base: base,
                here: copy, theirs: theirs, merged: copy.id == deleted ? nil : copy)
            #expect(!merge.conflicts.isEmpty)
            _ = try ledger.execute { _, _ in ([.syncMerged(merge)], copy.id, false) }
            clock.advance(1_000)
        }
        #expect(Set(ledger.state.conflicts.conflicts.map(\.entryID)) == [current, deleted])
        #expect(ledger.entry(current) != nil && ledger.entry(deleted) == nil)
        let report = try ledger.eraseAll(keepingHealthKit: true, reason: "asked", ignoringDestinations: true)
        #expect(report.kept == 1)
        // The rewrite redacted the deleted copy's merge: its conflict cannot come back from the log, so it is gone.
        #expect(ledger.state.conflicts.conflicts.map(\.entryID) == [current])
        let live = ledger.state
        ledger.close()
        try EraseAllTests.expectEquivalent(dir.path, live: live, options: options)
    }
}
