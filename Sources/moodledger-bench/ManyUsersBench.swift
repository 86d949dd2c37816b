import EventLog
import Foundation
import MoodInterchange
import MoodLedger
import MoodLedgerServer
import Platform

/// `moodledger-bench --server --users N`: the reference backend carrying N accounts (`Specs/benchmark.md`, *Many
/// accounts*): N accounts and a few entries each are made through the library in a child process, then POST and GET
/// at 16 connections with a random user per request, beside one user in the same run.
enum ManyUsersBench {
    static let connections = 16

    static func run(users: Int, seconds: Double, json: Bool) -> Int32 {
        let directory =
            FileManager.default.temporaryDirectory.path
            + "/moodledger-bench-users-\(ProcessInfo.processInfo.processIdentifier)"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var bench = Benchmark(events: 0, directory: directory)
        do {
            let data = directory + "/data"
            let start = Benchmark.now()
            let made = try BenchmarkCommand.runSelf(["--make-users", data, String(users)])
            guard let accountsSeconds = Double(made) else { throw BenchError(text: "--make-users said: \(made)") }
            bench.record("users", Double(users), places: 0)
            bench.record("accounts_add_s", accountsSeconds, places: 2)
            bench.record("users_setup_s", Benchmark.seconds(since: start), places: 1)
            let credentials = try Credentials.load(directory: data, create: false)
            let loopback = try LoopbackServer(data: data, quiet: false)
            let (backend, server) = (loopback.backend, loopback.server)
            defer { loopback.stop() }
            let keys = try String(contentsOfFile: data + "/bench-keys.txt", encoding: .utf8).split(separator: "\n").map(
                String.init)
            let now = Int64(Date().timeIntervalSince1970)
            func requests(_ count: Int, post: Bool) -> [[UInt8]] {
                Self.requests(count, post: post, keys: keys, credentials: credentials, now: now) { "u\($0)" }
            }
            var descriptors = 0
            let (unexpected, _) = try phases(
                port: server.port, users: users, seconds: seconds, directory: directory, requests: requests,
                medians: false, into: &bench
            ) { descriptors = max(descriptors, SystemIO.openDescriptorCount() ?? 0) }
            bench.record("non_2xx", Double(unexpected), places: 0)
            bench.record("open_descriptors", Double(descriptors), places: 0)
            bench.record("open_ledgers", Double(backend.openLedgerCount), places: 0)
            bench.record("server_peak_rss_mb", Double(SystemIO.peakResidentBytes()) / 1_048_576, places: 1)
            try DeviceProbe.measure(directory: directory, seconds: min(1, seconds), into: &bench)
        } catch {
            FileHandle.standardError.write(Data("moodledger-bench --server --users: \(error)\n".utf8))
            return 74
        }
        bench.printSideResults(json: json)
        return 0
    }

    /// One request per user (POST an entry, or GET the first page), each with its user's key and a token.
    /// POST then GET against `port` at ``connections`` keep-alive connections, one user and then a random one of
    /// `users` per request, each phase `seconds` long in a child load generator: `{post,get}_{users1,usersN}_per_s`,
    /// their `_p99_us` (and `_p50_us` with `medians`), and `{post,get}_users_ratio`; `afterEach` runs after each phase.
    /// - Returns: the answers other than the expected status, and the GET rate with random users.
    static func phases(
        port: UInt16, users: Int, seconds: Double, directory: String, requests: (Int, Bool) -> [[UInt8]],
        medians: Bool, into bench: inout Benchmark, afterEach: () -> Void = {}
    ) throws -> (unexpected: Int, getUsersN: Double) {
        var unexpected = 0
        var getUsersN = 0.0
        for (name, post) in [("post", true), ("get", false)] {
            var rates: [Double] = []
            for (label, count) in [("users1", 1), ("usersN", users)] {
                var generator = LoadGenerator(
                    port: port, requests: requests(count, post), connections: connections, seconds: seconds,
                    expect: post ? 201 : 200)
                generator.tolerant = true
                let result = try generator.runInChild(directory: directory)
                let rate = Double(result.requests) / result.seconds
                rates.append(rate)
                unexpected += result.unexpected
                bench.record("\(name)_\(label)_per_s", rate, places: 0)
                if medians { bench.record("\(name)_\(label)_p50_us", result.p50, places: 0) }
                bench.record("\(name)_\(label)_p99_us", result.p99, places: 0)
                afterEach()
            }
            bench.record("\(name)_users_ratio", rates[1] / rates[0], places: 2)
            if !post { getUsersN = rates[1] }
        }
        return (unexpected, getUsersN)
    }

    static func requests(
        _ count: Int, post: Bool, keys: [String], credentials: Credentials, now: Int64, user: (Int) -> String
    ) -> [[UInt8]] {
        let body = #"{"valence":0.5,"labels":["calm"]}"#
        return (0..<count).map { index in
            let auth =
                "X-API-Key: \(keys[index])\r\nAuthorization: Bearer "
                + credentials.token(for: user(index), now: now, ttl: 3600)! + "\r\n"
            return Array(
                (post
                    ? "POST /api/v1/mood HTTP/1.1\r\nHost: bench\r\n\(auth)Content-Type: application/json\r\n"
                        + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
                    : "GET /api/v1/mood?from=2000-01-01&limit=30 HTTP/1.1\r\nHost: bench\r\n\(auth)\r\n").utf8)
        }
    }

    /// The child's side of the setup: `--make-users DATA N`: N accounts (`u0` …) added in one batch, their keys in
    /// `bench-keys.txt`, and three entries in each user's ledger. Prints the seconds adding the accounts took.
    static func make(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2, let count = Int(arguments[1]), count > 0 else { return 64 }
        let data = arguments[0]
        do {
            try AtomicFile.makeDirectory(data)
            try AtomicFile.makeDirectory(data + "/users")
            let start = Benchmark.now()
            var credentials = try Credentials.load(directory: data, create: true)
            var keys: [String] = []
            keys.reserveCapacity(count)
            for index in 0..<count { keys.append(try credentials.addUser("u\(index)")) }
            try credentials.save(directory: data)
            let seconds = Benchmark.seconds(since: start)
            try keys.joined(separator: "\n").write(toFile: data + "/bench-keys.txt", atomically: true, encoding: .utf8)
            // As the server leaves a small user's ledger: no snapshot until 1,000 events are uncovered.
            var options = MoodServer.ledgerOptions(MoodServer.Configuration(dataDirectory: data))
            options.createIfMissing = true
            let day = Int64(Date().timeIntervalSince1970 * 1000) - 86_400_000
            for index in 0..<count {
                let ledger = try Ledger.open(at: MoodServer.userDirectory("u\(index)", in: data), options: options)
                var plan = ImportPlan(format: .moodAPI)
                for row in 0..<3 {
                    plan.rows.append(
                        ImportRow(
                            line: row + 1,
                            draft: MoodDraft(
                                valence: Double(row) / 4, labels: ["calm"],
                                loggedAt: LoggedAt(milliseconds: day + Int64(row) * 3_600_000),
                                source: .import, sourceID: "bench-\(row)", suggestLabels: false)))
                }
                _ = try ledger.importPlan(plan)
                // Synced before closing, as the server's pool closes a ledger: LOCK says clean, so the server's open
                // has nothing to sync.
                try ledger.flush()
                ledger.close()
            }
            print(seconds)
            return 0
        } catch {
            FileHandle.standardError.write(Data("moodledger-bench --make-users: \(error)\n".utf8))
            return 74
        }
    }
}
