import Foundation
import MoodLedger
import Platform
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerSync

/// The sync client against backends that misbehave: interim answers, endless or oversized bodies, bad status lines,
/// answers that trickle, ids and texts that do not fit, feeds that never end. Each run ends in bounded time and
/// memory, attributes nothing to the wrong entry, and a later run against an honest server delivers everything.
@Suite("Sync against broken and hostile backends")
struct HostileBackendTests {
    /// A switch a proxy's decision reads.
    final class Switch: Sendable { let on = Atomic<Bool>(false) }

    /// The process's peak resident set, in MB.
    static func peakMegabytes() -> Int {
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        return usage.ru_maxrss / 1024
    }

    /// A device and the real server behind a proxy that does `action` to every request.
    private func setUp(
        _ name: String, entries: Int, action: @escaping @Sendable (Int, String, String) -> FaultProxy.Action
    ) throws -> (TemporaryDirectory, SyncServer, FaultProxy, Device, [EntryID]) {
        let dir = TemporaryDirectory(name)
        let server = try SyncServer(dir: dir.sub("server"))
        let proxy = try FaultProxy(upstream: server.port, decide: action)
        let device = try Device(dir.sub("device"), remote: proxy.url)
        var ids: [EntryID] = []
        for index in 0..<entries {
            ids.append(try device.log(Double(index) / 100, notes: "note \(index)"))
        }
        return (dir, server, proxy, device, ids)
    }

    @Test("Interim 1xx answers before every answer are passed over: every entry lands under its own id")
    func interimAnswers() throws {
        for interim in [
            "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
        ] {
            let (dir, server, proxy, device, ids) = try setUp("hostile-1xx", entries: 16) { _, _, _ in
                .relayAfter(interim)
            }
            defer {
                proxy.stop()
                server.stop()
                _ = dir
            }
            let report = try device.sync(server.credentials, once: true, concurrency: 4)
            #expect(report.delivered == 16, "\(report)")
            let records = device.ledger.read { state in
                ids.map { state.outbox.record(OutboxKey(entryID: $0, destination: .backend))?.remoteID }
            }
            #expect(records == ids.map { $0.description })
            // An edit of one entry reaches that entry and no other.
            try device.ledger.update(ids[1], MoodChanges(notes: .set("edited")))
            #expect(try device.sync(server.credentials, once: true).delivered == 1)
            server.stop()
            let stored = Dictionary(uniqueKeysWithValues: try server.entries().map { ($0.id, $0.notes) })
            #expect(stored.count == 16)
            #expect(stored[ids[0]] == "note 0" && stored[ids[1]] == "edited" && stored[ids[2]] == "note 2")
        }
    }

    @Test("An endless chunked body, an oversized close-delimited body and a bad status line fail their request only")
    func unboundedAnswers() throws {
        let answers: [FaultProxy.Action] = [
            .endless(
                head: "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n",
                piece: "4000\r\n"
                    + String(
                        repeating: "x", count: 0x4000) + "\r\n", limit: 1 << 30),
            .endless(head: "HTTP/1.1 201 Created\r\n\r\n", piece: String(repeating: "y", count: 65536), limit: 1 << 30),
            .raw("HTTP/1.1 2000000 OK\r\nContent-Length: 2\r\n\r\n{}"),
            .raw("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n")
        ]
        for answer in answers {
            let honest = Switch()
            let (dir, server, proxy, device, ids) = try setUp("hostile-body", entries: 3) { _, _, _ in
                honest.on.load(ordering: .relaxed) ? .relay : answer
            }
            defer {
                proxy.stop()
                server.stop()
                _ = dir
            }
            let before = Self.peakMegabytes()
            let report = try device.sync(server.credentials, once: true)
            #expect(report.delivered == 0 && report.retrying == 3, "\(report)")
            #expect(Self.peakMegabytes() - before < 300)
            honest.on.store(true, ordering: .relaxed)
            var configuration = SyncEngine.Configuration()
            configuration.ignoreBackoff = true
            let engine = try SyncEngine(
                ledger: device.ledger, credentials: { server.credentials }, configuration: configuration)
            #expect(try engine.run().delivered == 3)
            #expect(
                device.ledger.read { $0.outbox.record(OutboxKey(entryID: ids[0], destination: .backend)) }?.operation
                    == nil)
        }
    }

    @Test("An answer that trickles in is cut at the request's deadline")
    func trickle() throws {
        let listener = try Socket.listen(host: "127.0.0.1", port: 0)
        let thread = Thread {
            var watch = [Socket.Watch(fd: listener.fd, interest: .readable)]
            _ = try? Socket.poll(&watch, timeoutMilliseconds: 10_000)
            guard let client = try? Socket.accept(listener.fd) else { return }
            let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".utf8)
            for byte in head + Array(repeating: UInt8(ascii: "x"), count: 100) {
                guard (try? [byte].withUnsafeBytes({ try Socket.send(client, $0) })) != nil else { break }
                Thread.sleep(forTimeInterval: 0.2)
            }
            Socket.close(client)
        }
        thread.start()
        defer { Socket.close(listener.fd) }
        let transport = HTTPTransport(
            url: try RemoteURL("http://127.0.0.1:\(listener.port)"), timeout: 5, requestTimeout: 1.5)
        let started = Date()
        let answer = transport.perform(SyncRequest(method: "GET", path: "/x"), credentials: SyncCredentials())
        guard case .failure(let kind, let message) = answer else {
            Issue.record("a trickling answer was taken: \(answer)")
            return
        }
        #expect(kind == "timeout" && message.contains("in time"))
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test("An id too long and an error with control characters are refused or escaped for their item alone")
    func untrustedTexts() throws {
        let longID = String(repeating: "i", count: 300)
        let (dir, server, proxy, device, ids) = try setUp("hostile-texts", entries: 3) { index, _, _ in
            switch index {
            case 0: return .answer(201, [], #"{"success":true,"data":{"id":"\#(longID)"}}"#)
            case 1:
                return .answer(
                    422, [], #"{"success":false,"error":{"message":"\u001b]0;PWNED\u0007\u001b[2J bad"}}"#)
            default: return .relay
            }
        }
        defer {
            proxy.stop()
            server.stop()
            _ = dir
        }
        let report = try device.sync(server.credentials, once: true, concurrency: 1)
        #expect(report.delivered == 1 && report.parked == 2, "\(report)")
        let errors = device.ledger.read { state in
            ids.compactMap { state.outbox.record(OutboxKey(entryID: $0, destination: .backend))?.lastError }
        }
        #expect(errors.count == 2)
        #expect(errors.allSatisfy { !$0.unicodeScalars.contains { ConsoleText.isControl($0) } }, "\(errors)")
        #expect(errors.contains { $0.contains("\\u{1b}]0;PWNED") })
    }

    @Test("A feed that never ends, one whose cursor stands still and one over its page size stop the pull (exit 69)")
    func hostileFeeds() throws {
        for mode in ["endless", "still", "oversized"] {
            let dir = TemporaryDirectory("hostile-feed")
            let proxy = try FaultProxy { _, target, _ in
                guard target.contains("/changes") else { return (404, #"{"success":false}"#) }
                let since = Int(target.split(separator: "since=").last?.split(separator: "&").first ?? "0") ?? 0
                let count = mode == "oversized" ? 501 : 0
                let changes = (0..<count).map { index in
                    #"{"revision":\#(since + index + 1),"operation":"delete","id":"\#(UUID().uuidString.lowercased())"}"#
                }
                let next = mode == "still" ? since : since + max(1, count)
                return (
                    200,
                    #"{"success":true,"data":{"changes":[\#(changes.joined(separator: ","))],"revision":\#(next + 10),"next_since":\#(next),"has_more":true}}"#
                )
            }
            defer { proxy.stop() }
            let device = try Device(dir.sub("device"), remote: proxy.url)
            let before = device.ledger.lastSeq
            let report = try device.sync(SyncCredentials(), once: true)
            let error = try #require(report.pullError, "\(mode)")
            switch mode {
            case "endless": #expect(error.contains("stopped after 200 pages"))
            case "still": #expect(error.contains("did not advance"))
            default: #expect(error.contains("501 changes where 500"))
            }
            #expect(device.ledger.lastSeq - before <= UInt64(SyncLimits.pullPagesPerRun))
            #expect(!report.isComplete)
        }
    }

    @Test("412 forever, with --now: one run sends an entry at most 4 times and appends at most 12 events for it")
    func preconditionForever() throws {
        let refuse = Switch()
        let (dir, server, proxy, device, ids) = try setUp("hostile-412", entries: 2) { _, method, _ in
            method == "PUT" && refuse.on.load(ordering: .relaxed)
                ? .answer(412, ["ETag: \"999\""], #"{"success":false,"error":{"message":"changed"}}"#) : .relay
        }
        defer {
            proxy.stop()
            server.stop()
            _ = dir
        }
        try device.sync(server.credentials, once: true)
        refuse.on.store(true, ordering: .relaxed)
        for id in ids { try device.ledger.update(id, MoodChanges(notes: .set("edited"))) }
        let before = device.ledger.lastSeq
        let report = try device.sync(server.credentials, now: true)
        let puts = proxy.requests.filter { $0.method == "PUT" }.count
        #expect(puts <= 8, "\(puts) PUTs for 2 entries in one run")
        #expect(
            report.sent == report.delivered + report.merged + report.requeuedAtPush + report.retrying + report.parked)
        var perEntry: [EntryID: Int] = [:]
        for recorded in try device.ledger.events(after: before) { perEntry[recorded.event.entryID, default: 0] += 1 }
        #expect(ids.allSatisfy { (perEntry[$0] ?? 0) <= 12 }, "\(perEntry)")
        refuse.on.store(false, ordering: .relaxed)
        #expect(try device.sync(server.credentials, now: true).delivered == 2)
    }

    @Test("A redirect on the capability read is a failure to retry, not 'no capabilities'")
    func redirectedProbe() throws {
        let dir = TemporaryDirectory("hostile-302")
        let proxy = try FaultProxy(upstream: 1) { _, _, _ in
            .answer(302, ["Location: http://127.0.0.1:1/login"], "{}")
        }
        defer { proxy.stop() }
        let device = try Device(dir.sub("device"), remote: proxy.url, capabilities: nil)
        let before = device.ledger.lastSeq
        #expect(throws: SyncError.self) { try device.sync(SyncCredentials()) }
        #expect(device.ledger.lastSeq == before)
        #expect(device.ledger.read { $0.outbox.progress(.backend).remote?.capabilitySource } == .unknown)
    }
}
