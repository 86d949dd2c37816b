import Foundation
import MoodLedger
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerServer

/// A server-side erasure whose rewrite fails (`Specs/server.md`, *Erasure that could not finish*): never reported
/// done, never 404 while the data is on disk; finished by a retry, or by the server itself, and logged.
@Suite("Erasures that cannot finish at once", .serialized)
struct ErasureFaultTests {
    static let note = "ErasureFaultTests private note"

    /// Whether alice's log file still holds the note's bytes.
    static func noteOnDisk(_ h: ServerHarness) throws -> Bool {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: h.dir.path + "/users/alice/events.log"))
        return bytes.range(of: Data(note.utf8)) != nil
    }

    @Test("A failed rewrite answers 503 erasure_unfinished (logged); the retry finishes it: 204, the note gone")
    func retryFinishes() throws {
        let io = FaultInjectingIO()
        let lines = Mutex<[String]>([])
        let h = try ServerHarness {
            $0.io = io
            $0.log = { line in lines.withLock { $0.append(line) } }
        }
        defer { h.stop() }
        let created = try h.request("POST", "/api/v1/mood", json: #"{"valence":0.3,"notes":"\#(Self.note)"}"#)
        let id = try #require(created.data["id"]?.stringValue)
        _ = try h.request("GET", "/api/v1/mood/\(id)")
        // The rewrite cannot replace the log (a full disk at the rename); the background finisher fails too at first.
        io.plan.withLock { $0.failNextRename = .noSpace }
        let first = try h.request("DELETE", "/api/v1/mood/\(id)?erase=true")
        #expect(first.status == 503 && first.json["error"]?["code"] == .string("erasure_unfinished"))
        #expect(first.header("Retry-After") == "5")
        #expect(try Self.noteOnDisk(h), "the data is still on disk, and the answer did not say otherwise")
        #expect(lines.withLock { $0.contains { $0.contains("an erasure could not be finished yet") } })
        #expect(!lines.withLock { $0.contains { $0.contains(Self.note) } }, "the log never holds the user's words")
        #expect(try h.request("GET", "/api/v1/mood/\(id)").status == 404, "the entry is deleted meanwhile")
        let retry = try h.request("DELETE", "/api/v1/mood/\(id)?erase=true")
        #expect(retry.status == 204, "not 404 while the data is on disk: the retry finishes the erasure")
        #expect(try !Self.noteOnDisk(h))
        #expect(try h.request("DELETE", "/api/v1/mood/\(id)?erase=true").status == 404, "finished: now gone")
    }

    @Test("Without a retry the server finishes the erasure by itself, and logs it")
    func serverFinishesByItself() throws {
        let io = FaultInjectingIO()
        let lines = Mutex<[String]>([])
        let h = try ServerHarness {
            $0.io = io
            $0.log = { line in lines.withLock { $0.append(line) } }
        }
        defer { h.stop() }
        let created = try h.request("POST", "/api/v1/mood", json: #"{"valence":0.3,"notes":"\#(Self.note)"}"#)
        let id = try #require(created.data["id"]?.stringValue)
        io.plan.withLock { $0.failNextRename = .noSpace }
        #expect(try h.request("DELETE", "/api/v1/mood/\(id)?erase=true").status == 503)
        let deadline = Date().addingTimeInterval(20)
        while try Self.noteOnDisk(h), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(try !Self.noteOnDisk(h), "finished without any request")
        #expect(
            lines.withLock { $0.contains { $0.contains("alice: finished 1 erasure(s)") } }, "\(lines.withLock { $0 })")
    }
}
