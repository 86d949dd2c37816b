import Foundation
import MoodLedger
import Platform
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerSync

/// A backend played by a function: each request's answer, every request kept.
final class ScriptedTransport: SyncTransport, @unchecked Sendable {  // `answer` is immutable; `seen` is a Mutex
    let answer: @Sendable (SyncRequest) -> SyncExchange
    let seen = Mutex<[SyncRequest]>([])

    init(_ answer: @escaping @Sendable (SyncRequest) -> SyncExchange) { self.answer = answer }

    func perform(_ request: SyncRequest, credentials: SyncCredentials) -> SyncExchange {
        seen.withLock { $0.append(request) }
        return answer(request)
    }

    var requests: [SyncRequest] { seen.withLock { $0 } }

    /// A JSON answer.
    static func json(_ status: Int, _ text: String, headers: [(name: String, value: String)] = []) -> SyncExchange {
        .response(status: status, headers: headers, body: Array(text.utf8))
    }

    /// An entry as the feed carries it.
    static func entry(_ id: String, valence: Double, notes: String) -> String {
        #"{"id":"\#(id)","logged_at":"2026-05-01T10:00:00Z","utc_offset_minutes":0,"kind":"momentary_emotion","#
            + #""valence":\#(valence),"labels":["calm"],"associations":[],"tags":[],"notes":"\#(notes)"}"#
    }

    /// A changes page.
    static func page(_ items: [(id: String, revision: Int, entry: String?)], revision: Int, next: Int) -> String {
        let changes = items.map { item in
            #"{"revision":\#(item.revision),"operation":"\#(item.entry == nil ? "delete" : "upsert")","id":"\#(item.id)","entry":\#(item.entry ?? "null")}"#
        }
        return
            #"{"success":true,"data":{"changes":[\#(changes.joined(separator: ","))],"revision":\#(revision),"next_since":\#(next),"has_more":false}}"#
    }
}

@Suite("What the sync client refuses to believe")
struct UntrustedAnswerTests {
    static let credentials = SyncCredentials(apiKey: "k", token: "t")

    private func device(_ dir: TemporaryDirectory, dialect: RemoteDialect = .moodAPI) throws -> Device {
        try Device(
            dir.sub("device"), remote: "http://127.0.0.1:9", dialect: dialect,
            capabilities: dialect == .moodAPI ? RemoteCapabilities.all.subtracting(.batch) : .seed(dialect))
    }

    /// A feed that answers `page` to every changes read (nothing else is asked of a device with nothing to send).
    private func pull(_ page: String, into device: Device) throws -> SyncReport {
        let transport = ScriptedTransport { _ in ScriptedTransport.json(200, page) }
        return try device.sync(Self.credentials, transport: transport)
    }

    @Test("A change above the feed's own revision, an item whose ids disagree, a cursor past the feed: refused whole")
    func impossiblePages() throws {
        let a = EntryID.random().description
        let b = EntryID.random().description
        let pages: [(String, String)] = [
            (
                ScriptedTransport.page(
                    [(a, 3, ScriptedTransport.entry(a, valence: 0.1, notes: "a"))], revision: 2, next: 2),
                "above the feed's own revision"
            ),
            (
                ScriptedTransport.page(
                    [(a, 3, ScriptedTransport.entry(b, valence: 0.1, notes: "b"))], revision: 3, next: 3),
                "carries entry \(b)"
            ),
            (
                ScriptedTransport.page(
                    [(a, 3, ScriptedTransport.entry(a, valence: 0.1, notes: "a"))], revision: 3, next: 900),
                "past the feed's own revision"
            )
        ]
        for (page, words) in pages {
            let dir = TemporaryDirectory("untrusted-page")
            let device = try device(dir)
            let report = try pull(page, into: device)
            #expect(report.pullError?.contains(words) == true, "\(report.pullError ?? "no error")")
            #expect(device.ledger.state.entries.count == 0, "nothing of a refused page applied")
            #expect(device.ledger.state.outbox.progress(.backend).cursor == 0, "the cursor did not move")
        }
    }

    @Test("A cursor that goes back while the feed does not is refused")
    func cursorBack() throws {
        let dir = TemporaryDirectory("untrusted-cursor")
        let device = try device(dir)
        let a = EntryID.random().description
        _ = try pull(
            ScriptedTransport.page(
                [(a, 10, ScriptedTransport.entry(a, valence: 0.1, notes: "a"))], revision: 10, next: 10),
            into: device)
        #expect(device.ledger.state.outbox.progress(.backend).cursor == 10)
        let report = try pull(ScriptedTransport.page([], revision: 12, next: 4), into: device)
        #expect(report.pullError?.contains("goes back from 10") == true, "\(report.pullError ?? "no error")")
        #expect(device.ledger.state.outbox.progress(.backend).cursor == 10)
    }

    @Test("One id twice in a page, the newer first: the highest revision is the entry's state")
    func duplicateIDs() throws {
        let dir = TemporaryDirectory("untrusted-duplicate")
        let device = try device(dir)
        let a = EntryID.random()
        let report = try pull(
            ScriptedTransport.page(
                [
                    (a.description, 7, ScriptedTransport.entry(a.description, valence: 0.7, notes: "newer")),
                    (a.description, 5, ScriptedTransport.entry(a.description, valence: 0.5, notes: "older"))
                ], revision: 7, next: 7), into: device)
        #expect(report.pullError == nil, "\(report.pullError ?? "")")
        #expect(device.ledger.entry(a)?.notes == "newer")
        #expect(try device.replayed().entries[a]?.notes == "newer")
    }

    @Test("A create answered with an absurd ETag does not freeze the entry against later pulled changes")
    func absurdETag() throws {
        let dir = TemporaryDirectory("untrusted-etag")
        let device = try device(dir)
        let id = try device.log(0.2, notes: "mine")
        let feed = Mutex("")
        let transport = ScriptedTransport { request in
            if request.method == "POST" {
                return ScriptedTransport.json(
                    201, #"{"success":true,"data":{"id":"\#(id)"}}"#,
                    headers: [("ETag", "\"9223372036854775807\"")])
            }
            return ScriptedTransport.json(200, feed.withLock { $0 })
        }
        feed.withLock { $0 = ScriptedTransport.page([], revision: 1, next: 1) }
        #expect(try device.sync(Self.credentials, transport: transport).delivered == 1)
        feed.withLock {
            $0 = ScriptedTransport.page(
                [
                    (
                        id.description, 5,
                        ScriptedTransport.entry(id.description, valence: 0.9, notes: "from another device")
                    )
                ],
                revision: 5, next: 5)
        }
        let report = try device.sync(Self.credentials, transport: transport)
        #expect(report.pullError == nil, "\(report.pullError ?? "")")
        #expect(device.ledger.entry(id)?.notes == "from another device", "the change was applied")
    }

    @Test("Our own id echoed in upper case is ours")
    func upperCaseEcho() throws {
        let dir = TemporaryDirectory("untrusted-case")
        let device = try device(dir)
        let id = try device.log(0.2)
        let transport = ScriptedTransport { request in
            request.method == "POST"
                ? ScriptedTransport.json(201, #"{"success":true,"data":{"id":"\#(id.description.uppercased())"}}"#)
                : ScriptedTransport.json(200, ScriptedTransport.page([], revision: 1, next: 1))
        }
        let report = try device.sync(Self.credentials, transport: transport)
        #expect(report.delivered == 1 && report.isComplete, "\(report.failures)")
        #expect(
            device.ledger.state.outbox.record(OutboxKey(entryID: id, destination: .backend))?.remoteID
                == id.description)
    }

    @Test("Two entries are never given one server id: the second answer is not taken, and a delete stays its own")
    func sharedServerID() throws {
        let dir = TemporaryDirectory("untrusted-shared-id")
        let device = try device(dir, dialect: .wellness)
        let first = try device.log(0.2, notes: "first")
        let second = try device.log(0.4, notes: "second")
        // A broken backend that gives every create the same id.
        let transport = ScriptedTransport { request in
            request.method == "POST"
                ? ScriptedTransport.json(201, #"{"success":true,"data":{"id":"srv-1"}}"#)
                : ScriptedTransport.json(200, #"{"success":true,"data":[]}"#)
        }
        let report = try device.sync(Self.credentials, transport: transport, concurrency: 1)
        let held = [first, second].map {
            device.ledger.state.outbox.record(OutboxKey(entryID: $0, destination: .backend))?.remoteID
        }
        #expect(held.filter { $0 == "srv-1" }.count == 1, "\(held)")
        #expect(report.delivered == 1 && report.retrying == 1, "\(report)")
        #expect(report.failures.first?.error.contains("already holds") == true, "\(report.failures)")
    }

    @Test("A redirect on a write is transient, shows where it pointed, and is sent again once the server is back")
    func redirectThenHealthy() throws {
        let dir = TemporaryDirectory("untrusted-redirect")
        let device = try device(dir)
        let id = try device.log(0.2)
        let healthy = Atomic<Bool>(false)
        let transport = ScriptedTransport { request in
            if request.method == "POST" {
                return healthy.load(ordering: .relaxed)
                    ? ScriptedTransport.json(201, #"{"success":true,"data":{"id":"\#(id)"}}"#)
                    : ScriptedTransport.json(
                        307, "", headers: [("Location", "https://login.example/sso?next=\u{1B}[31m")])
            }
            return ScriptedTransport.json(200, ScriptedTransport.page([], revision: 0, next: 0))
        }
        let first = try device.sync(Self.credentials, transport: transport)
        #expect(first.retrying == 1 && first.parked == 0, "\(first)")
        let error = try #require(first.failures.first?.error)
        #expect(error.contains("307") && error.contains("login.example") && error.contains("not followed"), "\(error)")
        #expect(!error.contains("\u{1B}"), "no raw escape sequence")
        healthy.store(true, ordering: .relaxed)
        let second = try device.sync(Self.credentials, transport: transport, now: true)
        #expect(second.delivered == 1 && second.isComplete, "\(second)")
    }

    @Test("A retry time recorded while the clock was a year ahead is due once the clock is right again")
    func clockWasAhead() throws {
        let dir = TemporaryDirectory("untrusted-clock")
        let device = try device(dir)
        let id = try device.log(0.2)
        let up = Atomic<Bool>(false)
        let transport = ScriptedTransport { request in
            if request.method == "POST" {
                return up.load(ordering: .relaxed)
                    ? ScriptedTransport.json(201, #"{"success":true,"data":{"id":"\#(id)"}}"#)
                    : ScriptedTransport.json(503, #"{"success":false}"#, headers: [("Retry-After", "3600")])
            }
            return ScriptedTransport.json(200, ScriptedTransport.page([], revision: 0, next: 0))
        }
        device.advance(365 * 86_400_000)
        #expect(try device.sync(Self.credentials, transport: transport).retrying == 1)
        device.advance(-365 * 86_400_000)
        up.store(true, ordering: .relaxed)
        let report = try device.sync(Self.credentials, transport: transport)
        #expect(report.delivered == 1, "due now, not in a year: \(report)")
    }

    @Test(
        "A first probe answered by a login page records nothing; a remote recorded without the header that later names its capabilities is heard"
    )
    func oddFirstProbe() throws {
        let dir = TemporaryDirectory("untrusted-probe")
        let device = try Device(dir.sub("device"), remote: "http://127.0.0.1:9", capabilities: nil)
        _ = try device.log(0.2)
        let phase = Atomic<Int>(0)
        let transport = ScriptedTransport { request in
            switch phase.load(ordering: .relaxed) {
            case 0: return ScriptedTransport.json(200, "<html>please sign in</html>")
            case 1: return ScriptedTransport.json(200, #"{"success":true,"data":[]}"#)
            default:
                return ScriptedTransport.json(
                    200,
                    #"{"success":true,"data":{"entries":[],"changes":[],"revision":0,"next_since":0,"has_more":false}}"#,
                    headers: [("MoodLedger-Capabilities", "changes, revisions, update, delete")])
            }
        }
        #expect(throws: SyncError.self) { try device.sync(Self.credentials, transport: transport) }
        #expect(device.ledger.state.outbox.progress(.backend).remote?.capabilitySource == .unknown)
        phase.store(1, ordering: .relaxed)
        _ = try? device.sync(Self.credentials, transport: transport)
        #expect(device.ledger.state.outbox.progress(.backend).remote?.capabilities == [])
        // The next run's answers name what the server can do: heard, and recorded at the end of the run.
        _ = try device.log(0.5)
        phase.store(2, ordering: .relaxed)
        _ = try? device.sync(Self.credentials, transport: transport)
        let remote = try #require(device.ledger.state.outbox.progress(.backend).remote)
        #expect(remote.capabilities == [.changes, .revisions, .update, .delete], "\(remote)")
    }

    @Test("An account erased and created again while a first sync was cut: the next run sends everything again")
    func accountCreatedAgain() throws {
        let dir = TemporaryDirectory("untrusted-account")
        let device = try device(dir)
        let ids = try (0..<4).map { try device.log(Double($0) / 10, notes: "n\($0)") }
        let account = Mutex("a1")
        let received = Mutex<[String: [String]]>([:])  // account → ids created there
        let cut = Atomic<Bool>(true)
        let transport = ScriptedTransport { request in
            let name = account.withLock { $0 }
            let headers = [(name: "MoodLedger-Account", value: name)]
            if request.method == "POST" {
                let body = (try? JSONParser.parse(String(decoding: request.body ?? [], as: UTF8.self))) ?? .null
                let id = body["id"]?.stringValue ?? "?"
                // The first run is cut after two creates: the rest fail, and it never pulls.
                if cut.load(ordering: .relaxed), received.withLock({ $0[name, default: []].count }) >= 2 {
                    return .failure(kind: "network", message: "the connection was reset")
                }
                received.withLock { $0[name, default: []].append(id) }
                return ScriptedTransport.json(201, #"{"success":true,"data":{"id":"\#(id)"}}"#, headers: headers)
            }
            return ScriptedTransport.json(200, ScriptedTransport.page([], revision: 0, next: 0), headers: headers)
        }
        var configuration = SyncEngine.Configuration()
        configuration.concurrency = 1
        let first = try SyncEngine(ledger: device.ledger, transport: transport, credentials: { Self.credentials })
        _ = try first.run(once: true)
        #expect(device.ledger.state.outbox.progress(.backend).account == "a1", "recorded with the first outcomes")
        // The account is erased and added again under the same name: a new, empty account.
        account.withLock { $0 = "a2" }
        cut.store(false, ordering: .relaxed)
        let report = try device.sync(Self.credentials, transport: transport, now: true)
        #expect(report.serverWentBack, "\(report)")
        #expect(Set(received.withLock { $0["a2"] ?? [] }) == Set(ids.map(\.description)), "every entry is on a2")
        #expect(device.ledger.state.outbox.progress(.backend).account == "a2")
        #expect(report.isComplete, "\(report)")
        #expect(try device.replayed().outbox == device.ledger.state.outbox, "full replay == live")
    }

    @Test("Parked is never forever: released, an item is due at once with its attempts afresh, and delivered")
    func releaseParked() throws {
        let dir = TemporaryDirectory("untrusted-release")
        let device = try device(dir)
        let id = try device.log(0.2)
        let healthy = Atomic<Bool>(false)
        let transport = ScriptedTransport { request in
            if request.method == "POST" {
                return healthy.load(ordering: .relaxed)
                    ? ScriptedTransport.json(201, #"{"success":true,"data":{"id":"\#(id)"}}"#)
                    : ScriptedTransport.json(422, #"{"success":false,"error":{"message":"not today"}}"#)
            }
            return ScriptedTransport.json(200, ScriptedTransport.page([], revision: 0, next: 0))
        }
        #expect(try device.sync(Self.credentials, transport: transport).parked == 1)
        healthy.store(true, ordering: .relaxed)
        #expect(try device.sync(Self.credentials, transport: transport).sent == 0, "parked: not sent again by itself")
        #expect(try device.ledger.releaseParked() == [id])
        let record = try #require(device.ledger.state.outbox.record(OutboxKey(entryID: id, destination: .backend)))
        #expect(!record.parked && record.attempts == 0 && record.operation == .create)
        #expect(try device.ledger.releaseParked() == [], "nothing parked: nothing appended")
        let report = try device.sync(Self.credentials, transport: transport)
        #expect(report.delivered == 1 && report.isComplete, "\(report)")
        #expect(try device.replayed().outbox == device.ledger.state.outbox, "full replay == live")
        let story = try SyncExplanation.explain(id, in: device.ledger)
        #expect(story.text.contains("Released by the user"), "\(story.text)")
    }

    @Test("A certificate refused mid-run: the run stops (untrusted) and the item is due at once, no backoff drawn")
    func certificateRefusedMidRun() throws {
        let dir = TemporaryDirectory("untrusted-tls")
        let device = try device(dir)
        let id = try device.log(0.2)
        let transport = ScriptedTransport { request in
            request.method == "POST"
                ? .failure(kind: "tls", message: "the certificate of example.org was refused: expired")
                : ScriptedTransport.json(200, ScriptedTransport.page([], revision: 0, next: 0))
        }
        #expect(throws: SyncError.self) { try device.sync(Self.credentials, transport: transport) }
        let record = try #require(device.ledger.state.outbox.record(OutboxKey(entryID: id, destination: .backend)))
        let failedAt = try #require(
            try device.ledger.events(filter: EventFilter(type: .syncFailed)).last?.recordedAtMilliseconds)
        #expect(
            record.nextAttemptAt == failedAt, "due at once: \(String(describing: record.nextAttemptAt)) vs \(failedAt)")
        #expect(!record.parked)
    }

    @Test(
        "A seed create whose answer was lost is looked up before it is sent again: one record, even when the server forgot the key",
        arguments: [RemoteDialect.progress, .wellness])
    func lostCreateLookedUp(dialect: RemoteDialect) throws {
        let dir = TemporaryDirectory("untrusted-lost-create")
        let device = try device(dir, dialect: dialect)
        let id = try device.ledger.log(MoodDraft(score: 8, labels: ["calm"], notes: "a walk")).entry.id
        // A seed backend that keeps no idempotency keys; the first create's answer is lost after it stored the record.
        let stored = Mutex<[String]>([])
        let lose = Atomic<Bool>(true)
        let transport = ScriptedTransport { request in
            if request.method == "POST" {
                let body = (try? JSONParser.parse(String(decoding: request.body ?? [], as: UTF8.self))) ?? .null
                let recordID = "srv-\(stored.withLock { $0.count } + 1)"
                var fields = body
                if case .object(var pairs) = body {
                    pairs.append(("id", .string(recordID)))
                    fields = .object(pairs)
                }
                stored.withLock { $0.append(fields.serialized()) }
                if lose.load(ordering: .relaxed) { return .failure(kind: "network", message: "connection reset") }
                return ScriptedTransport.json(201, #"{"success":true,"data":{"id":"\#(recordID)"}}"#)
            }
            let records = stored.withLock { $0 }.joined(separator: ",")
            return ScriptedTransport.json(
                200,
                dialect == .progress
                    ? #"{"success":true,"data":[\#(records)]}"#
                    : #"{"success":true,"data":{"entries":[\#(records)],"has_more":false}}"#)
        }
        #expect(try device.sync(Self.credentials, transport: transport).retrying == 1)
        lose.store(false, ordering: .relaxed)
        let report = try device.sync(Self.credentials, transport: transport, now: true)
        #expect(report.delivered == 1, "\(report)")
        #expect(stored.withLock { $0.count } == 1, "one record on the server: \(stored.withLock { $0 })")
        #expect(
            device.ledger.state.outbox.record(OutboxKey(entryID: id, destination: .backend))?.remoteID == "srv-1")
    }

    @Test("Parking counts elapsed time by the boot clock: eleven runs while the wall clock jumps 3 h each park nothing")
    func parkingByBootClock() throws {
        let transport = ScriptedTransport { request in
            request.method == "POST"
                ? ScriptedTransport.json(503, #"{"success":false}"#)
                : ScriptedTransport.json(200, ScriptedTransport.page([], revision: 0, next: 0))
        }
        for (name, bootStep) in [("clock jumps", Int64(1_000)), ("a real day", Int64(3 * 3_600_000))] {
            let dir = TemporaryDirectory("untrusted-parking")
            let device = try device(dir)
            _ = try device.log(0.2)
            let uptime = Atomic<Int64>(1_000_000)
            for _ in 0..<11 {
                device.advance(3 * 3_600_000)
                uptime.add(bootStep, ordering: .relaxed)
                try device.sync(
                    Self.credentials, transport: transport, now: true,
                    bootClock: { BootClock(boot: "b1", milliseconds: uptime.load(ordering: .relaxed)) })
            }
            let parked = device.ledger.state.outbox.records.filter { $0.value.parked }.count
            if name == "clock jumps" {
                #expect(parked == 0, "11 runs within seconds never park, whatever the wall clock says")
            } else {
                #expect(parked == 1, "10 failures over a day of uptime park the item")
            }
        }
    }
}
