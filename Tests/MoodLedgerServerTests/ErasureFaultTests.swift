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

    /// The server's log lines.
    final class Lines: Sendable { let value = Mutex<[String]>([]) }

    /// Whether alice's log file still holds the note's bytes.
    static func noteOnDisk(_ h: ServerHarness) throws -> Bool {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: h.dir.path + "/users/alice/events.log"))
        return bytes.range(of: Data(note.utf8)) != nil
    }

    /// A server over fault-injecting I/O whose log lines are kept, with one entry of alice's holding the note; its
    /// next erasure's rename fails with ENOSPC.
    static func serverWithFailingRename() throws -> (ServerHarness, Lines, String) {
        let io = FaultInjectingIO()
        let lines = Lines()
        let h = try ServerHarness {
            $0.io = io
            $0.log = { line in lines.value.withLock { $0.append(line) } }
        }
        let created = try h.request("POST", "/api/v1/mood", json: #"{"valence":0.3,"notes":"\#(note)"}"#)
        let id = try #require(created.data["id"]?.stringValue)
        io.plan.withLock { $0.failNextRename = .noSpace }
        return (h, lines, id)
    }

    @Test("A failed rewrite answers 503 erasure_unfinished (logged); the retry finishes it: 204, the note gone")
    func retryFinishes() throws {
        // The rewrite cannot replace the log (a full disk at the rename); the background finisher comes later.
        let (h, lines, id) = try Self.serverWithFailingRename()
        defer { h.stop() }
        let first = try h.request("DELETE", "/api/v1/mood/\(id)?erase=true")
        #expect(first.status == 503 && first.json["error"]?["code"] == .string("erasure_unfinished"))
        #expect(first.header("Retry-After") == "5")
        #expect(try Self.noteOnDisk(h), "the data is still on disk, and the answer did not say otherwise")
        #expect(lines.value.withLock { $0.contains { $0.contains("an erasure could not be finished yet") } })
        #expect(
            !lines.value.withLock { $0.contains { $0.contains(Self.note) } }, "the log never holds the user's words")
        #expect(try h.request("GET", "/api/v1/mood/\(id)").status == 404, "the entry is deleted meanwhile")
        let retry = try h.request("DELETE", "/api/v1/mood/\(id)?erase=true")
        #expect(retry.status == 204, "not 404 while the data is on disk: the retry finishes the erasure")
        #expect(try !Self.noteOnDisk(h))
        #expect(try h.request("DELETE", "/api/v1/mood/\(id)?erase=true").status == 404, "finished: now gone")
    }

    @Test("Without a retry the server finishes the erasure by itself, and logs it")
    func serverFinishesByItself() throws {
        let (h, lines, id) = try Self.serverWithFailingRename()
        defer { h.stop() }
        #expect(try h.request("DELETE", "/api/v1/mood/\(id)?erase=true").status == 503)
        // The data goes first, the log line once the finisher is done.
        let logged = { lines.value.withLock { $0.contains { $0.contains("alice: finished 1 erasure(s)") } } }
        try waitUntil(seconds: 20) { try !Self.noteOnDisk(h) && logged() }
        #expect(try !Self.noteOnDisk(h), "finished without any request")
        #expect(
            lines.value.withLock { $0.contains { $0.contains("alice: finished 1 erasure(s)") } },
            "\(lines.value.withLock { $0 })")
    }
}

/// A write that fails with `ENOSPC` leaves the user's log refusing writes until it is reopened: the server drops the
/// ledger, and the next request, once there is space again, reopens it and succeeds — no restart needed.
@Suite("A full disk, then space again", .serialized)
struct FullDiskTests {
    @Test("One POST meets ENOSPC (500, nothing acknowledged); the next POSTs are 201 without a restart")
    func writesResumeOnceSpaceIsBack() throws {
        let io = FaultInjectingIO()
        let lines = ErasureFaultTests.Lines()
        let h = try ServerHarness {
            $0.io = io
            $0.log = { line in lines.value.withLock { $0.append(line) } }
        }
        defer { h.stop() }
        #expect(try h.request("POST", "/api/v1/mood", json: #"{"valence":0.1}"#).status == 201)
        io.plan.withLock { $0.failNextWrite = .noSpace }
        let failed = try h.request("POST", "/api/v1/mood", json: #"{"valence":0.2}"#)
        #expect(failed.status == 500 || failed.status == 507, "\(failed.status)")
        for valence in [0.3, 0.4] {
            let next = try h.request("POST", "/api/v1/mood", json: #"{"valence":\#(valence)}"#)
            #expect(next.status == 201, "writes resume once space is back: \(next.status) \(next.text)")
        }
        let list = try h.request("GET", "/api/v1/mood?from=2000-01-01&to=2100-01-01")
        #expect(list.data["entries"]?.arrayValue?.count == 3, "\(list.text)")
        #expect(lines.value.withLock { $0.contains { $0.contains("a write failed") } }, "the drop is logged")
    }
}
