import Foundation
import MoodLedger
import MoodLedgerSync
import Synchronization
import TestSupport

@testable import MoodLedgerServer

/// A server running in-process on an ephemeral loopback port, with users and tokens, and a raw-socket client.
final class ServerHarness: @unchecked Sendable {
    let dir: TemporaryDirectory
    let running: InProcessServer
    var backend: MoodServer { running.backend }
    var server: HTTPServer { running.server }
    let clock = ManualClock(milliseconds: 1_796_000_000_000)
    var keys: [String: String] = [:]

    /// Starts a server over `dir` (a fresh one by default) with users `alice` and `bob`.
    init(
        dir: TemporaryDirectory = TemporaryDirectory("server"), users: [String] = ["alice", "bob"],
        configure: (inout MoodServer.Configuration) -> Void = { _ in }
    ) throws {
        self.dir = dir
        let clock = self.clock
        var keys: [String: String] = [:]
        var configuration = MoodServer.Configuration(dataDirectory: dir.path)
        if let store = try Self.postgresStore(for: dir) {
            let existing = try store.credentials()
            for user in users where !existing.has(user) { keys[user] = try store.addUser(user) }
            configuration.store = store
        } else {
            var credentials = try Credentials.load(directory: dir.path, create: true)
            for user in users where !credentials.users.contains(where: { $0.name == user }) {
                keys[user] = try credentials.addUser(user)
            }
            try credentials.save(directory: dir.path)
        }
        self.keys = keys
        configuration.http.port = 0
        configuration.http.workers = 16
        configuration.writesPerHour = 0
        configuration.readsPerHour = 0
        configuration.clock = { clock.now }
        configuration.log = { _ in }
        configure(&configuration)
        running = try InProcessServer(configuration)
    }

    /// Whether the harness runs its servers over PostgreSQL: `MOODLEDGER_SERVER_STORE=postgresql` (CI runs the route
    /// tests once over each store).
    static var overPostgres: Bool { ProcessInfo.processInfo.environment["MOODLEDGER_SERVER_STORE"] == "postgresql" }

    /// When the harness runs over PostgreSQL: a store over a database of `dir`'s own (made on first use, its
    /// connection string kept in the directory, so a restarted server finds the same data).
    static func postgresStore(for dir: TemporaryDirectory) throws -> PostgresStore? {
        guard overPostgres else { return nil }
        let file = dir.sub("postgres-url")
        let url: String
        if let kept = try? String(contentsOfFile: file, encoding: .utf8) {
            url = kept
        } else {
            url = try freshPostgresDatabase()
            try url.write(toFile: file, atomically: true, encoding: .utf8)
        }
        let store = try PostgresStore(url: url)
        try store.initialize()
        return store
    }

    /// Stops the server and closes the ledgers.
    func stop() { running.stop() }

    func token(_ user: String, ttl: Int64 = 3600) -> String {
        backend.credentials.token(for: user, now: clock.now / 1000, ttl: ttl)!
    }

    /// Authorization and API-key headers for a user.
    func auth(_ user: String, key: String? = nil) -> [(String, String)] {
        [("Authorization", "Bearer \(token(user))"), ("X-API-Key", key ?? keys[user] ?? "")]
    }

    /// Raw bytes sent on a fresh connection; the parsed response.
    func exchange(_ raw: String) throws -> RawResponse {
        let client = try RawClient(port: server.port)
        defer { client.close() }
        try client.send(raw)
        return try client.readResponse()
    }

    /// One request on a fresh connection; the parsed response.
    func request(
        _ method: String, _ target: String, user: String? = "alice", headers: [(String, String)] = [],
        json: String? = nil
    ) throws -> RawResponse {
        var lines = ["\(method) \(target) HTTP/1.1", "Host: localhost", "Connection: close"]
        if let user { lines += auth(user).map { "\($0.0): \($0.1)" } }
        lines += headers.map { "\($0.0): \($0.1)" }
        var body: [UInt8] = []
        if let json {
            body = Array(json.utf8)
            if !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
                lines.append("Content-Type: application/json")
            }
            lines.append("Content-Length: \(body.count)")
        }
        let client = try RawClient(port: server.port)
        defer { client.close() }
        try client.send(Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body)
        return try client.readResponse(head: method == "HEAD")
    }
}

/// A parsed HTTP response.
struct RawResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    var json: JSONValue { (try? JSONParser.parse(String(decoding: body, as: UTF8.self))) ?? .null }
    var data: JSONValue { json["data"] ?? .null }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// The raw-socket client of the framing tests: the server module's loopback client, answering ``RawResponse``.
final class RawClient {
    let client: HTTPConnection
    init(port: UInt16, timeout: Double = 5) throws { client = try HTTPConnection(port: port, timeout: timeout) }
    func close() { client.close() }
    func send(_ bytes: [UInt8]) throws { try client.send(bytes) }
    func send(_ text: String) throws { try client.send(text) }
    func closedByPeer() -> Bool { client.closedByPeer() }
    /// Whether the server has closed this connection, looking without waiting.
    func closedNow() -> Bool { client.closedByPeerWithoutWaiting() }
    func readResponse(head: Bool = false) throws -> RawResponse {
        let response = try client.readResponse(head: head, returningInterim: true)
        return RawResponse(
            status: response.status, headers: response.headers.map { ($0.name, $0.value) }, body: response.body)
    }
}
