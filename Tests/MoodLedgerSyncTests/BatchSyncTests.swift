import Foundation
import MoodInterchange
import MoodLedger
import MoodLedgerSync
import Synchronization
import TestSupport
import Testing

/// The push through the reference server's batch route (`Specs/sync.md`, *Batch writes*; `Specs/server.md`, *Batch
/// writes* and *Rate limits*).
@Suite("Batch writes: a first sync of a long history at the server's default limits")
struct BatchSyncTests {
    /// `count` imported entries on `device` (one import batch), minutes apart, ending now.
    static func importEntries(_ device: Device, count: Int) throws {
        var plan = ImportPlan(format: .moodAPI)
        let start = Int64(Date().timeIntervalSince1970 * 1000) - Int64(count + 1) * 60_000
        for i in 0..<count {
            plan.rows.append(
                ImportRow(
                    line: i + 1,
                    draft: MoodDraft(
                        valence: Double(i % 200 - 100) / 100, labels: ["calm"],
                        loggedAt: LoggedAt(milliseconds: start + Int64(i) * 60_000), source: .import,
                        sourceID: "import-\(i)", suggestLabels: false)))
        }
        #expect(try device.ledger.importPlan(plan).created == count)
    }

    /// A transport that counts requests by path and statuses, forwarding to the server.
    final class Counting: SyncTransport, @unchecked Sendable {
        let inner: any SyncTransport
        let seen = Mutex<[(path: String, status: Int?)]>([])
        let rewrite: @Sendable (Int, SyncRequest) -> SyncRequest
        private let batches = Atomic<Int>(0)

        /// - Parameter rewrite: what becomes of the n-th batch request (0-based) before it is sent.
        init(_ inner: any SyncTransport, rewrite: @escaping @Sendable (Int, SyncRequest) -> SyncRequest = { $1 }) {
            self.inner = inner
            self.rewrite = rewrite
        }

        func perform(_ request: SyncRequest, credentials: SyncCredentials) -> SyncExchange {
            var request = request
            if request.path.hasSuffix("/batch") {
                request = rewrite(batches.wrappingAdd(1, ordering: .relaxed).oldValue, request)
            }
            let exchange = inner.perform(request, credentials: credentials)
            var status: Int?
            if case .response(let code, _, _) = exchange { status = code }
            seen.withLock { $0.append((request.path, status)) }
            return exchange
        }
    }

    @Test("5,000 imported entries reach a server at its default limits in one run: no 429, each entry once")
    func firstSyncOfAnImport() throws {
        let dir = TemporaryDirectory("batch-first-sync")
        let server = try SyncServer(dir: dir.sub("server"), defaultLimits: true)
        defer { server.stop() }
        // The device asks the server what it can do (the server says `batch`).
        let device = try Device(dir.sub("device"), remote: server.url, capabilities: nil)
        try Self.importEntries(device, count: 5_000)
        let transport = Counting(HTTPTransport(url: try RemoteURL(server.url)))
        let report = try device.sync(server.credentials, transport: transport)
        #expect(report.delivered == 5_000 && report.isComplete, "\(report.failures.prefix(3))")
        let seen = transport.seen.withLock { $0 }
        #expect(!seen.contains { $0.status == 429 }, "no request was rate limited")
        let batches = seen.filter { $0.path.hasSuffix("/batch") }.count
        // 5,000 items at 64 a request; the probe and the pull pages are the rest.
        #expect(batches == (5_000 + 63) / 64, "\(batches) batch requests")
        #expect(seen.count < batches + 80, "\(seen.count) requests in all")
        #expect(device.ledger.state.outbox.progress(.backend).remote?.capabilities.contains(.batch) == true)
        server.stop()
        let stored = try server.entries()
        #expect(stored.count == 5_000 && Set(stored.map(\.id)).count == 5_000)
        #expect(Content.of(stored) == Content.of(device.ledger.state.entries.all))
        // Two events a delivered entry: its attempt and its outcome, each appended 256 at a time.
        #expect(try device.ledger.events(ofType: .syncAttempted).count == 5_000)
        // The ledger tells which request carried an entry: the 70th attempt of a batch went in its second request.
        let attempts = try device.ledger.events(ofType: .syncAttempted)
        let seventieth = attempts[69]
        let story = try SyncExplanation.explain(seventieth.event.entryID, in: device.ledger)
        let attempt = try #require(story.steps.first { $0.seq == seventieth.seq }).text
        #expect(
            attempt.contains("batch route: 64 items a request; request 2 of the attempts at seqs \(attempts[0].seq)–"),
            "\(attempt)")
    }

    @Test("A batch whose answer was lost is sent again with its keys: first answers, nothing created twice")
    func lostBatchAnswer() throws {
        let dir = TemporaryDirectory("batch-lost-answer")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let device = try Device(dir.sub("device"), remote: server.url, capabilities: .all)
        try Self.importEntries(device, count: 300)
        let dropped = Atomic<Bool>(false)
        let faulty = FaultyTransport(HTTPTransport(url: try RemoteURL(server.url))) { _, request in
            // The server applies the first batch; its answer never arrives.
            guard request.path.hasSuffix("/batch"), !dropped.exchange(true, ordering: .relaxed) else { return nil }
            return .dropAfter
        }
        let first = try device.sync(server.credentials, transport: faulty, once: true)
        #expect(first.delivered == 300 - 64 && first.retrying == 64, "\(first.delivered) \(first.retrying)")
        let second = try device.sync(server.credentials, now: true)
        #expect(second.isComplete && second.pendingAfter == 0, "\(second.failures.prefix(3))")
        server.stop()
        let stored = try server.entries()
        #expect(stored.count == 300 && Set(stored.map(\.id)).count == 300, "\(stored.count) on the server")
        #expect(Content.of(stored) == Content.of(device.ledger.state.entries.all))
    }

    @Test("One invalid item in a batch: the others are delivered, it is parked with the server's reason")
    func oneInvalidItem() throws {
        let dir = TemporaryDirectory("batch-invalid-item")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let device = try Device(dir.sub("device"), remote: server.url, capabilities: .all)
        try Self.importEntries(device, count: 10)
        let spoiled = Mutex<String?>(nil)
        // The first batch's third item carries a valence the server refuses (as a stricter server would refuse what
        // this device believes valid).
        let transport = Counting(HTTPTransport(url: try RemoteURL(server.url))) { index, request in
            guard index == 0, let body = request.body,
                case .object(var top)? = try? JSONParser.parse(String(decoding: body, as: UTF8.self)),
                case .array(var items) = top[0].1, case .object(var item) = items[2]
            else { return request }
            guard let at = item.firstIndex(where: { $0.0 == "body" }), case .object(var fields) = item[at].1 else {
                return request
            }
            spoiled.withLock { $0 = fields.first { $0.0 == "id" }?.1.stringValue }
            fields.removeAll { $0.0 == "valence" }
            fields.append(("valence", .double(5)))
            item[at].1 = .object(fields)
            items[2] = .object(item)
            top[0].1 = .array(items)
            var changed = request
            changed.body = JSONValue.object(top).serializedBytes()
            return changed
        }
        let report = try device.sync(server.credentials, transport: transport)
        let bad = try #require(spoiled.withLock { $0 }.flatMap(EntryID.init))
        #expect(report.delivered == 9 && report.parked == 1, "\(report.delivered) \(report.parked)")
        #expect(report.failures.map(\.entryID) == [bad] && report.failures.first?.parked == true)
        #expect(report.failures.first?.error.contains("valence") == true, "\(report.failures)")
        server.stop()
        #expect(
            Set(try server.entries().map(\.id)) == Set(device.ledger.state.entries.all.map(\.id)).subtracting([bad]))
    }
}
