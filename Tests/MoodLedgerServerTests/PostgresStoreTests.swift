import Foundation
import MoodLedger
import Platform
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerServer

/// The server over PostgreSQL where it differs from one machine: several nodes on one database, a database that goes
/// away and comes back, the move from a data directory and back. (The route tests run over both stores: CI runs them
/// again with `MOODLEDGER_SERVER_STORE=postgresql`.)
@Suite(.enabled(if: PostgresCluster.isAvailable, "PostgreSQL is not installed"))
struct PostgresStoreTests {
    /// A node over `url` on a loopback port.
    static func node(_ url: String, clock: ManualClock? = nil) throws -> InProcessServer {
        var configuration = MoodServer.Configuration(dataDirectory: "")
        configuration.store = try PostgresStore(url: url)
        configuration.http.port = 0
        configuration.writesPerHour = 0
        configuration.readsPerHour = 0
        if let clock { configuration.clock = { clock.now } }
        configuration.log = { _ in }
        return try InProcessServer(configuration)
    }

    /// One request to `port` as `user`.
    static func request(
        _ port: UInt16, _ method: String, _ target: String, auth: [(String, String)], headers: [(String, String)] = [],
        json: String? = nil
    ) throws -> RawResponse {
        var lines = ["\(method) \(target) HTTP/1.1", "Host: localhost", "Connection: close"]
        lines += (auth + headers).map { "\($0.0): \($0.1)" }
        let body = Array((json ?? "").utf8)
        if json != nil { lines += ["Content-Type: application/json", "Content-Length: \(body.count)"] }
        let client = try RawClient(port: port, timeout: 30)
        defer { client.close() }
        try client.send(Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body)
        return try client.readResponse()
    }

    /// A database with the schema and one account; its connection string and the account's headers.
    static func database(_ url: String? = nil) throws -> (url: String, auth: [(String, String)]) {
        let url = try url ?? freshPostgresDatabase()
        let store = try PostgresStore(url: url)
        defer { store.pool.close() }
        try store.initialize()
        let key = try store.addUser("alice")
        let token = try store.credentials().token(
            for: "alice", now: SystemIO().nowMicroseconds() / 1_000_000, ttl: 3600)!
        return (url, [("Authorization", "Bearer \(token)"), ("X-API-Key", key)])
    }

    @Test(
        "Two nodes on one database: writes alternate, a read on one sees the other's 201, If-Match races lose no update"
    )
    func twoNodes() throws {
        let (url, auth) = try Self.database()
        let a = try Self.node(url)
        let b = try Self.node(url)
        defer {
            a.stop()
            b.stop()
        }
        var ids: [String] = []
        for index in 0..<20 {
            let (writer, reader) = index % 2 == 0 ? (a, b) : (b, a)
            let created = try Self.request(
                writer.port, "POST", "/api/v1/mood", auth: auth, json: #"{"valence":0.\#(index % 10)}"#)
            #expect(created.status == 201)
            let id = try #require(created.data["id"]?.stringValue)
            ids.append(id)
            let read = try Self.request(reader.port, "GET", "/api/v1/mood/\(id)", auth: auth)
            #expect(read.status == 200, "the other node sees the write at once")
            #expect(read.header("ETag") == created.header("ETag"))
        }
        let list = try Self.request(a.port, "GET", "/api/v1/mood?from=2000-01-01&limit=100", auth: auth)
        #expect(list.data["total"] == .int(20))
        // Eight writers, four on each node, each replacing the same entry under the same ETag: one wins.
        let target = ids[0]
        let etag = try #require(try Self.request(a.port, "GET", "/api/v1/mood/\(target)", auth: auth).header("ETag"))
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let node = index % 2 == 0 ? a : b
            let status =
                (try? Self.request(
                    node.port, "PUT", "/api/v1/mood/\(target)", auth: auth, headers: [("If-Match", etag)],
                    json: #"{"valence":-0.\#(index + 1)}"#
                ).status) ?? 0
            statuses.withLock { $0.append(status) }
        }
        let answered = statuses.withLock { $0 }
        #expect(answered.filter { $0 == 200 }.count == 1, "\(answered)")
        #expect(answered.filter { $0 == 412 }.count == 7, "\(answered)")
        let audit = try PostgresStore(url: url)
        defer { audit.pool.close() }
        let rows = try audit.pool.withConnection {
            try $0.query("SELECT count(*), max(seq) FROM events WHERE user_name = 'alice'").rows[0]
        }
        #expect(try rows.int(0) == rows.int(1), "seqs contiguous, none doubled")
    }

    @Test("The database stopped under load: 503 with Retry-After while it is down, no 500, nothing answered 201 lost")
    func databaseAway() throws {
        let cluster = try PostgresCluster()
        let (url, auth) = try Self.database(cluster.socketURL())
        let node = try Self.node(url)
        defer { node.stop() }
        let created = Mutex<[String]>([])
        let statuses = Mutex<[Int: Int]>([:])
        let running = Atomic<Bool>(true)
        // Writers on threads of their own: the waits below spin on this test's thread.
        let writers = onDedicatedThreads(4) { _ in
            while running.load(ordering: .relaxed) {
                guard
                    let response = try? Self.request(
                        node.port, "POST", "/api/v1/mood", auth: auth, json: #"{"valence":0.3}"#)
                else { continue }
                statuses.withLock { $0[response.status, default: 0] += 1 }
                if response.status == 201, let id = response.data["id"]?.stringValue {
                    created.withLock { $0.append(id) }
                }
                if response.status == 503 {
                    #expect(response.header("Retry-After") == "1")
                    if response.json["error"]?["code"] == .string("outcome_unknown") {
                        statuses.withLock { $0[-1, default: 0] += 1 }
                    }
                }
            }
        }
        func waitFor(_ status: Int) {
            let start = statuses.withLock { $0[status, default: 0] }
            while statuses.withLock({ $0[status, default: 0] }) < start + 5 { sched_yield() }
        }
        waitFor(201)
        cluster.stop(mode: "immediate")
        waitFor(503)
        let health = try Self.request(node.port, "GET", "/health", auth: [])
        #expect(health.status == 503)
        #expect(health.data["database"]?["reachable"] == .bool(false), "\(health.text)")
        try cluster.start()
        waitFor(201)
        running.store(false, ordering: .relaxed)
        writers.wait()
        let seen = statuses.withLock { $0 }
        #expect(seen[500] == nil, "\(seen)")
        #expect(Set(seen.keys).isSubset(of: [201, 503, -1]), "\(seen)")
        #expect(try Self.request(node.port, "GET", "/health", auth: []).status == 200)
        let list = try Self.request(node.port, "GET", "/api/v1/mood?from=2000-01-01&limit=1", auth: auth)
        let ids = created.withLock { $0 }
        // Every 201 is there; beyond them only writes answered "outcome unknown" (committed as the server went away).
        let total = try #require(list.data["total"]?.intValue)
        #expect(total >= ids.count && total <= ids.count + seen[-1, default: 0], "\(total) entries, \(seen)")
        for id in ids.suffix(20) {
            #expect(try Self.request(node.port, "GET", "/api/v1/mood/\(id)", auth: auth).status == 200)
        }
    }

    @Test("A data directory moves into PostgreSQL and back: same events, seqs, batches and keys; again changes nothing")
    func migration() throws {
        let dir = TemporaryDirectory("migrate")
        let h = try ServerHarness(dir: dir)
        for index in 0..<30 {
            let created = try h.request(
                "POST", "/api/v1/mood", json: #"{"valence":0.\#(index % 10),"notes":"n\#(index)"}"#)
            #expect(created.status == 201)
            if index % 3 == 0, let id = created.data["id"]?.stringValue {
                #expect(try h.request("DELETE", "/api/v1/mood/\(id)").status == 204)
            }
        }
        let before = try h.request("GET", "/api/v1/mood?from=2000-01-01&limit=100")
        let keys = h.keys
        h.stop()
        guard !ServerHarness.overPostgres else { return }
        let url = try freshPostgresDatabase()
        let store = try PostgresStore(url: url)
        defer { store.pool.close() }
        let report = try store.migrate(from: dir.path)
        #expect(report.contains { $0.hasPrefix("alice: ") && $0.hasSuffix("events copied") }, "\(report)")
        #expect(try store.migrate(from: dir.path).contains { $0.contains("already in the database") })
        // The server over the database answers as the directory's did, with the same key and token.
        let node = try Self.node(url, clock: h.clock)
        let auth = [("Authorization", "Bearer \(h.token("alice"))"), ("X-API-Key", keys["alice"]!)]
        let after = try Self.request(node.port, "GET", "/api/v1/mood?from=2000-01-01&limit=100", auth: auth)
        node.stop()
        #expect(after.status == 200)
        #expect(after.data == before.data)
        // And back into a directory: a ledger whose records are the rows.
        let back = TemporaryDirectory("exported")
        let lines = try store.export(to: back.path)
        #expect(lines.count == 2, "\(lines)")
        let original = try Ledger.open(at: MoodServer.userDirectory("alice", in: dir.path))
        let exported = try Ledger.open(at: MoodServer.userDirectory("alice", in: back.path))
        defer {
            original.close()
            exported.close()
        }
        #expect(exported.lastSeq == original.lastSeq)
        #expect(exported.read { $0.entries.count } == original.read { $0.entries.count })
        #expect(throws: ServerError.self) { try store.export(to: back.path) }
    }

    @Test(
        "A primary with a synchronous standby killed under load: the standby promoted, every 201 is there, writes resume"
    )
    func failover() throws {
        let primary = try PostgresCluster(settings: ["synchronous_standby_names = 'standby1'"])
        let standby = try PostgresCluster(standbyOf: primary, name: "standby1")
        let url =
            "host=\(primary.directory),\(standby.directory) port=\(primary.port),\(standby.port) "
            + "user=\(primary.user) password='\(primary.password)' dbname=postgres "
            + "target_session_attrs=read-write connect_timeout=2"
        let (_, auth) = try Self.database(url)
        let a = try Self.node(url)
        let b = try Self.node(url)
        defer {
            a.stop()
            b.stop()
        }
        let created = Mutex<[String]>([])
        let statuses = Mutex<[Int: Int]>([:])
        let running = Atomic<Bool>(true)
        // Writers on threads of their own: the waits below spin on this test's thread.
        let writers = onDedicatedThreads(4) { writer in
            let node = writer % 2 == 0 ? a : b
            while running.load(ordering: .relaxed) {
                guard
                    let response = try? Self.request(
                        node.port, "POST", "/api/v1/mood", auth: auth, json: #"{"valence":0.6}"#)
                else { continue }
                statuses.withLock { $0[response.status, default: 0] += 1 }
                if response.status == 201, let id = response.data["id"]?.stringValue {
                    created.withLock { $0.append(id) }
                }
            }
        }
        func waitForCreated(_ more: Int) {
            let start = created.withLock { $0.count }
            while created.withLock({ $0.count }) < start + more { sched_yield() }
        }
        waitForCreated(10)
        try primary.kill()
        try standby.promote()
        waitForCreated(10)
        running.store(false, ordering: .relaxed)
        writers.wait()
        let seen = statuses.withLock { $0 }
        #expect(seen[500] == nil, "\(seen)")
        #expect(
            Set(seen.keys).isSubset(of: [201, 503]), "answered 201 or 503 (with Retry-After), nothing else: \(seen)")
        let ids = created.withLock { $0 }
        for (index, id) in ids.enumerated() {
            let node = index % 2 == 0 ? a : b
            #expect(
                try Self.request(node.port, "GET", "/api/v1/mood/\(id)", auth: auth).status == 200,
                "a write answered 201 before the failover is on the promoted standby")
        }
    }

    @Test("One user's concurrent writes on one node share commits: every one answered once, in order, seqs contiguous")
    func groupCommit() throws {
        let (url, auth) = try Self.database()
        let node = try Self.node(url)
        defer { node.stop() }
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 48) { index in
            let response = try? Self.request(
                node.port, "POST", "/api/v1/mood", auth: auth,
                headers: index % 3 == 0 ? [("Idempotency-Key", "k\(index)")] : [],
                json: #"{"valence":0.\#(index % 10)}"#)
            statuses.withLock { $0.append(response?.status ?? 0) }
        }
        #expect(statuses.withLock { $0 } == Array(repeating: 201, count: 48))
        let list = try Self.request(node.port, "GET", "/api/v1/mood?from=2000-01-01&limit=1", auth: auth)
        #expect(list.data["total"] == .int(48))
        let audit = try PostgresStore(url: url)
        defer { audit.pool.close() }
        let rows = try audit.pool.withConnection {
            try $0.query(
                "SELECT count(*), max(seq), count(*) FILTER (WHERE NOT continues_batch) FROM events "
                    + "WHERE user_name = 'alice'"
            ).rows[0]
        }
        #expect(try rows.int(0) == rows.int(1), "seqs contiguous, none doubled")
        #expect(try rows.int(2) == 48, "one batch per request, however they were grouped into transactions")
    }

    @Test("A write decided on a fold that is not the database's is decided again: seqs stay contiguous, none doubled")
    func aStaleFoldNeverCommits() throws {
        let (url, auth) = try Self.database()
        let node = try Self.node(url)
        defer { node.stop() }
        var ids: [EntryID] = []
        for index in 0..<3 {
            let created = try Self.request(
                node.port, "POST", "/api/v1/mood", auth: auth, json: #"{"valence":0.\#(index)}"#)
            #expect(created.status == 201)
            ids.append(try #require(EntryID(created.data["id"]?.stringValue ?? "")))
        }
        let store = try PostgresStore(url: url)
        defer { store.pool.close() }
        func seqs() throws -> [Int64] {
            try store.pool.withConnection {
                try $0.query("SELECT seq FROM events WHERE user_name = 'alice' ORDER BY seq").rows.map { try $0.int(0) }
            }
        }
        // Ahead of the database: the last row gone under a fold that holds it (a failover to a standby that lacked
        // it). The write is refused by the transaction's guard, the fold rebuilt, and the write decided again.
        let ahead = try store.openStream("alice", options: Ledger.Options()).stream
        #expect(ahead.lastSeq == 3)
        _ = try store.pool.withConnection { try $0.query("DELETE FROM events WHERE user_name = 'alice' AND seq = 3") }
        try ahead.delete(ids[0])
        #expect(try seqs() == [1, 2, 3])
        #expect(ahead.lastSeq == 3)
        #expect(ahead.read { $0.entries[ids[0]] } == nil)
        #expect(ahead.read { $0.entries[ids[2]] } == nil, "the row the database lost is gone from the fold too")
        // Behind the database: another node wrote since this fold was read.
        let behind = try store.openStream("alice", options: Ledger.Options()).stream
        let created = try Self.request(node.port, "POST", "/api/v1/mood", auth: auth, json: #"{"valence":0.5}"#)
        #expect(created.status == 201)
        #expect(behind.lastSeq == 3)
        try behind.delete(ids[1])
        #expect(try seqs() == [1, 2, 3, 4, 5])
        #expect(behind.read { $0.entries.count } == 1)
    }

    @Test("An account added through another node signs in at once; refused sign-ins are answered 401, each once")
    func accountsAddedElsewhere() throws {
        let (url, _) = try Self.database()
        let node = try Self.node(url)
        defer { node.stop() }
        // Added as another node would, between the node's 200 ms reads of the accounts log: the first request is not
        // refused (the log is read again, on a worker, before a 401).
        let store = try PostgresStore(url: url)
        defer { store.pool.close() }
        for name in ["bob", "carol", "dave"] {
            let key = try store.addUser(name)
            let token = try #require(
                try store.credentials().token(for: name, now: SystemIO().nowMicroseconds() / 1_000_000, ttl: 3600))
            let auth = [("Authorization", "Bearer \(token)"), ("X-API-Key", key)]
            let created = try Self.request(node.port, "POST", "/api/v1/mood", auth: auth, json: #"{"valence":0.5}"#)
            #expect(created.status == 201, "\(name)")
        }
        // A burst of wrong keys: every one refused, none waiting on another's read for long.
        let token = try #require(
            try store.credentials().token(for: "bob", now: SystemIO().nowMicroseconds() / 1_000_000, ttl: 3600))
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 32) { index in
            let status =
                (try? Self.request(
                    node.port, "GET", "/api/v1/mood",
                    auth: [("Authorization", "Bearer \(token)"), ("X-API-Key", "wrong-\(index)")]
                ).status) ?? 0
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0 } == Array(repeating: 401, count: 32))
    }

    @Test("Two catch-ups of one fold folded in either order: the fold ends where the one that read further did")
    func catchUpsRacing() throws {
        let (url, auth) = try Self.database()
        let node = try Self.node(url)
        defer { node.stop() }
        func post() throws {
            let created = try Self.request(node.port, "POST", "/api/v1/mood", auth: auth, json: #"{"valence":0.25}"#)
            #expect(created.status == 201)
        }
        let store = try PostgresStore(url: url)
        defer { store.pool.close() }
        for shorterFirst in [true, false] {
            let stream = try store.openStream("alice", options: Ledger.Options()).stream
            let start = stream.lastSeq
            try post()
            let shorter = try stream.readPast()  // one row
            try post()
            let longer = try stream.readPast()  // both, read after the second write was answered
            #expect(shorter.rows.count == 1 && longer.rows.count == 2)
            for read in shorterFirst ? [shorter, longer] : [longer, shorter] { #expect(try stream.fold(read)) }
            #expect(stream.lastSeq == start + 2, "the fold ends where the longer read did")
            #expect(stream.read { $0.entries.count } == Int(start) + 2)
        }
    }
}
