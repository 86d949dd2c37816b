import EventLog
import Foundation
import MoodLedger
import Platform
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerServer

/// Writes are appended on the event loops and answered by the sync threads once their group's `fdatasync` returned.
@Suite("Group commit")
struct GroupCommitTests {
    /// `count` POSTs at once, each on its own connection and thread; their statuses.
    static func concurrentPosts(_ h: ServerHarness, count: Int, tag: String) -> [Int] {
        let statuses = Mutex<[Int]>([])
        let group = DispatchGroup()
        for i in 0..<count {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                let response = try? h.request(
                    "POST", "/api/v1/mood", json: #"{"valence":0.1,"labels":["calm"],"tags":["\#(tag)\#(i)"]}"#)
                statuses.withLock { $0.append(response?.status ?? -1) }
            }
            thread.start()
        }
        group.wait()
        return statuses.withLock { $0 }
    }

    @Test("Concurrent writes share fdatasyncs: 32 writes on a slow disk take far fewer syncs, and every 201 is kept")
    func groups() throws {
        let io = FaultInjectingIO()
        io.plan.withLock { $0.syncDelayMicroseconds = 20_000 }
        let h = try ServerHarness { $0.io = io }
        defer { h.stop() }
        #expect(try h.request("GET", "/api/v1/mood").status == 200)  // the ledger is open
        let before = io.plan.withLock { $0.syncs }
        let statuses = Self.concurrentPosts(h, count: 32, tag: "g")
        #expect(statuses.allSatisfy { $0 == 201 }, "\(statuses)")
        let syncs = io.plan.withLock { $0.syncs } - before
        #expect(syncs >= 1 && syncs < 24, "\(syncs) syncs for 32 writes")
        #expect(try h.request("GET", "/api/v1/mood?from=2000-01-01").data["total"] == .int(32))
    }

    @Test("A failed sync answers 500 to its whole group (never a 2xx); the ledger is reopened and later writes succeed")
    func failedSync() throws {
        let io = FaultInjectingIO()
        let logged = Mutex<[String]>([])
        let h = try ServerHarness {
            $0.io = io
            $0.log = { line in logged.withLock { $0.append(line) } }
        }
        defer { h.stop() }
        let first = try h.request("POST", "/api/v1/mood", json: #"{"valence":0.3,"labels":["calm"]}"#)
        #expect(first.status == 201)
        io.plan.withLock {
            $0.syncDelayMicroseconds = 20_000
            $0.failNextSync = Errno(rawValue: EIO)
        }
        let statuses = Self.concurrentPosts(h, count: 8, tag: "f")
        #expect(statuses.contains(500), "\(statuses)")
        #expect(statuses.allSatisfy { $0 == 201 || $0 == 500 }, "\(statuses)")
        #expect(logged.withLock { $0.contains { $0.contains("sync failed") } })
        io.plan.withLock { $0.syncDelayMicroseconds = 0 }
        let after = try h.request("POST", "/api/v1/mood", json: #"{"valence":0.2,"labels":["calm"]}"#)
        #expect(after.status == 201, "the ledger was reopened from disk")
        // Every acknowledged write is there (the 500s are unknown outcomes: they may or may not be).
        let listed = try h.request("GET", "/api/v1/mood?from=2000-01-01&limit=100")
        let ids = Set(listed.data["entries"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [])
        #expect(ids.contains(first.data["id"]!.stringValue!) && ids.contains(after.data["id"]!.stringValue!))
        #expect(ids.count >= 2 + statuses.filter { $0 == 201 }.count)
    }

    @Test("The same Idempotency-Key while the first waits for its sync: answered after that sync with the first answer")
    func keyDuringSync() throws {
        let io = FaultInjectingIO()
        let h = try ServerHarness { $0.io = io }
        defer { h.stop() }
        #expect(try h.request("GET", "/api/v1/mood").status == 200)
        io.plan.withLock { $0.syncDelayMicroseconds = 300_000 }
        let key = ("Idempotency-Key", "slow-1")
        let first = Mutex<RawResponse?>(nil)
        let thread = Thread {
            let response = try? h.request(
                "POST", "/api/v1/mood", headers: [key], json: #"{"valence":0.5,"labels":["calm"]}"#)
            first.withLock { $0 = response }
        }
        thread.start()
        Thread.sleep(forTimeInterval: 0.1)
        #expect(first.withLock { $0 } == nil, "the first still waits for its sync")
        let second = try h.request("POST", "/api/v1/mood", headers: [key], json: #"{"valence":0.5,"labels":["calm"]}"#)
        #expect(waitUntil(seconds: 20) { first.withLock { $0 } != nil }, "the first is answered")
        let answered = try #require(first.withLock { $0 })
        #expect(answered.status == 201 && second.status == 201 && second.body == answered.body)
        #expect(try h.request("GET", "/api/v1/mood?from=2000-01-01").data["total"] == .int(1), "applied once")
    }
}

@Suite("Long work off the event loops")
struct LongWorkTests {
    @Test(
        "While long work (an erasure) holds a user's ledger, that user's requests are moved to workers, not waited for on the loop"
    )
    func busyLedgerIsOffloaded() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        #expect(try h.request("POST", "/api/v1/mood", json: #"{"valence":0.3,"labels":["calm"]}"#).status == 201)
        let alice = try h.backend.ledgers.lease("alice").user
        let entered = DispatchSemaphore(value: 0)
        let hold = DispatchSemaphore(value: 0)
        // Should the handler wait on the loop after all, the hold ends after 2 s so the test ends (and fails).
        Thread {
            alice.writingLong {
                entered.signal()
                _ = hold.wait(timeout: .now() + 2)
            }
        }.start()
        entered.wait()
        let pool = WorkerPool(count: 2, name: "test")
        defer { pool.stop() }
        let answer = Mutex<HTTPResponse?>(nil)
        let answered = DispatchSemaphore(value: 0)
        let responder = HTTPResponder(pool: pool, quiet: true) { response in
            answer.withLock { $0 = response }
            answered.signal()
        }
        let body = Array(#"{"valence":0.1,"labels":["calm"]}"#.utf8)
        let request = HTTPRequest(
            method: "POST", path: "/api/v1/mood", query: "",
            headers: h.auth("alice").map { ($0.0.lowercased(), $0.1) } + [("content-type", "application/json")],
            body: body)
        let immediate = h.backend.handle(request, responder: responder)
        #expect(immediate == nil, "the handler returned at once: the write waits on a worker")
        #expect(answer.withLock { $0 } == nil, "and not before the long work is done")
        hold.signal()
        if immediate == nil { answered.wait() }
        #expect((immediate ?? answer.withLock { $0 })?.status == 201)
    }
}
