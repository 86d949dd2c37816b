import Foundation
import MoodLedger
import MoodLedgerSync
import Synchronization
import TestSupport
import Testing

@Suite("Sync under faults (a fault-injecting TCP proxy in front of moodledger serve)")
struct SyncFaultTests {
    /// A server, a proxy in front of it deciding each request's fate, and a device pointed at the proxy.
    struct Rig {
        let dir = TemporaryDirectory("sync-fault")
        let server: SyncServer
        let proxy: FaultProxy
        let device: Device

        init(_ decide: @escaping @Sendable (Int, String, String) -> FaultProxy.Action) throws {
            server = try SyncServer(dir: dir.sub("server"))
            proxy = try FaultProxy(upstream: server.port, decide: decide)
            device = try Device(dir.sub("device"), remote: proxy.url)
        }

        func transport(timeout: Double = 30) throws -> HTTPTransport {
            HTTPTransport(url: try RemoteURL(proxy.url), timeout: timeout)
        }

        func stop() {
            proxy.stop()
            server.stop()
        }

        func failures() throws -> [SyncFailure] {
            try device.ledger.events(ofType: .syncFailed).compactMap {
                if case .syncFailed(_, _, let failure) = $0.event { return failure } else { return nil }
            }
        }
    }

    @Test("The server commits, then the connection drops: the retry carries the same key and leaves exactly one entry")
    func dropAfterCommit() throws {
        // The first two runs' pulls fail too, so they cannot learn that the server has the entry.
        let rig = try Rig { index, method, _ in
            index == 0
                ? .dropAfterCommit : method == "GET" && index < 3 ? .answer(503, [], #"{"success":false}"#) : .relay
        }
        defer { rig.stop() }
        let id = try rig.device.log(0.4)
        let first = try rig.device.sync(rig.server.credentials, transport: try rig.transport())
        #expect(first.retrying == 1)
        let failure = try #require(try rig.failures().first)
        #expect(failure.retryable && failure.status == nil && failure.error.hasPrefix("network:"))
        #expect(
            try rig.device.sync(rig.server.credentials, transport: try rig.transport()).sent == 0,
            "not due before its retry time")
        rig.device.advance(20 * 60_000)
        try rig.device.sync(rig.server.credentials, transport: try rig.transport())
        let posts = rig.proxy.requests.filter { $0.method == "POST" }
        try #require(posts.count == 2, "\(rig.proxy.requests)")
        #expect(posts[0].idempotencyKey == posts[1].idempotencyKey)
        #expect(posts[1].replayed, "the server answered the retry from its idempotency record")
        rig.server.stop()
        #expect(try rig.server.entries().map(\.id) == [id])
        #expect(rig.device.ledger.state.outboxItems(destination: .backend).isEmpty)
    }

    @Test("A timeout is retried with the same key; the server applies the request once")
    func timeout() throws {
        let rig = try Rig { index, _, _ in index == 0 ? .delay(milliseconds: 1500) : .relay }
        defer { rig.stop() }
        try rig.device.log(-0.2)
        let first = try rig.device.sync(rig.server.credentials, transport: try rig.transport(timeout: 0.4))
        #expect(first.retrying == 1)
        #expect(try rig.failures().first?.error.hasPrefix("timeout:") == true)
        rig.device.advance(20 * 60_000)
        Thread.sleep(forTimeInterval: 1.3)
        try rig.device.sync(rig.server.credentials, transport: try rig.transport(timeout: 5))
        rig.server.stop()
        #expect(try rig.server.entries().count == 1)
    }

    @Test("500s are retried with full-jitter backoff recorded in sync.failed; replay reproduces next_attempt_at")
    func serverErrors() throws {
        let rig = try Rig { index, _, _ in
            index < 3
                ? .answer(500, [], #"{"success":false,"error":{"code":"internal_error","message":"boom"}}"#) : .relay
        }
        defer { rig.stop() }
        for i in 0..<3 { try rig.device.log(Double(i) / 5) }
        let before = rig.device.ledger.options.clock()
        let report = try rig.device.sync(rig.server.credentials, transport: try rig.transport(), seed: 42)
        #expect(report.retrying == 3 && report.pendingAfter == 3)
        for event in try rig.device.ledger.events(ofType: .syncFailed) {
            guard case .syncFailed(_, _, let failure) = event.event, let next = failure.nextAttemptAt else {
                Issue.record("no next_attempt_at"); continue
            }
            #expect(failure.error == "HTTP 500: boom")
            // First failure: U(0, min(15 min, 1 s · 2¹)).
            #expect(next >= before && next <= event.recordedAtMilliseconds + 2_000)
            let key = OutboxKey(entryID: event.event.entryID, destination: .backend)
            #expect(try rig.device.replayed().outbox.record(key)?.nextAttemptAt == next)
        }
        rig.device.advance(3_000)
        let second = try rig.device.sync(rig.server.credentials, transport: try rig.transport())
        #expect(second.delivered == 3 && second.isComplete)
    }

    @Test("429 with Retry-After is honoured (seconds and HTTP date)")
    func rateLimited() throws {
        let rig = try Rig { index, _, _ in
            index == 0
                ? .answer(
                    429, ["Retry-After: 120"],
                    #"{"success":false,"error":{"code":"rate_limited","message":"slow down"}}"#) : .relay
        }
        defer { rig.stop() }
        try rig.device.log(0.2)
        try rig.device.sync(rig.server.credentials, transport: try rig.transport())
        let event = try #require(try rig.device.ledger.events(ofType: .syncFailed).first)
        guard case .syncFailed(_, _, let failure) = event.event else { return }
        #expect(failure.status == 429)
        #expect(failure.nextAttemptAt! >= event.recordedAtMilliseconds + 120_000)
        rig.device.advance(60_000)
        #expect(try rig.device.sync(rig.server.credentials, transport: try rig.transport()).sent == 0)
        rig.device.advance(61_000)
        #expect(try rig.device.sync(rig.server.credentials, transport: try rig.transport()).delivered == 1)
        // An HTTP date an hour ahead.
        let now: Int64 = 1_700_000_000_000
        #expect(SyncPolicy.retryAfter([("Retry-After", "Tue, 14 Nov 2023 23:13:20 GMT")], now: now) == 3_600_000)
    }

    @Test("401: one retry with re-read credentials, then the run stops with a clear error; fixed credentials deliver")
    func unauthorized() throws {
        let rig = try Rig { _, _, _ in .relay }
        defer { rig.stop() }
        try rig.device.log(0.2)
        let wrong = SyncCredentials(apiKey: "mlk_wrong", token: "not.a.jwt")
        #expect(throws: SyncError.self) { try rig.device.sync(wrong, transport: try rig.transport()) }
        #expect(rig.proxy.requests.filter { $0.status == 401 }.count == 2)
        #expect(try rig.failures().first?.status == 401)
        // A source that hands out the right credentials only when asked again (a refreshed token).
        let good = rig.server.credentials
        let calls = Calls()
        let engine = try SyncEngine(
            ledger: rig.device.ledger, transport: try rig.transport(),
            credentials: {
                calls.count += 1
                return calls.count == 1 ? wrong : good
            })
        let report = try engine.run()
        #expect(report.delivered == 1 && calls.count == 2)
    }

    final class Calls: @unchecked Sendable { var count = 0 }

    @Test("One 422 poison item is parked while 50 others go through; it is not sent again until the entry changes")
    func poison() throws {
        let rig = try Rig { index, _, _ in
            index == 7
                ? .answer(
                    422, [],
                    #"{"success":false,"error":{"code":"validation_error","message":"labels: unknown","field":"labels"}}"#
                ) : .relay
        }
        defer { rig.stop() }
        for i in 0..<51 { try rig.device.log(Double(i % 20) / 20) }
        let report = try rig.device.sync(rig.server.credentials, transport: try rig.transport())
        #expect(report.delivered == 50 && report.parked == 1)
        let parked = rig.device.ledger.state.outboxItems(destination: .backend)
        #expect(parked.count == 1 && parked[0].status == "failed" && parked[0].lastError == "HTTP 422: labels: unknown")
        #expect(try rig.device.sync(rig.server.credentials, transport: try rig.transport()).sent == 0)
        _ = try rig.device.ledger.editLabels(parked[0].entryID, .add("calm"))
        #expect(try rig.device.sync(rig.server.credentials, transport: try rig.transport()).delivered == 1)
    }

    @Test("A change written while a sync run is in progress is sent in the same run")
    func writeDuringRun() throws {
        let rig = try Rig { _, _, _ in .relay }
        defer { rig.stop() }
        try rig.device.log(0.1)
        let device = rig.device
        let written = Mutex<EntryID?>(nil)
        let transport = FaultyTransport(try rig.transport()) { index, _ in
            if index == 0 { written.withLock { $0 = try? device.log(-0.1, label: "calm") } }
            return nil
        }
        let report = try rig.device.sync(rig.server.credentials, transport: transport, once: false, concurrency: 1)
        #expect(written.withLock { $0 } != nil)
        #expect(report.delivered == 2 && report.isComplete)
    }
}

@Suite("The sync client's HTTP framing")
struct SyncFramingTests {
    @Test("Chunked and close-delimited answers from other servers are read whole")
    func framings() throws {
        let body = #"{"success":true,"data":{"id":"8b1c2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"}}"#
        let half = body.utf8.count / 2
        let chunked =
            "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nETag: \"7\"\r\n\r\n"
            + String(half, radix: 16) + ";ext=1\r\n" + String(body.prefix(half)) + "\r\n"
            + String(body.utf8.count - half, radix: 16) + "\r\n" + String(body.dropFirst(half))
            + "\r\n0\r\nX-Trailer: t\r\n\r\n"
        let delimited = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body
        for answer in [chunked, delimited] {
            let proxy = try FaultProxy(upstream: 1) { _, _, _ in .raw(answer) }
            defer { proxy.stop() }
            let transport = HTTPTransport(url: try RemoteURL(proxy.url), timeout: 5)
            guard
                case .response(let status, let headers, let received) = transport.perform(
                    SyncRequest(method: "POST", path: "/api/v1/mood", body: Array("{}".utf8)),
                    credentials: SyncCredentials())
            else {
                Issue.record("no response"); continue
            }
            #expect(status == 201 || status == 200)
            #expect(String(decoding: received, as: UTF8.self) == body)
            if status == 201 {
                #expect(
                    SyncPolicy.classify(
                        .create, status: status, headers: headers, body: received,
                        entryID: .none, now: 0)
                        == .delivered(remoteID: "8b1c2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b", revision: 7))
            }
        }
    }
}

@Suite("Remote URLs")
struct RemoteURLTests {
    @Test(
        "Parsed strictly: http or https with a host, optional port and path prefix; nothing that could break a request line"
    )
    func parsing() throws {
        let url = try RemoteURL("http://Example.org:8080/base/")
        #expect(
            url.host == "Example.org" && url.port == 8080 && url.prefix == "/base"
                && url.description == "http://Example.org:8080/base")
        #expect(try RemoteURL("http://[::1]:9/").description == "http://[::1]:9")
        #expect(try RemoteURL("http://127.0.0.1").port == 80)
        let secure = try RemoteURL("HTTPS://mood.example.org/api/")
        #expect(secure.secure && secure.port == 443 && secure.description == "https://mood.example.org:443/api")
        for bad in [
            "ftp://x", "https://", "https://user:pw@x", "http://", "http://user:pw@x", "http://x:0", "http://x:70000",
            "http://x/a b",
            "http://x/a\r\nHost: y", "http://x/?q=1", "http://[::1", "http://x y"
        ] {
            #expect(throws: MoodError.self, "\(bad)") { try RemoteURL(bad) }
        }
    }
}
