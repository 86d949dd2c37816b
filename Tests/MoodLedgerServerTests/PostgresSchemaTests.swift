import Foundation
import MoodLedger
import Platform
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerServer

/// The PostgreSQL schema's versions: `init` makes the newest, migrates an older one in one transaction, and changes
/// nothing when run again; a node refuses a database of another version.
@Suite(.enabled(if: PostgresCluster.isAvailable, "PostgreSQL is not installed"))
struct PostgresSchemaTests {
    static func version(_ store: PostgresStore) throws -> Int64 {
        try store.pool.withConnection { try $0.query("SELECT max(version) FROM moodledger_schema").rows[0].int(0) }
    }

    /// The code of the ``ServerError`` `body` throws (nil: none thrown).
    static func refusal(_ body: () throws -> Void) -> String? {
        do { try body() } catch let error as ServerError { return error.code } catch { return "\(error)" }
        return nil
    }

    static func identities(_ store: PostgresStore) throws -> [String: [UInt8]] {
        let rows = try store.pool.withConnection { try $0.query("SELECT user_name, account FROM streams").rows }
        return Dictionary(uniqueKeysWithValues: try rows.map { (try $0.text(0), try $0.bytes(1)) })
    }

    @Test("Version 1 with accounts lacking their streams rows migrates to 2: rows for accounts in force, once")
    func migratesFromVersionOne() throws {
        let url = try freshPostgresDatabase()
        let store = try PostgresStore(url: url)
        defer { store.pool.close() }
        #expect(try store.initialize(upTo: 1) == 0)
        #expect(try Self.version(store) == 1)
        // Accounts as version 1 kept them: the accounts log alone. One is erased, one has its key rotated.
        var credentials = try store.credentials()
        let keys = try ["ann", "ben", "cy"].map { try credentials.addUser($0) }
        _ = try credentials.rotateKey("ben")
        _ = credentials.removeUser("cy")
        try store.append(credentials.takeChanges())
        #expect(try Self.identities(store).isEmpty)

        var configuration = MoodServer.Configuration(dataDirectory: "")
        configuration.store = try PostgresStore(url: url)
        configuration.log = { _ in }
        #expect(
            Self.refusal { _ = try MoodServer(configuration: configuration) } == "schema_older",
            "a node refuses an older schema until init migrates it")
        configuration.store?.pool.close()

        // Two nodes running init at once: one migrates, the other finds it done.
        let before = Mutex<[Int64]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            let other = try? PostgresStore(url: url)
            defer { other?.pool.close() }
            if let version = try? other?.initialize() { before.withLock { $0.append(version) } }
        }
        #expect(before.withLock { $0.sorted() } == [1, 2])
        #expect(try Self.version(store) == 2)
        let identities = try Self.identities(store)
        #expect(Set(identities.keys) == ["ann", "ben"], "accounts in force only: cy was erased")
        #expect(identities.values.allSatisfy { $0.count == 16 } && Set(identities.values).count == 2)
        #expect(try store.initialize() == 2)
        #expect(try Self.identities(store) == identities, "run again, init changes nothing")

        // The migrated database serves: ann's answers name the identity the migration made.
        let node = try PostgresStoreTests.node(url)
        defer { node.stop() }
        let token = try #require(
            try store.credentials().token(for: "ann", now: SystemIO().nowMicroseconds() / 1_000_000, ttl: 3600))
        let read = try PostgresStoreTests.request(
            node.port, "GET", "/api/v1/mood", auth: [("Authorization", "Bearer \(token)"), ("X-API-Key", keys[0])])
        #expect(read.status == 200)
        #expect(read.header("MoodLedger-Account") == ByteText.hex(identities["ann"]!))
    }

    @Test("A schema newer than this build's is refused by init and by a node; a new one is made at the newest")
    func newerIsRefused() throws {
        let url = try freshPostgresDatabase()
        let store = try PostgresStore(url: url)
        defer { store.pool.close() }
        #expect(try store.initialize() == 0)
        #expect(try Self.version(store) == PostgresStore.schemaVersion)
        _ = try store.pool.withConnection {
            try $0.query(
                "INSERT INTO moodledger_schema (version) VALUES ($1)", [.int64(PostgresStore.schemaVersion + 1)])
        }
        #expect(Self.refusal { try store.initialize() } == "schema_newer")
        #expect(Self.refusal { try store.checkSchema() } == "schema_newer")
        var configuration = MoodServer.Configuration(dataDirectory: "")
        configuration.store = store
        configuration.log = { _ in }
        #expect(Self.refusal { _ = try MoodServer(configuration: configuration) } == "schema_newer")
    }
}
