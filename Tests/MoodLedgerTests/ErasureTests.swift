import EventLog
import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

@Suite("Erasure: an entry's personal data removed from an append-only log")
struct ErasureTests {
    /// Every file under `directory` (recursively).
    static func files(_ directory: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: directory)
        var paths: [String] = []
        while let name = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let path = directory + "/" + name
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                paths.append(path)
            }
        }
        return paths
    }

    /// The files of `directory` that contain any of `needles`.
    static func containing(_ needles: [String], in directory: String) -> [String] {
        files(directory).filter { path in
            let data = (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
            return needles.contains { data.range(of: Data($0.utf8)) != nil }
        }
    }

    /// A ledger with several entries, edits, sync history and one entry full of secrets; returns the secret entry.
    static func populate(_ ledger: Ledger) throws -> (EntryID, [String]) {
        var others: [EntryID] = []
        for i in 0..<30 {
            others.append(
                try ledger.log(MoodDraft(valence: Double(i % 10) / 10, labels: ["calm"], notes: "ordinary \(i)")).entry
                    .id)
        }
        let secret = try ledger.log(
            MoodDraft(
                valence: -0.7, labels: ["sad", "Zorblatt"], associations: ["family"],
                tags: ["tagsecret"], notes: "my secret note", source: .import,
                sourceID: "source-secret")
        ).entry.id
        _ = try ledger.update(secret, MoodChanges(notes: .set("edited secret")))
        _ = try ledger.editTags(secret, .add("tagsecret2"))
        try ledger.recordSyncAttempt(secret, to: .healthkit)
        try ledger.recordSyncFailure(secret, to: .healthkit, SyncFailure(status: 500, error: "err", retryable: true))
        for id in others.prefix(5) { _ = try ledger.update(id, MoodChanges(valence: 0.3)) }
        return (secret, ["my secret note", "edited secret", "tagsecret", "Zorblatt", "source-secret"])
    }

    static func exportOthers(_ ledger: Ledger, except id: EntryID) -> String {
        ledger.state.entries.all.filter { $0.id != id }.sorted { $0.id < $1.id }.map { $0.exportJSON.serialized() }
            .joined(separator: "\n")
    }

    @Test(
        "After erase: no trace of the entry's data in any file; verify passes; live == replay == snapshot + tail == time travel; others unchanged"
    )
    func erase() throws {
        let dir = TemporaryDirectory("erase")
        var options = Ledger.Options()
        options.snapshotInterval = 20  // snapshots that hold the entry exist before the erasure
        let ledger = try Ledger.open(at: dir.path, options: options)
        let (secret, needles) = try Self.populate(ledger)
        try ledger.snapshot()
        #expect(!Self.containing(needles, in: dir.path).isEmpty)
        let before = Self.exportOthers(ledger, except: secret)
        let seqBefore = ledger.lastSeq
        let report = try ledger.erase([secret], reason: "GDPR art. 17 request")
        #expect(report.erased == [secret] && report.recordsRedacted >= 5)
        #expect(ledger.entry(secret) == nil)
        #expect(Self.exportOthers(ledger, except: secret) == before)
        // a tail after the new snapshot
        for _ in 0..<12 { _ = try ledger.log(MoodDraft(valence: 0.1, labels: ["calm"])) }
        let live = ledger.state
        ledger.close()
        #expect(Self.containing(needles, in: dir.path).isEmpty, "\(Self.containing(needles, in: dir.path))")
        #expect(try Ledger.verify(at: dir.path).ok)
        // snapshot + tail
        let reopened = try Ledger.open(at: dir.path)
        let snapshotAndTail = reopened.state == live
        #expect(snapshotAndTail)
        // full replay
        var noSnapshots = Ledger.Options()
        noSnapshots.useSnapshots = false
        noSnapshots.readOnly = true
        let replayed = try Ledger.open(at: dir.path, options: noSnapshots)
        let fullReplay = replayed.state == live
        #expect(fullReplay)
        // time travel: before the erasure the entry is absent too (its data is gone); after, equal to live
        #expect(try reopened.state(at: .seq(seqBefore)).entries[secret] == nil)
        let travelled = try reopened.state(at: .seq(reopened.lastSeq - 1))
        var replayedTo = LedgerState()
        for event in try reopened.events(after: 0, through: reopened.lastSeq - 1) {
            replayedTo.apply(event)
        }
        let timeTravel = travelled == replayedTo
        #expect(timeTravel)
        let history = try reopened.history(of: secret)
        #expect(
            history.last.map {
                if case .entryErased(_, let erasure) = $0.event.event {
                    return erasure.complete && erasure.reason == "GDPR art. 17 request"
                } else {
                    return false
                }
            } == true)
        #expect(
            history.dropLast().allSatisfy { if case .redacted = $0.event.event { return true } else { return false } })
        #expect(throws: MoodError.self) { try reopened.erase([secret]) }
        reopened.close()
        replayed.close()
    }

    @Test(
        "One entry is erased in place: the same log file, written bytes of its records' order, older snapshots kept, newer ones gone"
    )
    func inPlace() throws {
        let dir = TemporaryDirectory("erase-in-place")
        let clock = ManualClock()
        let options = ledgerOptions(clock: clock, snapshotInterval: 20)
        let ledger = try Ledger.open(at: dir.path, options: options)
        for i in 0..<120 { _ = try ledger.log(MoodDraft(valence: 0.1, labels: ["calm"], notes: "before \(i)")) }
        let (secret, needles) = try Self.populate(ledger)
        let created = try #require(try ledger.history(of: secret).first?.event.seq)
        for i in 0..<40 { _ = try ledger.log(MoodDraft(valence: 0.2, notes: "after \(i)")) }
        let snapshots = {
            ((try? FileManager.default.contentsOfDirectory(atPath: dir.sub("snapshots"))) ?? []).sorted()
        }
        let before = snapshots()
        #expect(before.count > 1)
        let logPath = dir.sub("events.log")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: logPath)[.size] as? Int)
        let inode = try FileManager.default.attributesOfItem(atPath: logPath)[.systemFileNumber] as? Int
        let report = try ledger.erase([secret], ignoringDestinations: true)
        #expect(report.recordsRedacted == 6)
        #expect(report.bytesWritten < Int64(size / 10), "\(report.bytesWritten) bytes for a log of \(size)")
        #expect(try FileManager.default.attributesOfItem(atPath: logPath)[.systemFileNumber] as? Int == inode)
        let kept = snapshots()
        let covered = { (name: String) in UInt64(name.dropFirst("snapshot-".count).dropLast(".bin".count)) ?? 0 }
        #expect(kept == before.filter { covered($0) < created }, "\(before) → \(kept), created at \(created)")
        #expect(Self.containing(needles, in: dir.path).isEmpty)
        let live = ledger.state
        ledger.close()
        let reopened = try Ledger.open(at: dir.path, options: options)
        #expect(reopened.state == live, "snapshot + tail over the redacted records")
        reopened.close()
        #expect(try Ledger.verify(at: dir.path).ok)
    }

    @Test(
        "An erased entry's replacement note goes with it: live, after the rewrite, equals a replay of the rewritten log"
    )
    func erasedEntryNote() throws {
        let dir = TemporaryDirectory("erase-note")
        let clock = ManualClock()
        var options = ledgerOptions(clock: clock, snapshotInterval: 0)
        let ledger = try Ledger.open(at: dir.path, options: options)
        let kept = try ledger.log(MoodDraft(valence: 0.1)).entry.id
        let erased = try ledger.log(MoodDraft(valence: 0.2)).entry.id
        for id in [kept, erased] {
            _ = try ledger.execute { _, _ in
                ([.tagsEdited(id, ["t"]), .editReplaced(id, revision: 2, fields: [.tags])], id, false)
            }
        }
        #expect(ledger.state.requests.notes.keys.sorted() == [kept, erased].sorted())
        try ledger.erase([erased], ignoringDestinations: true)
        let live = ledger.state
        #expect(live.requests.notes.keys.sorted() == [kept], "the erased entry's note is gone, the other's stays")
        ledger.close()
        options.useSnapshots = false
        let replayed = try Ledger.open(at: dir.path, options: options)
        #expect(replayed.state.requests == live.requests)
        #expect(replayed.state == live)
        replayed.close()
    }

    @Test(
        "Erasures in the middle of a random workload: live == snapshot + tail == full replay == time travel (over the rewritten log)"
    )
    func workload() throws {
        let dir = TemporaryDirectory("erase-workload")
        let clock = ManualClock()
        var workload = Workload(random: SeededRandom(), clock: clock)
        let options = ledgerOptions(clock: clock, snapshotInterval: 53)
        let ledger = try Ledger.open(at: dir.path, options: options)
        for round in 0..<4 {
            for _ in 0..<150 { try workload.step(ledger) }
            let victims = ledger.state.entries.all.map(\.id).sorted().prefix(round + 1)
            try ledger.erase(Array(victims), reason: "round \(round)", ignoringDestinations: true)
            for id in victims { #expect(ledger.entry(id) == nil) }
        }
        for _ in 0..<60 { try workload.step(ledger) }
        let live = ledger.state
        // Time travel at several points equals folding the rewritten log up to them.
        for seq in stride(from: UInt64(1), through: live.seq, by: 37) {
            var folded = LedgerState()
            for event in try ledger.events(after: 0, through: seq) { folded.apply(event) }
            let travelled = try ledger.state(at: .seq(seq))
            let same =
                travelled.entries == folded.entries && travelled.outbox == folded.outbox
                && travelled.analytics == folded.analytics
            #expect(same, "time travel to \(seq)")
        }
        ledger.close()
        let warm = try Ledger.open(at: dir.path, options: options)
        let warmSame = warm.state == live
        #expect(warmSame, "snapshot + tail")
        warm.close()
        var cold = options
        cold.useSnapshots = false
        let replayed = try Ledger.open(at: dir.path, options: cold)
        let coldSame = replayed.state == live
        #expect(coldSame, "full replay")
        replayed.close()
        #expect(try Ledger.verify(at: dir.path).ok)
    }

    enum Step: String, CaseIterable, CustomStringConvertible {
        case appendWrite, appendSync, tempWrite, tempSync, rename, directorySync, inPlaceWrite, inPlaceSync
        var description: String { rawValue }

        /// The steps of an erasure that rewrites the whole log (of every entry): the append, then the new file's
        /// write, sync, rename and the directory's sync.
        static let wholeRewrite: [Step] = [.appendWrite, .appendSync, .tempWrite, .tempSync, .rename, .directorySync]

        /// Plans the fault at this step of an erasure: the append, then the redo journal's temp file, rename and
        /// directory sync, then the records written in place (torn inside the first) and the log's sync.
        func fail(_ io: FaultInjectingIO) {
            io.plan.withLock { plan in
                switch self {
                case .appendWrite: plan.failNextWrite = .ioError
                case .appendSync: plan.failNextSync = .ioError
                case .tempWrite: plan.failNextWrite = .noSpace; plan.writesBeforeFailure = 1
                case .tempSync: plan.failNextSync = .ioError; plan.syncsBeforeFailure = 1
                case .rename: plan.failNextRename = .ioError
                case .directorySync: plan.failNextDirectorySync = .ioError
                case .inPlaceWrite:
                    plan.failNextWrite = .ioError; plan.writesBeforeFailure = 2; plan.bytesBeforeFailure = 20
                case .inPlaceSync: plan.failNextSync = .ioError; plan.syncsBeforeFailure = 2
                }
            }
        }
    }

    @Test(
        "A rewrite that fails (no crash): the erasure is unfinished, never 'already erased'; erasing again finishes it",
        arguments: [Step.tempWrite, .tempSync, .rename])
    func unfinishedThenFinished(step: Step) throws {
        let dir = TemporaryDirectory("erase-unfinished")
        let io = FaultInjectingIO()
        var options = Ledger.Options()
        options.io = io
        let ledger = try Ledger.open(at: dir.path, options: options)
        defer { ledger.close() }
        let (secret, needles) = try Self.populate(ledger)
        step.fail(io)
        #expect(throws: (any Error).self) { try ledger.erase([secret]) }
        #expect(ledger.unfinishedErasures == [secret] && ledger.entry(secret) == nil)
        #expect(!Self.containing(needles, in: dir.path).isEmpty, "its data is still on disk")
        let lastSeq = ledger.lastSeq
        let report = try ledger.erase([secret])
        #expect(report.erased == [secret] && ledger.lastSeq == lastSeq, "finished, nothing more appended")
        #expect(ledger.unfinishedErasures.isEmpty && Self.containing(needles, in: dir.path).isEmpty)
        #expect(throws: MoodError.self) { try ledger.erase([secret]) }
        #expect(try Ledger.verify(at: dir.path).ok)
    }

    /// A ledger with one entry the backend holds a copy of (remote id `remote-secret-id`).
    static func withBackendCopy(_ dir: TemporaryDirectory) throws -> (Ledger, EntryID) {
        let ledger = try Ledger.open(at: dir.path)
        let id = try ledger.log(MoodDraft(valence: 0.2, labels: ["calm"], notes: "n")).entry.id
        try ledger.recordSyncAttempt(id, to: .backend)
        try ledger.recordSyncSuccess(id, to: .backend, remoteID: "remote-secret-id", revision: 4)
        return (ledger, id)
    }

    @Test(
        "A fault at every step of the erasure: reopening gives the pre-erasure ledger or the finished erasure, never a mix",
        arguments: Step.allCases)
    func faults(step: Step) throws {
        let dir = TemporaryDirectory("erase-fault")
        let io = FaultInjectingIO()
        var options = Ledger.Options()
        options.io = io
        let ledger = try Ledger.open(at: dir.path, options: options)
        let (secret, needles) = try Self.populate(ledger)
        let before = Self.exportOthers(ledger, except: secret)
        step.fail(io)
        #expect(throws: (any Error).self) { try ledger.erase([secret]) }
        ledger.close()
        let reopened = try Ledger.open(at: dir.path)
        defer { reopened.close() }
        #expect(Self.exportOthers(reopened, except: secret) == before, "no acknowledged event of another entry is lost")
        #expect(try Ledger.verify(at: dir.path).ok)
        if reopened.entry(secret) == nil {
            #expect(reopened.state.pendingErasures.isEmpty)
            #expect(
                Self.containing(needles, in: dir.path).isEmpty,
                "finished on open: \(Self.containing(needles, in: dir.path))")
        } else {
            #expect(step == .appendWrite || step == .appendSync, "only a failed append leaves the entry")
        }
        #expect(!Self.files(dir.path).contains { $0.contains(".tmp-") })
    }

    @Test("Erasing an entry a destination holds needs the delete first, or ignoringDestinations")
    func heldElsewhere() throws {
        let dir = TemporaryDirectory("erase-held")
        let (ledger, id) = try Self.withBackendCopy(dir)
        defer { ledger.close() }
        #expect(throws: MoodError.self) { try ledger.erase([id]) }
        try ledger.erase([id], ignoringDestinations: true)
        #expect(ledger.state.outbox.record(OutboxKey(entryID: id, destination: .backend)) == nil)
        #expect(Self.containing(["remote-secret-id"], in: dir.path).isEmpty)
    }
}
