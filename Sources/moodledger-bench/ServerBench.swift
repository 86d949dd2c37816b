import EventLog
import Foundation
import MoodLedger
import MoodLedgerServer
import Synchronization

/// `moodledger-bench --server`: the reference backend on loopback under keep-alive load from its own small load
/// generator (`Specs/benchmark.md`, *Server*).
enum ServerBench {
    static let connections = [1, 16, 64]

    static func run(seconds: Double, json: Bool) -> Int32 {
        let directory = FileManager.default.temporaryDirectory.path + "/moodledger-bench-server-\(ProcessInfo.processInfo.processIdentifier)"
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
            var configuration = MoodServer.Configuration(dataDirectory: data)
            configuration.http.port = 0
            configuration.writesPerHour = 0
            configuration.readsPerHour = 0
            let backend = try MoodServer(configuration: configuration)
            let server = try backend.start()
            let thread = Thread { server.run(grace: 5) }
            thread.start()
            let token = JWT.sign(subject: "bench", now: Int64(Date().timeIntervalSince1970), ttl: 3600,
                                 secret: credentials.secret)
            let auth = "X-API-Key: \(key)\r\nAuthorization: Bearer \(token)\r\n"
            let writerToken = JWT.sign(subject: "writer", now: Int64(Date().timeIntervalSince1970), ttl: 3600,
                                       secret: credentials.secret)
            let writer = "X-API-Key: \(writerKey)\r\nAuthorization: Bearer \(writerToken)\r\n"
            let body = #"{"valence":0.5,"labels":["calm"],"associations":["work"]}"#
            let post = Array(("POST /api/v1/mood HTTP/1.1\r\nHost: bench\r\n\(writer)Content-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)").utf8)
            let get = Array("GET /api/v1/mood?from=2000-01-01&limit=30 HTTP/1.1\r\nHost: bench\r\n\(auth)\r\n".utf8)
            for count in connections {
                let (rate, p50, p99) = try load(port: server.port, request: get, connections: count, seconds: seconds, expect: 200)
                bench.record("get_list_c\(count)_per_s", rate, places: 0)
                bench.record("get_list_c\(count)_p50_us", p50, places: 0)
                bench.record("get_list_c\(count)_p99_us", p99, places: 0)
            }
            for count in connections {
                let (rate, p50, p99) = try load(port: server.port, request: post, connections: count, seconds: seconds, expect: 201)
                bench.record("post_c\(count)_per_s", rate, places: 0)
                bench.record("post_c\(count)_p50_us", p50, places: 0)
                bench.record("post_c\(count)_p99_us", p99, places: 0)
            }
            bench.record("idle_connections_rss_mb", try idle(port: server.port, count: 1000), places: 1)
            server.stop()
            Thread.sleep(forTimeInterval: 0.5)
            backend.close()
        } catch {
            FileHandle.standardError.write(Data("moodledger-bench --server: \(error)\n".utf8))
            return 74
        }
        bench.record("peak_rss_mb", Double(SystemIO.peakResidentBytes()) / 1_048_576, places: 1)
        bench.results.append(("machine", .string(BenchmarkCommand.machine)))
        if json {
            print(JSONValue.object(bench.results).serialized())
        } else {
            for (key, value) in bench.results {
                print(key.padding(toLength: 30, withPad: " ", startingAt: 0) + value.serialized())
            }
        }
        return 0
    }

    /// 10,000 entries in the user's ledger (one import batch) before the server opens it.
    static func preload(_ path: String, entries: Int) throws {
        let ledger = try Ledger.open(at: path)
        defer { ledger.close() }
        var plan = ImportPlan(format: .moodAPI)
        let start = Int64(Date().timeIntervalSince1970 * 1000) - Int64(entries) * 60_000
        for i in 0..<entries {
            plan.rows.append(ImportRow(line: i + 1, draft: MoodDraft(
                valence: Double(i % 200 - 100) / 100, labels: ["calm"],
                loggedAt: LoggedAt(milliseconds: start + Int64(i) * 60_000), source: .import, sourceID: "bench-\(i)",
                suggestLabels: false)))
        }
        _ = try ledger.importPlan(plan)
    }

    /// `connections` keep-alive clients each sending `request` back to back for `seconds`.
    /// - Returns: requests per second, p50 and p99 latency in µs.
    static func load(port: UInt16, request: [UInt8], connections: Int, seconds: Double, expect: Int) throws
        -> (Double, Double, Double) {
        let latencies = Mutex<[Double]>([])
        let failures = Atomic<Int>(0)
        let deadline = Benchmark.now() + UInt64(seconds * 1e9)
        let group = DispatchGroup()
        let started = Benchmark.now()
        for _ in 0..<connections {
            let thread = Thread {
                defer { group.leave() }
                guard let client = try? LoadClient(port: port) else { failures.add(1, ordering: .relaxed); return }
                defer { client.close() }
                var mine: [Double] = []
                while Benchmark.now() < deadline {
                    let start = Benchmark.now()
                    guard (try? client.send(request)) != nil, let status = try? client.readStatus(), status == expect else {
                        failures.add(1, ordering: .relaxed)
                        return
                    }
                    mine.append(Double(Benchmark.now() - start) / 1000)
                }
                latencies.withLock { $0 += mine }
            }
            thread.stackSize = 256 * 1024
            group.enter()
            thread.start()
        }
        group.wait()
        let elapsed = Benchmark.seconds(since: started)
        guard failures.load(ordering: .relaxed) == 0 else {
            throw BenchError(text: "\(failures.load(ordering: .relaxed)) clients failed at \(connections) connections")
        }
        let all = latencies.withLock { $0 }
        return (Double(all.count) / elapsed, Benchmark.median(all), Benchmark.percentile(all, 0.99))
    }

    /// Opens `count` idle keep-alive connections, checks the server still answers, and reports its RSS growth (MB).
    static func idle(port: UInt16, count: Int) throws -> Double {
        let before = SystemIO.currentResidentBytes()
        var clients: [LoadClient] = []
        for _ in 0..<count { clients.append(try LoadClient(port: port)) }
        Thread.sleep(forTimeInterval: 0.5)
        let probe = try LoadClient(port: port)
        try probe.send(Array("GET /health HTTP/1.1\r\nHost: bench\r\n\r\n".utf8))
        guard try probe.readStatus() == 200 else { throw BenchError(text: "no answer beside \(count) idle connections") }
        let after = SystemIO.currentResidentBytes()
        probe.close()
        clients.forEach { $0.close() }
        return Double(max(0, after - before)) / 1_048_576
    }
}

/// A blocking keep-alive HTTP client for the load generator.
final class LoadClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw BenchError(text: "cannot connect to port \(port)")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    func close() { Glibc.close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw BenchError(text: "send failed") }
            offset += n
        }
    }

    /// Reads one response (Content-Length framed) and returns its status.
    func readStatus() throws -> Int {
        while true {
            if let end = headerEnd() {
                let head = String(decoding: buffer[0..<end], as: UTF8.self)
                let status = Int(head.dropFirst(9).prefix(3)) ?? 0
                var length = 0
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0
                }
                while buffer.count < end + 4 + length { try fill() }
                buffer.removeFirst(end + 4 + length)
                return status
            }
            try fill()
        }
    }

    private func headerEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw BenchError(text: "connection closed") }
        buffer += chunk[0..<n]
    }
}
