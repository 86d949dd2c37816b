import EventLog
import Foundation
import MoodLedger
import Platform
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerServer

@Suite("Many accounts: a bounded pool of open ledgers")
struct ManyAccountsTests {
    @Test("With room for 3 open ledgers, 24 users each write and read: all 2xx, never more than 3 open, nothing lost")
    func boundedPool() throws {
        let users = (0..<24).map { "user\($0)" }
        let notices = Mutex<[String]>([])
        let h = try ServerHarness(users: users) { configuration in
            configuration.maxOpenLedgers = 3
            configuration.log = { line in notices.withLock { $0.append(line) } }
        }
        defer { h.stop() }
        for round in 0..<2 {
            for user in users.shuffled() {
                let created = try h.request(
                    "POST", "/api/v1/mood", user: user, json: #"{"valence":0.\#(round + 1),"labels":["calm"]}"#)
                #expect(created.status == 201, "\(user): \(created.text)")
                #expect(h.backend.ledgers.count <= 3)
            }
        }
        for user in users {
            let listed = try h.request("GET", "/api/v1/mood?from=2000-01-01&to=2100-01-01", user: user)
            #expect(listed.status == 200 && listed.data["entries"]?.arrayValue?.count == 2, "\(user): \(listed.text)")
        }
        #expect(h.backend.ledgers.count <= 3)
        #expect(
            notices.withLock { $0 }.isEmpty,
            "closing and reopening ledgers is quiet: \(notices.withLock { $0.prefix(3) })")
    }

    @Test(
        "A list for a user whose small ledger is not open is read by a read-only open for that request: current data, no pool slot; a larger one is opened into the pool"
    )
    func readOnlyLists() throws {
        let h = try ServerHarness(users: ["alice", "bob", "carol"]) { configuration in
            configuration.maxOpenLedgers = 1
            configuration.readOnlyListBytes = 2048
        }
        defer { h.stop() }
        func isOpen(_ user: String) -> Bool { h.backend.ledgers.leaseIfOpen(user) != nil }
        for index in 0..<3 {
            #expect(
                try h.request("POST", "/api/v1/mood", user: "alice", json: #"{"valence":0.\#(index)}"#).status == 201)
        }
        #expect(try h.request("POST", "/api/v1/mood", user: "bob", json: #"{"valence":0.5}"#).status == 201)
        #expect(isOpen("bob") && !isOpen("alice"))
        let listed = try h.request("GET", "/api/v1/mood?from=2000-01-01&limit=30", user: "alice")
        #expect(listed.status == 200 && listed.data["total"]?.intValue == 3, "\(listed.text)")
        #expect(isOpen("bob") && !isOpen("alice"), "read without taking bob's slot")
        // A write after it, then the list again: it sees the write.
        #expect(try h.request("POST", "/api/v1/mood", user: "alice", json: #"{"valence":0.9}"#).status == 201)
        #expect(try h.request("POST", "/api/v1/mood", user: "bob", json: #"{"valence":0.1}"#).status == 201)
        let again = try h.request("GET", "/api/v1/mood?from=2000-01-01&limit=30", user: "alice")
        #expect(again.status == 200 && again.data["total"]?.intValue == 4, "\(again.text)")
        // carol's log is past 2 KiB: her list opens her ledger into the pool.
        for index in 0..<40 {
            #expect(
                try h.request("POST", "/api/v1/mood", user: "carol", json: #"{"valence":0.\#(index % 10)}"#).status
                    == 201)
        }
        #expect(try h.request("POST", "/api/v1/mood", user: "bob", json: #"{"valence":0.2}"#).status == 201)
        #expect(!isOpen("carol"))
        let large = try h.request("GET", "/api/v1/mood?from=2000-01-01&limit=30", user: "carol")
        #expect(large.status == 200 && large.data["total"]?.intValue == 40, "\(large.text)")
        #expect(isOpen("carol"))
    }

    @Test("The pool's recency list matches a plain array under seeded appends, removals and searches")
    func recencyList() {
        var random = SeededRandom()
        var list = RecencyList<Int>()
        var model: [Int] = []
        for _ in 0..<5_000 {
            let key = Int.random(in: 0..<40, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                list.append(key)
                model.removeAll { $0 == key }
                model.append(key)
            case 1:
                list.remove(key)
                model.removeAll { $0 == key }
            default:
                let bound = Int.random(in: 0..<40, using: &random)
                #expect(list.first { $0 >= bound } == model.first { $0 >= bound })
            }
            #expect(list.keys == model && list.count == model.count, "seed \(random.seed)")
        }
    }

    @Test(
        "A ledger closed to make room leaves a snapshot once its tail is 1,000 events: its reopen replays none of them")
    func closeLeavesSnapshot() throws {
        let h = try ServerHarness { configuration in configuration.maxOpenLedgers = 1 }
        defer { h.stop() }
        let snapshots = h.dir.path + "/users/alice/snapshots"
        func snapshotCount() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: snapshots)) ?? []).filter { $0.hasSuffix(".bin") }
                .count
        }
        for index in 0..<999 {
            let created = try h.request("POST", "/api/v1/mood", user: "alice", json: #"{"valence":0.\#(index % 10)}"#)
            #expect(created.status == 201)
        }
        // A write of bob's takes the one slot: alice's ledger closes.
        #expect(try h.request("POST", "/api/v1/mood", user: "bob", json: #"{"valence":0.1}"#).status == 201)
        #expect(snapshotCount() == 0, "999 events: under the threshold, no snapshot")
        #expect(try h.request("POST", "/api/v1/mood", user: "alice", json: #"{"valence":0.5}"#).status == 201)
        #expect(try h.request("POST", "/api/v1/mood", user: "bob", json: #"{"valence":0.2}"#).status == 201)
        #expect(snapshotCount() == 1, "1,000 events uncovered: the close wrote a snapshot")
        let listed = try h.request("GET", "/api/v1/mood?limit=1", user: "alice")
        #expect(listed.status == 200 && listed.data["total"]?.intValue == 1000, "\(listed.text)")
    }

    @Test(
        "A small ledger is replayed whole, its snapshots never read; a larger one is opened from its snapshot")
    func smallLedgerReplaysWhole() throws {
        let lines = Mutex<[String]>([])
        let h = try ServerHarness { configuration in
            configuration.maxOpenLedgers = 1
            configuration.log = { line in lines.withLock { $0.append(line) } }
        }
        defer { h.stop() }
        #expect(try h.request("POST", "/api/v1/mood", user: "alice", json: #"{"valence":0.5}"#).status == 201)
        // bob's write closes alice's ledger; a damaged snapshot is then put beside her small log.
        #expect(try h.request("POST", "/api/v1/mood", user: "bob", json: #"{"valence":0.1}"#).status == 201)
        let snapshots = h.dir.path + "/users/alice/snapshots"
        try FileManager.default.createDirectory(atPath: snapshots, withIntermediateDirectories: true)
        try Data(repeating: 0xAB, count: 512).write(to: URL(fileURLWithPath: snapshots + "/snapshot-1.bin"))
        let listed = try h.request("GET", "/api/v1/mood", user: "alice")
        #expect(listed.status == 200 && listed.data["total"]?.intValue == 1, "\(listed.text)")
        #expect(try h.request("POST", "/api/v1/mood", user: "alice", json: #"{"valence":0.2}"#).status == 201)
        #expect(lines.withLock { $0 }.allSatisfy { !$0.contains("snapshot") }, "\(lines.withLock { $0 })")

        // Past the whole-replay size the writer's open lists the snapshots: the damaged one is skipped, with a notice.
        let note = String(repeating: "n", count: 450)
        let events = Int(MoodServer.wholeReplayBytes) / 450 + 1
        for _ in 0..<events {
            let created = try h.request(
                "POST", "/api/v1/mood", user: "alice", json: #"{"valence":0.3,"notes":"\#(note)"}"#)
            #expect(created.status == 201)
        }
        #expect(try h.request("POST", "/api/v1/mood", user: "bob", json: #"{"valence":0.1}"#).status == 201)
        #expect(try h.request("POST", "/api/v1/mood", user: "alice", json: #"{"valence":0.4}"#).status == 201)
        #expect(lines.withLock { $0 }.contains { $0.contains("alice") && $0.contains("snapshot skipped") })
    }

    @Test("Under ulimit -n 256, 400 users of the built server each write once: 400 × 2xx", .timeLimit(.minutes(2)))
    func descriptorLimit() throws {
        let dir = TemporaryDirectory("many-accounts-ulimit")
        var credentials = try Credentials.load(directory: dir.path, create: true)
        var keys: [String: String] = [:]
        for index in 0..<400 { keys["u\(index)"] = try credentials.addUser("u\(index)") }
        try credentials.save(directory: dir.path)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", "ulimit -n 256 && exec \"$0\" serve --data \"$1\" --port 0 --writes-per-hour 0 --reads-per-hour 0",
            Repository.executable("moodledger"), dir.path
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        defer {
            process.terminate()
            process.waitUntilGone()
        }
        var seen = ""
        var port: UInt16?
        let deadline = Date().addingTimeInterval(20)
        while port == nil && Date() < deadline {
            seen += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            if let range = seen.range(of: #"127\.0\.0\.1:[0-9]+"#, options: .regularExpression) {
                port = UInt16(seen[range].split(separator: ":")[1])
            }
        }
        let server = try #require(port, "the server did not start: \(seen)")
        var statuses: [Int: Int] = [:]
        for index in 0..<400 {
            let user = "u\(index)"
            let token = credentials.token(for: user, now: Int64(Date().timeIntervalSince1970), ttl: 3600)!
            let body = #"{"valence":0.5,"labels":["calm"]}"#
            let client = try RawClient(port: server)
            defer { client.close() }
            try client.send(
                "POST /api/v1/mood HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer \(token)\r\n"
                    + "X-API-Key: \(keys[user]!)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            )
            statuses[try client.readResponse().status, default: 0] += 1
        }
        #expect(statuses == [201: 400], "\(statuses)")
    }
}

@Suite("The accounts log")
struct AccountsLogTests {
    @Test("An older credentials.json is carried into the accounts log once: its secret and keys still work")
    func migration() throws {
        let dir = TemporaryDirectory("accounts-migration")
        let secret = [UInt8](repeating: 7, count: 32)
        let key = "mlk_" + String(repeating: "ab", count: 24)
        let json =
            #"{"version": 1, "secret": "\#(ByteText.hex(secret))", "users": [{"name": "alice", "key_sha256": "\#(ByteText.hex(SHA256.hash(Array(key.utf8))))"}]}"#
        try json.write(toFile: dir.sub("credentials.json"), atomically: true, encoding: .utf8)
        let loaded = try Credentials.load(directory: dir.path, create: false)
        #expect(loaded.secret == secret && loaded.user(named: "alice", apiKey: key) != nil)
        #expect(FileManager.default.fileExists(atPath: dir.sub("accounts/events.log")))
        // The file is not read again: the log is the accounts now.
        try "not json".write(toFile: dir.sub("credentials.json"), atomically: true, encoding: .utf8)
        let again = try Credentials.load(directory: dir.path, create: false)
        #expect(again.secret == secret && again.has("alice"))
    }

    @Test("Adds append, an erasure redacts: the name is nowhere; a malformed record is refused with its seq")
    func appendAndRedact() throws {
        let dir = TemporaryDirectory("accounts-log")
        var credentials = try Credentials.load(directory: dir.path, create: true)
        let keyA = try credentials.addUser("anna")
        _ = try credentials.addUser("bert")
        try credentials.save(directory: dir.path)
        let size = try #require(SystemIO().size(ofPath: Credentials.logPath(in: dir.path)))
        _ = try credentials.addUser("carl")
        try credentials.save(directory: dir.path)
        #expect(
            try #require(SystemIO().size(ofPath: Credentials.logPath(in: dir.path))) - size < 200, "one small append")
        _ = credentials.removeUser("bert")
        try credentials.save(directory: dir.path)
        let reloaded = try Credentials.load(directory: dir.path, create: false)
        #expect(reloaded.users.map(\.name) == ["anna", "carl"] && reloaded.user(named: "anna", apiKey: keyA) != nil)
        let bytes = try #require(FileManager.default.contents(atPath: Credentials.logPath(in: dir.path)))
        #expect(bytes.range(of: Data("bert".utf8)) == nil, "the erased account's name is gone")
        #expect(bytes.range(of: Data("carl".utf8)) != nil)

        let log = try EventLog.open(directory: dir.sub("accounts"))
        _ = try log.append(type: 2, payload: [1, 3] + Array("dan".utf8) + [0, 0])  // a key hash of 2 bytes
        log.close()
        #expect(throws: ServerError.self) { try Credentials.load(directory: dir.path, create: false) }
        do { _ = try Credentials.load(directory: dir.path, create: false) } catch let error as ServerError {
            #expect(error.description.contains("record 5") && error.description.contains("key hash"), "\(error)")
        }
    }

    @Test("serve user import adds every line in one batch, or none when a name is bad or taken")
    func importFile() throws {
        let dir = TemporaryDirectory("accounts-import")
        try "ada\nbob\n\ncyd\n".write(toFile: dir.sub("names.txt"), atomically: true, encoding: .utf8)
        let added = try Tool.run(["serve", "user", "import", dir.sub("names.txt"), "--data", dir.sub("data")])
        #expect(added.code == 0 && added.out.split(separator: "\n").count == 3, "\(added.out)\(added.err)")
        try "dee\nbob\n".write(toFile: dir.sub("again.txt"), atomically: true, encoding: .utf8)
        let refused = try Tool.run(["serve", "user", "import", dir.sub("again.txt"), "--data", dir.sub("data")])
        #expect(refused.code == 65 && refused.err.contains("line 2"), "\(refused.err)")
        #expect(
            try Credentials.load(directory: dir.sub("data"), create: false).users.map(\.name) == ["ada", "bob", "cyd"])
    }
}
