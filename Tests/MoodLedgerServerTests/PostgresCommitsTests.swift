import Foundation
import MoodLedger
import Platform
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerServer

/// Several users' writes in one transaction: a group that fails is answered alone, the others committed; many
/// users writing at once through two nodes lose nothing and double nothing.
@Suite(.enabled(if: PostgresCluster.isAvailable, "PostgreSQL is not installed"))
struct PostgresCommitsTests {
    /// A group that inserts one row for `user` at `seq`, guarded by `last` as the user's last seq.
    static func group(_ user: String, seq: UInt64, expecting last: UInt64) -> PostgresCommits.Group {
        let row = EventRow(seq: seq, type: 0x8003, continuesBatch: false, recordedAt: 1_000_000, payload: [1, 2, 3])
        return PostgresCommits.Group(
            user: user,
            statements: [(PostgresStream.expectLastSeq, [.text(user), .int64(Int64(last))]), row.insert(for: user)])
    }

    @Test("A group whose guard fails is answered alone; the groups before and after it in the transaction commit")
    func aFailingGroupFailsAlone() throws {
        let url = try freshPostgresDatabase()
        let store = try PostgresStore(url: url)
        defer { store.pool.close() }
        try store.initialize()
        _ = try store.addUsers(["ann", "ben", "cy"])
        // ben's group expects a last seq of 5: the database has none of his rows.
        let groups = [
            Self.group("cy", seq: 1, expecting: 0), Self.group("ben", seq: 6, expecting: 5),
            Self.group("ann", seq: 1, expecting: 0)
        ]
        store.commits.run(groups)
        #expect(groups[0].error == nil && groups[2].error == nil)
        let failure = try #require(groups[1].error as? PostgresError)
        #expect(PostgresStream.lostRace(failure), "\(failure)")
        let rows = try store.pool.withConnection {
            try $0.query("SELECT user_name, seq FROM events ORDER BY user_name").rows.map {
                try $0.text(0) + String(try $0.int(1))
            }
        }
        #expect(rows == ["ann1", "cy1"])
        // A unique violation is the failing group's alone too.
        let again = [Self.group("ann", seq: 1, expecting: 1), Self.group("ben", seq: 1, expecting: 0)]
        store.commits.run(again)
        #expect((again[0].error as? PostgresError).map(PostgresStream.lostRace) == true)
        #expect(again[1].error == nil)
    }

    @Test("Many users writing at once through two nodes: every write answered 201 once, each user's seqs contiguous")
    func manyUsersAtOnce() throws {
        let url = try freshPostgresDatabase()
        let store = try PostgresStore(url: url)
        defer { store.pool.close() }
        try store.initialize()
        let names = (0..<24).map { "u\($0)" }
        let keys = try store.addUsers(names)
        let credentials = try store.credentials()
        let now = SystemIO().nowMicroseconds() / 1_000_000
        let nodes = try (0..<2).map { _ in try PostgresStoreTests.node(url) }
        defer { for node in nodes { node.stop() } }
        let statuses = Mutex<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 96) { index in
            let user = index % names.count
            guard let token = credentials.token(for: names[user], now: now, ttl: 3600) else { return }
            let status =
                (try? PostgresStoreTests.request(
                    nodes[index % 2].port, "POST", "/api/v1/mood",
                    auth: [("Authorization", "Bearer \(token)"), ("X-API-Key", keys[user])],
                    json: #"{"valence":0.\#(index % 10)}"#
                ).status) ?? 0
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0 } == Array(repeating: 201, count: 96))
        let rows = try store.pool.withConnection {
            try $0.query("SELECT user_name, count(*), max(seq) FROM events GROUP BY user_name").rows
        }
        #expect(rows.count == names.count)
        for row in rows {
            let name = try row.text(0)
            #expect(try row.int(1) == 4 && row.int(2) == 4, "\(name): four writes, seqs 1…4")
        }
    }
}
