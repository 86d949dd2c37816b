import Foundation
import MoodLedger
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerSync

/// A run's requests await their sockets instead of holding threads: a run's code runs on one serial executor, so
/// requests are in flight together only if none of them holds that executor's thread while it waits.
@Suite("Requests awaited, not waited for on threads")
struct AwaitedRequestsTests {
    /// Holds every request until `expected` of them are waiting at once (or 20 s pass): the most that were.
    final class Barrier: @unchecked Sendable {
        // @unchecked Sendable: every field is read and written under `condition`.
        private let condition = NSCondition()
        private var waiting = 0
        private var released = false
        private(set) var peak = 0
        let expected: Int

        init(expected: Int) { self.expected = expected }

        func arrive() {
            condition.lock()
            defer { condition.unlock() }
            waiting += 1
            peak = max(peak, waiting)
            if waiting >= expected { released = true }
            condition.broadcast()
            let limit = Date().addingTimeInterval(20)
            while !released, condition.wait(until: limit) {}
            waiting -= 1
        }

        var most: Int {
            condition.lock()
            defer { condition.unlock() }
            return peak
        }
    }

    /// A reference server behind a proxy whose POSTs wait at a barrier, and a device with `entries` pending.
    final class Setup {
        let dir: TemporaryDirectory
        let server: SyncServer
        let proxy: FaultProxy
        let device: Device
        let barrier: Barrier

        init(concurrency: Int, entries: Int, name: String) throws {
            dir = TemporaryDirectory(name)
            server = try SyncServer(dir: dir.sub("server"))
            let barrier = Barrier(expected: concurrency)
            self.barrier = barrier
            proxy = try FaultProxy(upstream: server.port) { _, method, _ in
                if method == "POST" { barrier.arrive() }
                return .relay
            }
            device = try Device(dir.sub("device"), remote: proxy.url)
            for index in 0..<entries { _ = try device.log(Double(index) / 100, notes: "n\(index)") }
        }

        deinit {
            proxy.stop()
            server.stop()
        }
    }

    @Test("An awaited run has all its requests in flight at once on its one serial executor")
    func awaitedRun() async throws {
        let setup = try Setup(concurrency: 4, entries: 8, name: "awaited-run")
        var configuration = SyncEngine.Configuration()
        configuration.concurrency = 4
        configuration.seed = 1
        let credentials = setup.server.credentials
        let engine = try SyncEngine(
            ledger: setup.device.ledger, credentials: { () async throws -> SyncCredentials in credentials },
            configuration: configuration)
        let report = try await engine.run(once: true)
        #expect(report.delivered == 8, "\(report)")
        // Four requests waited at the server together: had a request held the run's thread while it waited, the
        // next could not have been sent before the barrier's 20 s ran out.
        #expect(setup.barrier.most == 4)
    }

    @Test("The blocking run (the command line's) does the same while its caller's thread only waits")
    func blockingRun() throws {
        let setup = try Setup(concurrency: 4, entries: 8, name: "blocking-run")
        let report = try setup.device.sync(setup.server.credentials, once: true, concurrency: 4)
        #expect(report.delivered == 8, "\(report)")
        #expect(setup.barrier.most == 4)
    }

    @Test("Requests through HTTPTransport from one serial executor are in flight together")
    func transportAwaits() async throws {
        let setup = try Setup(concurrency: 3, entries: 0, name: "awaited-transport")
        let transport = HTTPTransport(url: try RemoteURL(setup.proxy.url))
        let credentials = setup.server.credentials
        let statuses = await RunExecutor().task {
            await withTaskGroup(of: Int.self) { group in
                for index in 0..<3 {
                    group.addTask {
                        let body = Array("{\"id\":\"\(EntryID.random())\",\"valence\":0.\(index)}".utf8)
                        let request = SyncRequest(method: "POST", path: "/api/v1/mood", body: body)
                        guard
                            case .response(let status, _, _) = await transport.exchange(
                                request, credentials: credentials)
                        else { return 0 }
                        return status
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }.value
        #expect(statuses.count == 3 && statuses.allSatisfy { $0 > 0 }, "\(statuses)")
        #expect(setup.barrier.most == 3)
    }
}
