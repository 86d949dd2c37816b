import EventLog
import Foundation
import MoodInterchange
import MoodLedger
import MoodLedgerServer
import MoodLedgerSync
import Platform
import Synchronization

/// `moodledger-bench --server`: the reference backend on loopback under keep-alive load from its own small load
/// generator (`Specs/benchmark.md`, *Server*).
enum ServerBench {
    static let connections = [1, 16, 64]

    static func run(seconds: Double, json: Bool) -> Int32 {
        let directory =
            FileManager.default.temporaryDirectory.path
            + "/moodledger-bench-server-\(ProcessInfo.processInfo.processIdentifier)"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var bench = Benchmark(events: 0, directory: directory)
        do {
            try bench.rawSync()
            let data = directory + "/data"
            try AtomicFile.makeDirectory(data)
            var credentials = try Credentials.load(directory: data, create: true)
            let key = try credentials.addUser("bench")
            let writerKey = try credentials.addUser("writer")
            try credentials.save(directory: data)
            try AtomicFile.makeDirectory(data + "/users")
            try preload(MoodServer.userDirectory("bench", in: data), entries: 10_000)
            let loopback = try LoopbackServer(data: data, quiet: false)
            let (backend, server) = (loopback.backend, loopback.server)
            let token = credentials.token(for: "bench", now: Int64(Date().timeIntervalSince1970), ttl: 3600)!
            let auth = "X-API-Key: \(key)\r\nAuthorization: Bearer \(token)\r\n"
            let writerToken = credentials.token(for: "writer", now: Int64(Date().timeIntervalSince1970), ttl: 3600)!
            let writer = "X-API-Key: \(writerKey)\r\nAuthorization: Bearer \(writerToken)\r\n"
            let body = #"{"valence":0.5,"labels":["calm"],"associations":["work"]}"#
            let post = Array(
                ("POST /api/v1/mood HTTP/1.1\r\nHost: bench\r\n\(writer)Content-Type: application/json\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)").utf8)
            let get = Array("GET /api/v1/mood?from=2000-01-01&limit=30 HTTP/1.1\r\nHost: bench\r\n\(auth)\r\n".utf8)
            let handlerRequest = HTTPRequest(
                method: "GET", path: "/api/v1/mood", query: "from=2000-01-01&limit=30",
                headers: [("host", "bench"), ("x-api-key", key), ("authorization", "Bearer \(token)")])
            bench.record("get_list_handler_us", try handlerTime(backend, handlerRequest), places: 1)
            for count in connections {
                let (rate, p50, p99) = try load(
                    port: server.port, request: get, connections: count, seconds: seconds, expect: 200,
                    directory: directory)
                bench.record("get_list_c\(count)_per_s", rate, places: 0)
                bench.record("get_list_c\(count)_p50_us", p50, places: 0)
                bench.record("get_list_c\(count)_p99_us", p99, places: 0)
            }
            for count in connections {
                let (rate, p50, p99) = try load(
                    port: server.port, request: post, connections: count, seconds: seconds, expect: 201,
                    directory: directory)
                bench.record("post_c\(count)_per_s", rate, places: 0)
                bench.record("post_c\(count)_p50_us", p50, places: 0)
                bench.record("post_c\(count)_p99_us", p99, places: 0)
            }
            bench.record("idle_connections_rss_mb", try idle(port: server.port, count: 1000), places: 1)
            loopback.stop()
            // What the two ledgers alone take open as the server held them (in a fresh process): the server's own
            // share is the rest. The writer's state was built in memory by its appends, so it is replayed whole here
            // (the snapshot the server's close left would map it instead, a fraction of what the server held).
            let ledgers = try BenchmarkCommand.runSelf([
                "--ledger-rss", MoodServer.userDirectory("bench", in: data),
                "--whole", MoodServer.userDirectory("writer", in: data)
            ])
            guard let ledgersMB = Double(ledgers) else { throw BenchError(text: "--ledger-rss said: \(ledgers)") }
            bench.record("ledgers_rss_mb", ledgersMB, places: 1)
            bench.record("server_rss_mb", Double(SystemIO.peakResidentBytes()) / 1_048_576 - ledgersMB, places: 1)
        } catch {
            FileHandle.standardError.write(Data("moodledger-bench --server: \(error)\n".utf8))
            return 74
        }
        bench.printSideResults(json: json)
        return 0
    }

    /// 10,000 entries in the user's ledger (one import batch) before the server opens it.
    static func preload(_ path: String, entries: Int) throws {
        let ledger = try Ledger.open(at: path)
        defer { ledger.close() }
        var plan = ImportPlan(format: .moodAPI)
        let start = Int64(Date().timeIntervalSince1970 * 1000) - Int64(entries) * 60_000
        for i in 0..<entries {
            plan.rows.append(
                ImportRow(
                    line: i + 1,
                    draft: MoodDraft(
                        valence: Double(i % 200 - 100) / 100, labels: ["calm"],
                        loggedAt: LoggedAt(milliseconds: start + Int64(i) * 60_000), source: .import,
                        sourceID: "bench-\(i)",
                        suggestLabels: false)))
        }
        _ = try ledger.importPlan(plan)
    }

    /// `connections` keep-alive clients each sending `request` back to back for `seconds`, from a child process.
    /// - Returns: requests per second, p50 and p99 latency in µs.
    static func load(
        port: UInt16, request: [UInt8], connections: Int, seconds: Double, expect: Int, directory: String
    ) throws
        -> (Double, Double, Double)
    {
        let result = try LoadGenerator(
            port: port, requests: [request], connections: connections, seconds: seconds,
            expect: expect
        ).runInChild(directory: directory)
        return (Double(result.requests) / result.seconds, result.p50, result.p99)
    }

    /// `--ledger-rss PATH… [--whole PATH…]` (a child process): the resident-set growth of opening these ledgers, in
    /// MB; those after `--whole` are replayed whole, not opened from a snapshot.
    static func ledgerResidentSize(_ arguments: [String]) -> Int32 {
        let before = SystemIO.currentResidentBytes()
        var open: [Ledger] = []
        var whole = false
        for argument in arguments {
            if argument == "--whole" {
                whole = true
                continue
            }
            var options = Ledger.Options()
            options.useSnapshots = !whole
            guard let ledger = try? Ledger.open(at: argument, options: options) else { return 74 }
            open.append(ledger)
        }
        print(Double(SystemIO.currentResidentBytes() - before) / 1_048_576)
        open.forEach { $0.close() }
        return 0
    }

    /// The median time of the GET handler alone (routing, auth, query, JSON), without sockets, in µs.
    static func handlerTime(_ backend: MoodServer, _ request: HTTPRequest) throws -> Double {
        var times: [Double] = []
        for _ in 0..<2000 {
            let start = Benchmark.now()
            let response = backend.handle(request)
            times.append(Double(Benchmark.now() - start) / 1000)
            guard response.status == 200 else { throw BenchError(text: "the GET handler answered \(response.status)") }
        }
        return Benchmark.median(times)
    }

    /// Opens `count` idle keep-alive connections, checks the server still answers, and reports its RSS growth (MB).
    static func idle(port: UInt16, count: Int) throws -> Double {
        let before = SystemIO.currentResidentBytes()
        var clients: [HTTPConnection] = []
        for _ in 0..<count { clients.append(try HTTPConnection(port: port)) }
        Thread.sleep(forTimeInterval: 0.5)
        let probe = try HTTPConnection(port: port)
        try probe.send(Array("GET /health HTTP/1.1\r\nHost: bench\r\n\r\n".utf8))
        guard try probe.readResponse().status == 200 else {
            throw BenchError(text: "no answer beside \(count) idle connections")
        }
        let after = SystemIO.currentResidentBytes()
        probe.close()
        clients.forEach { $0.close() }
        return Double(max(0, after - before)) / 1_048_576
    }
}

/// The reference backend over a data directory (or `store`) on a loopback ephemeral port, rate limits off, serving
/// on a thread of its own (what every server-side benchmark measures).
final class LoopbackServer {
    let backend: MoodServer
    let server: HTTPServer

    init(data: String, store: PostgresStore? = nil, quiet: Bool = true, port: UInt16 = 0) throws {
        var configuration = MoodServer.Configuration(dataDirectory: data)
        configuration.store = store
        configuration.http.port = port
        configuration.writesPerHour = 0
        configuration.readsPerHour = 0
        if quiet { configuration.log = { _ in } }
        backend = try MoodServer(configuration: configuration)
        server = try backend.start()
        let server = self.server
        Thread { server.run(grace: 5) }.start()
    }

    var port: UInt16 { server.port }

    /// Stops serving, lets in-flight requests end, closes the ledgers.
    func stop() {
        server.stop()
        Thread.sleep(forTimeInterval: 0.3)
        backend.close()
    }
}
