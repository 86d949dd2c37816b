import Foundation
import MoodLedger
import Synchronization
import TestSupport
import Testing

/// `Ledger.changes()`: what another process appends is seen by an app that has the ledger open.
@Suite("Observing changes across processes")
struct ObservationTests {
    /// Collects a ledger's changes on a task of its own, so a test can wait for them with a deadline.
    final class Observer: Sendable {
        final class Received: Sendable {
            let changes = Mutex<[LedgerChange]>([])
            let failure = Mutex<String?>(nil)
        }
        let box = Received()
        let task: Task<Void, any Error>

        init(_ ledger: Ledger) {
            let box = self.box
            let changes = ledger.changes(every: .milliseconds(20))
            task = Task {
                do {
                    for try await change in changes { box.changes.withLock { $0.append(change) } }
                } catch {
                    box.failure.withLock { $0 = "\(error)" }
                }
            }
        }

        /// The changes received, once there are `count` of them or `seconds` have passed.
        /// Waits without holding a thread: the tasks that observe share the cooperative pool (two threads here).
        func wait(for count: Int, seconds: Double = 20) async throws -> [LedgerChange] {
            let deadline = Date().addingTimeInterval(seconds)
            while box.changes.withLock({ $0.count }) < count, Date() < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            if let failure = box.failure.withLock({ $0 }) { Issue.record("the changes ended with \(failure)") }
            return box.changes.withLock { $0 }
        }

        deinit { task.cancel() }
    }

    @Test(
        "A read-only ledger sees a log, an edit and an erasure made by the moodledger binary, each once, with the entries it touched"
    )
    func anotherProcess() async throws {
        let dir = TemporaryDirectory("observe")
        let path = dir.sub("app.ledger")
        #expect(try Tool.run(["init", "--ledger", path]).code == 0)
        let first = try #require(
            EntryID(
                try Tool.run(["log", "--score", "6", "--ledger", path]).out
                    .trimmingCharacters(in: .whitespacesAndNewlines)))
        var options = Ledger.Options()
        options.readOnly = true
        let ledger = try Ledger.open(at: path, options: options)
        defer { ledger.close() }
        let before = ledger.lastSeq
        let observer = Observer(ledger)

        let logged = try Tool.run([
            "log", "--score", "8", "--label", "calm", "--note", "seen elsewhere", "--ledger", path
        ])
        #expect(logged.code == 0, "\(logged.err)")
        let id = try #require(EntryID(logged.out.trimmingCharacters(in: .whitespacesAndNewlines)))
        let change = try #require(try await observer.wait(for: 1).first)
        #expect(change.firstSeq == before + 1 && change.lastSeq == ledger.lastSeq && change.entryIDs == [id])
        #expect(!change.logRewritten)
        // Once delivered, reads answer with it.
        #expect(ledger.read { $0.entries[id]?.notes } == "seen elsewhere")

        #expect(try Tool.run(["update", id.description, "--score", "3", "--ledger", path]).code == 0)
        let edit = try #require(try await observer.wait(for: 2).dropFirst().first)
        #expect(edit.firstSeq == change.lastSeq + 1 && edit.entryIDs == [id])
        #expect(ledger.read { $0.entries[id]?.score } == 3)

        // An erasure appends `entry.erased`, then redacts the entry's earlier records in place: the change that
        // brings the `entry.erased` says earlier records changed; the erased entry is gone from it.
        let erase = try Tool.run(["erase", id.description, "--yes", "--local-only", "--ledger", path])
        #expect(erase.code == 0, "\(erase.err)")
        var afterEdit: [LedgerChange] = []
        let deadline = Date().addingTimeInterval(20)
        while !afterEdit.contains(where: \.logRewritten), Date() < deadline {
            afterEdit = Array(try await observer.wait(for: 3).dropFirst(2))
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(afterEdit.contains(where: \.logRewritten) && (1...2).contains(afterEdit.count))
        #expect(afterEdit.flatMap(\.entryIDs) == [id] && afterEdit.last?.lastSeq == ledger.lastSeq)
        #expect(ledger.read { $0.entries[id] } == nil)
        #expect(ledger.read { $0.entries[first] } != nil)
        // Nothing more was appended, so nothing more is reported.
        try await Task.sleep(for: .milliseconds(150))
        #expect(try await observer.wait(for: 0, seconds: 0).count == 2 + afterEdit.count)
    }

    @Test("A writable ledger reports its own commits, each once")
    func ownCommits() async throws {
        let dir = TemporaryDirectory("observe-own")
        let ledger = try Ledger.open(at: dir.sub("own.ledger"))
        defer { ledger.close() }
        let observer = Observer(ledger)
        let one = try await ledger.log(MoodDraft(valence: 0.2)).entry.id
        let two = try await ledger.log(MoodDraft(valence: -0.2)).entry.id
        var seen: [EntryID] = []
        let deadline = Date().addingTimeInterval(60)
        while Set(seen) != [one, two], Date() < deadline {
            seen = try await observer.wait(for: 1).flatMap(\.entryIDs)
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(Set(seen) == [one, two] && seen.count == 2)
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await observer.wait(for: 0, seconds: 0).flatMap(\.entryIDs).count == 2)
        // Erasing everything names no entry: the change says the log was rewritten, so views read it again.
        try await ledger.eraseAll(keepingHealthKit: false, ignoringDestinations: true)
        var changes: [LedgerChange] = []
        // A wait of its own: under a loaded test run the observing task may get the cooperative pool's threads late.
        let rewriteDeadline = Date().addingTimeInterval(60)
        while !changes.contains(where: \.logRewritten), Date() < rewriteDeadline {
            changes = try await observer.wait(for: 0, seconds: 0)
            try await Task.sleep(for: .milliseconds(5))
        }
        let rewritten = changes.contains(where: \.logRewritten)
        #expect(rewritten, "\(changes)")
    }
}
