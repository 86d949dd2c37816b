import Dispatch
import Foundation
import MoodLedger
import Synchronization
import TestSupport
import Testing

/// One ledger, several processes (`Specs/ledger.md`, *Several processes*): an app keeps its ledger open and writes;
/// the `moodledger` binary (a widget, an App Intent) writes beside it; nothing is lost, doubled or reordered.
@Suite("Several processes, one ledger")
struct SeveralProcessesTests {
    /// The ledger replayed from its log alone, read-only.
    static func replayed(_ path: String) throws -> LedgerState {
        var options = Ledger.Options()
        options.readOnly = true
        options.useSnapshots = false
        let fresh = try Ledger.open(at: path, options: options)
        defer { fresh.close() }
        return fresh.state
    }

    @Test("An app holding the ledger open does not lock out another process; each sees the other's commits")
    func openLedgerLocksNobodyOut() throws {
        let dir = TemporaryDirectory("processes")
        let path = dir.sub("app.ledger")
        let app = try Ledger.open(at: path)
        defer { app.close() }
        let mine = try app.log(MoodDraft(valence: 0.3, labels: ["calm"])).entry.id
        // A second process writes while the app holds the ledger open, without waiting.
        let child = try Tool.run(["log", "--score", "8", "--ledger", path, "--wait", "0"])
        #expect(child.code == 0, "\(child.err)")
        let theirs = try #require(EntryID(child.out.trimmingCharacters(in: .whitespacesAndNewlines)))
        // The app's next write folds the other process's commit first: numbering goes on from it.
        let next = try app.log(MoodDraft(valence: -0.1))
        #expect(next.lastSeq == 3)
        #expect(app.entry(theirs)?.enteredScore == 8 && app.entry(mine) != nil)
        #expect(try Self.replayed(path) == app.state)
        // A reader's refresh, without a write, sees another process's commit too.
        #expect(try Tool.run(["log", "--score", "2", "--ledger", path, "--wait", "0"]).code == 0)
        #expect(try app.refresh() == 4)
        #expect(try Self.replayed(path) == app.state)
        #expect(try Tool.run(["verify", "--ledger", path]).code == 0)
    }

    @Test(
        "An observation hears another process's commits through the file system: the app neither writes nor refreshes",
        .timeLimit(.minutes(2)))
    func observeAnotherProcess() async throws {
        let dir = TemporaryDirectory("processes")
        let path = dir.sub("app.ledger")
        let app = try Ledger.open(at: path)
        defer { app.close() }
        try await app.log(MoodDraft(valence: 0.1))
        var counts = app.observe { $0.entries.count }.makeAsyncIterator()
        #expect(try await counts.next() == 1)
        #expect(try Tool.run(["log", "--score", "4", "--ledger", path, "--wait", "5"]).code == 0)
        #expect(try await counts.next() == 2)
        #expect(try Tool.run(["log", "--score", "9", "--ledger", path, "--wait", "5"]).code == 0)
        #expect(try await counts.next() == 3)
        #expect(try Self.replayed(path) == app.state)
    }

    @Test("Child processes and the app write together: every event once, sequence numbers contiguous, one state")
    func writingTogether() async throws {
        let dir = TemporaryDirectory("processes")
        let path = dir.sub("app.ledger")
        let app = try Ledger.open(at: path)
        defer { app.close() }
        let children = 6
        let appWrites = 30
        try await withThrowingTaskGroup(of: Int32.self) { group in
            for index in 0..<children {
                group.addTask {
                    try Tool.run([
                        "log", "--score", "\(index % 10 + 1)", "--note", "child \(index)", "--ledger", path,
                        "--wait", "30"
                    ]).code
                }
            }
            group.addTask {
                for index in 0..<appWrites {
                    try await app.log(MoodDraft(valence: Double(index) / 100, notes: "app \(index)"))
                }
                return 0
            }
            for try await code in group { #expect(code == 0) }
        }
        _ = try app.refresh()
        let events = try app.events()
        #expect(events.count == children + appWrites)
        #expect(events.map(\.seq) == Array(1...UInt64(children + appWrites)), "contiguous, each once")
        let notes = Set(app.state.entries.all.compactMap(\.notes))
        #expect(notes.count == children + appWrites, "no write lost or doubled")
        #expect(try Self.replayed(path) == app.state)
        #expect(try Tool.run(["verify", "--ledger", path]).code == 0)
    }

    @Test("Another process's erasure replaces what the app holds: its next read after a write or refresh has it gone")
    func erasureElsewhere() throws {
        let dir = TemporaryDirectory("processes")
        let path = dir.sub("app.ledger")
        let app = try Ledger.open(at: path)
        defer { app.close() }
        let secret = try app.log(MoodDraft(valence: 0.2, notes: "erase me elsewhere")).entry.id
        let kept = try app.log(MoodDraft(valence: 0.4, notes: "keep")).entry.id
        let erase = try Tool.run(["erase", secret.description, "--yes", "--local-only", "--ledger", path, "--wait", "5"]
        )
        #expect(erase.code == 0, "\(erase.err)")
        _ = try app.log(MoodDraft(valence: 0.5))
        #expect(app.entry(secret) == nil && app.entry(kept)?.notes == "keep")
        #expect(try Self.replayed(path) == app.state)
        let log = try Data(contentsOf: URL(fileURLWithPath: path + "/events.log"))
        #expect(log.range(of: Data("erase me elsewhere".utf8)) == nil)
    }

    @Test("A writer that died inside its batch leaves a torn tail: the next writer trims it and goes on")
    func tornTailOfAnother() throws {
        let dir = TemporaryDirectory("processes")
        let path = dir.sub("app.ledger")
        let app = try Ledger.open(at: path)
        defer { app.close() }
        try app.log(MoodDraft(valence: 0.1))
        // What a process killed mid-write leaves: part of a record past the last batch (the lock is released by
        // its death).
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path + "/events.log"))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0x4D, 0x4C, 0x52, 0x31, 0xFF, 0x00, 0x10]))
        try handle.close()
        try app.log(MoodDraft(valence: 0.2))
        #expect(app.lastSeq == 2)
        #expect(try Self.replayed(path) == app.state)
        #expect(try Tool.run(["verify", "--ledger", path]).code == 0)
    }

    @Test("keepsWriterLock: the one writer per directory, as a server runs; another writer waits, then exits 75")
    func exclusive() throws {
        let dir = TemporaryDirectory("processes")
        let path = dir.sub("app.ledger")
        var options = Ledger.Options()
        options.keepsWriterLock = true
        let holder = try Ledger.open(at: path, options: options)
        let result = try Tool.run(["log", "--score", "5", "--ledger", path, "--wait", "0"])
        #expect(result.code == 75 && result.err.contains("pid \(getpid())"), "\(result.err)")
        holder.close()
        #expect(try Tool.run(["log", "--score", "5", "--ledger", path, "--wait", "0"]).code == 0)
    }
}
