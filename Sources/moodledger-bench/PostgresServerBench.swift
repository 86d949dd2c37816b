import Foundation
import MoodLedger
import MoodLedgerServer
import Platform
import Synchronization

/// `moodledger-bench --server --store URL [--users N] [--nodes 2]`: the reference backend over PostgreSQL
/// (`Specs/benchmark.md`, *PostgreSQL*): N accounts made in one append, then POST and GET at 16 connections against one
/// node, one user and then a random user per request, and GET against two nodes on the same database (8 connections
/// each, one load generator a node). The database is the caller's (`init` is run; each run adds accounts of its own).
enum PostgresServerBench {
    static let connections = ManyUsersBench.connections

    static func run(url: String, users: Int, nodes: Int, seconds: Double, json: Bool) -> Int32 {
        let directory =
            FileManager.default.temporaryDirectory.path
            + "/moodledger-bench-postgres-\(ProcessInfo.processInfo.processIdentifier)"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var bench = Benchmark(events: 0, directory: directory)
        do {
            let store = try PostgresStore(url: url, environment: ProcessInfo.processInfo.environment)
            defer { store.pool.close() }
            try store.initialize()
            let start = Benchmark.now()
            let run = ByteText.hex(SystemIO().randomBytes(3))
            let keys = try store.addUsers((0..<users).map { "b\(run)-\($0)" })
            let credentials = try store.credentials()
            bench.record("users", Double(users), places: 0)
            bench.record("accounts_add_s", Benchmark.seconds(since: start), places: 2)
            let now = Int64(Date().timeIntervalSince1970)
            func requests(_ count: Int, post: Bool) -> [[UInt8]] {
                ManyUsersBench.requests(count, post: post, keys: keys, credentials: credentials, now: now) {
                    "b\(run)-\($0)"
                }
            }
            let servers = try (0..<max(1, nodes)).map { _ in
                try LoopbackServer(
                    data: "", store: try PostgresStore(url: url, environment: ProcessInfo.processInfo.environment))
            }
            defer { for server in servers { server.stop() } }
            var (unexpected, getUsersN) = try ManyUsersBench.phases(
                port: servers[0].port, users: users, seconds: seconds, directory: directory, requests: requests,
                medians: true, into: &bench)
            if servers.count > 1 {
                // Both nodes at once, a load generator each, half the connections each, random users.
                let pool = requests(users, post: false)
                let ports = servers.map(\.port)
                for index in ports.indices {
                    try FileManager.default.createDirectory(
                        atPath: directory + "/n\(index)", withIntermediateDirectories: true)
                }
                let results = Mutex<[LoadGenerator.Result]>([])
                let failures = Mutex<[Error]>([])
                DispatchQueue.concurrentPerform(iterations: ports.count) { index in
                    var generator = LoadGenerator(
                        port: ports[index], requests: pool, connections: connections / ports.count,
                        seconds: seconds, expect: 200)
                    generator.tolerant = true
                    do {
                        let result = try generator.runInChild(directory: directory + "/n\(index)")
                        results.withLock { $0.append(result) }
                    } catch {
                        failures.withLock { $0.append(error) }
                    }
                }
                if let failure = failures.withLock({ $0.first }) { throw failure }
                let all = results.withLock { $0 }
                let rate = all.reduce(0) { $0 + Double($1.requests) / $1.seconds }
                unexpected += all.reduce(0) { $0 + $1.unexpected }
                bench.record("get_nodes\(servers.count)_per_s", rate, places: 0)
                bench.record("get_nodes_ratio", rate / getUsersN, places: 2)
            }
            bench.record("non_2xx", Double(unexpected), places: 0)
            bench.record("server_peak_rss_mb", Double(SystemIO.peakResidentBytes()) / 1_048_576, places: 1)
        } catch {
            FileHandle.standardError.write(Data("moodledger-bench --server --store: \(error)\n".utf8))
            return 74
        }
        bench.printSideResults(json: json)
        return 0
    }
}
