import Foundation
import Platform
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerServer

/// A fresh database in the tests' PostgreSQL cluster: its connection string over the Unix socket.
func freshPostgresDatabase() throws -> String {
    guard let cluster = PostgresCluster.shared else { throw PostgresCluster.Failure("no PostgreSQL cluster") }
    let name = "t" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
    let admin = try PostgresConnection.connect(try PostgresSettings.parse(cluster.socketURL())) {
        SystemIO().randomBytes(18)
    }
    defer { admin.close() }
    try admin.execute(script: "CREATE DATABASE \(name)")
    return cluster.socketURL(database: name)
}

/// The PostgreSQL client against a real server: authentication, statements, pipelines as transactions, errors.
@Suite(.enabled(if: PostgresCluster.isAvailable, "PostgreSQL is not installed"))
struct PostgresLiveTests {
    func connect(_ url: String) throws -> PostgresConnection {
        try PostgresConnection.connect(try PostgresSettings.parse(url)) { SystemIO().randomBytes(18) }
    }

    @Test func scramOverTCPAndUnixSocket() throws {
        let cluster = try #require(PostgresCluster.shared)
        for url in [cluster.tcpURL(), cluster.socketURL()] {
            let connection = try connect(url)
            defer { connection.close() }
            let result = try connection.query(
                "SELECT $1::bigint + 1, $2::text, $3::bytea",
                [
                    .int64(41), .text("hé"), .bytes([0, 1, 255])
                ])
            #expect(try result.rows[0].int(0) == 42)
            #expect(try result.rows[0].text(1) == "hé")
            #expect(try result.rows[0].bytes(2) == [0, 1, 255])
        }
    }

    @Test func aWrongPasswordIsAnAuthenticationError() throws {
        let cluster = try #require(PostgresCluster.shared)
        let url = cluster.tcpURL().replacingOccurrences(of: "battery", with: "batteries")
        do {
            _ = try connect(url)
            Issue.record("connected with a wrong password")
        } catch let error as PostgresError {
            #expect(error.kind == .authentication)
            #expect(error.sqlState == "28P01")
            #expect(!error.description.contains("batteries"))
        }
    }

    @Test func aPipelineIsOneTransaction() throws {
        let connection = try connect(try freshPostgresDatabase())
        defer { connection.close() }
        try connection.execute(script: "CREATE TABLE t (k bigint PRIMARY KEY, v bytea NOT NULL)")
        let insert = "INSERT INTO t (k, v) VALUES ($1, $2)"
        let results = try connection.pipeline([
            (insert, [.int64(1), .bytes([1])]), (insert, [.int64(2), .bytes([2])])
        ])
        #expect(results.map(\.affected) == [1, 1])
        // The second statement fails: the first's row is rolled back with it.
        do {
            _ = try connection.pipeline([(insert, [.int64(3), .bytes([3])]), (insert, [.int64(1), .bytes([9])])])
            Issue.record("a duplicate key was inserted")
        } catch {
            #expect(error.isUniqueViolation)
            #expect(!error.isUnavailable)
        }
        let rows = try connection.query("SELECT k FROM t ORDER BY k").rows
        #expect(try rows.map { try $0.int(0) } == [1, 2])
        // The connection is still in step, and its prepared statements still work.
        #expect(try connection.query(insert, [.int64(3), .bytes([3])]).affected == 1)
        // A statement that does not parse leaves nothing prepared under its name.
        #expect(throws: PostgresError.self) { try connection.query("SELEC 1") }
        #expect(throws: PostgresError.self) { try connection.query("SELEC 1") }
        #expect(try connection.query("SELECT count(*) FROM t").rows[0].int(0) == 3)
    }

    @Test func aLargeValueCrossesTheBuffer() throws {
        let connection = try connect(try freshPostgresDatabase())
        defer { connection.close() }
        let big = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let echoed = try connection.query("SELECT $1::bytea", [.bytes(big)]).rows[0].bytes(0)
        #expect(echoed == big)
    }

    @Test func theFirstHostThatAnswersIsUsed() throws {
        let cluster = try #require(PostgresCluster.shared)
        let url =
            "host=/nonexistent/dir,127.0.0.1 port=\(cluster.port) user=\(cluster.user) dbname=postgres "
            + "password='\(cluster.password)'"
        let connection = try connect(url)
        defer { connection.close() }
        #expect(connection.host.host == "127.0.0.1")
        do {
            _ = try connect("host=/nonexistent/dir user=u dbname=d connect_timeout=1")
            Issue.record("connected to nothing")
        } catch let error as PostgresError {
            #expect(error.isUnavailable)
            #expect(error.message.contains("/nonexistent/dir/.s.PGSQL.5432"))
        }
    }

    @Test func thePoolBoundsAndReplacesConnections() throws {
        let url = try freshPostgresDatabase()
        let pool = PostgresPool(settings: try PostgresSettings.parse(url), capacity: 2)
        defer { pool.close() }
        let pids = Mutex<Set<Int64>>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let pid = try? pool.withConnection { try $0.query("SELECT pg_backend_pid()").rows[0].int(0) }
            if let pid { pids.withLock { _ = $0.insert(pid) } }
        }
        #expect((1...2).contains(pids.withLock { $0.count }))
        // A backend killed while idle in the pool: the next borrower gets a fresh connection, not an error.
        let victim = try pool.withConnection { try $0.query("SELECT pg_backend_pid()").rows[0].int(0) }
        let admin = try connect(url)
        defer { admin.close() }
        try admin.query("SELECT pg_terminate_backend($1::int)", [.int32(Int32(victim))])
        // pg_terminate_backend signals; the backend is gone once the server no longer lists it.
        while try admin.query("SELECT count(*) FROM pg_stat_activity WHERE pid = $1::int", [.int32(Int32(victim))])
            .rows[0].int(0) > 0
        {}
        let pid = try pool.withConnection { try $0.query("SELECT pg_backend_pid()").rows[0].int(0) }
        let replaced = pid != victim
        #expect(replaced)
    }
}
