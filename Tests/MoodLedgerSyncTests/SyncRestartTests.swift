import Foundation
import MoodLedger
import MoodLedgerSync
import TestSupport
import Testing

/// Two devices of one account and a `moodledger serve` that restarts, goes down, or comes back from a backup: the
/// built binary on both devices, the server in-process over one data directory.
@Suite("Sync across server restarts, outages and restores")
struct SyncRestartTests {
    final class Account {
        let dir: TemporaryDirectory
        var server: SyncServer?
        let port: UInt16
        let environment: [String: String]
        let a: String
        let b: String

        init(_ name: String) throws {
            dir = TemporaryDirectory(name)
            let server = try SyncServer(dir: dir.sub("server"))
            self.server = server
            port = server.port
            let credentials = server.credentials
            environment = ["MOODLEDGER_API_KEY": credentials.apiKey!, "MOODLEDGER_TOKEN": credentials.token!]
            a = dir.sub("a")
            b = dir.sub("b")
            for ledger in [a, b] {
                #expect(try SyncCrashTests.run(["init", "--ledger", ledger]).0 == 0)
                #expect(try SyncCrashTests.run(["remote", "set", server.url, "--ledger", ledger]).0 == 0)
            }
        }

        /// Stops the server (its ledgers closed) and, unless `down`, starts it again on the same port.
        func restart(down: Bool = false) throws {
            server?.stop()
            server = nil
            if !down { server = try SyncServer(dir: dir.sub("server"), port: port) }
        }

        /// A command on a device: exit code and output.
        @discardableResult
        func run(_ ledger: String, _ arguments: [String], expect code: Int32? = 0) throws -> String {
            let (status, output) = try SyncCrashTests.run(arguments + ["--ledger", ledger], environment: environment)
            if let code { #expect(status == code, "\(arguments): \(output)") }
            return output
        }

        /// Events (records of the application's events; safe-to-ignore records such as a sync's carrier aside)
        /// after `seq`.
        func events(_ ledger: String, after seq: Int) throws -> Int {
            let lines = try run(ledger, ["events", "--json"]).split(separator: "\n")
            return try lines.filter { (try JSONParser.parse(String($0))["seq"]?.intValue ?? 0) > seq }.count
        }

        func lastSeq(_ ledger: String) throws -> Int {
            // One JSON object a line.
            let lines = try run(ledger, ["events", "--json"]).split(separator: "\n")
            return try lines.compactMap { try JSONParser.parse(String($0))["seq"]?.intValue }.max() ?? 0
        }

        /// The device's entries as its JSON export carries them (the typed score included), by id.
        func entries(_ ledger: String) throws -> [String: JSONValue] {
            let export = try JSONParser.parse(try run(ledger, ["export", "--format", "json"]))
            var byID: [String: JSONValue] = [:]
            for entry in export["entries"]?.arrayValue ?? export.arrayValue ?? [] {
                guard case .object(let pairs) = entry, let id = entry["id"]?.stringValue else { continue }
                // What both devices must agree on: content, not where each copy came from or when it was made.
                byID[id] = .object(
                    pairs.filter { !["source", "source_id", "created_at", "updated_at"].contains($0.0) })
            }
            return byID
        }

        deinit { server?.stop() }
    }

    @Test("A restart keeps every revision: an edit after it is delivered at once, with no merge")
    func restartKeepsRevisions() throws {
        let account = try Account("sync-restart")
        let id = try account.run(account.a, ["log", "--score", "6", "--label", "calm", "--note", "one"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try account.run(account.a, ["sync"])
        try account.run(account.b, ["sync"])
        try account.run(account.a, ["update", id, "--note", "two"])
        try account.run(account.a, ["sync"])
        try account.restart()
        try account.run(account.a, ["update", id, "--note", "three"])
        let before = try account.lastSeq(account.a)
        let output = try account.run(account.a, ["sync"])
        #expect(output.contains("sent 1: 1 delivered, 0 merged"), "\(output)")
        #expect(try account.lastSeq(account.a) - before <= 12)
        try account.run(account.b, ["sync"])
        #expect(try account.entries(account.a) == account.entries(account.b))
        #expect(try account.entries(account.b)[id]?["notes"] == .string("three"))
    }

    @Test("A typed score stays typed through merges on both devices and the server")
    func typedScoreSurvivesMerges() throws {
        let account = try Account("sync-typed")
        let id = try account.run(account.a, ["log", "--score", "6", "--label", "calm"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try account.run(account.a, ["sync"])
        try account.run(account.b, ["sync"])
        try account.run(account.a, ["update", id, "--note", "edited on a"])
        try account.run(account.b, ["labels", id, "--add", "grateful"])
        for ledger in [account.a, account.b, account.a, account.b, account.a] { try account.run(ledger, ["sync"]) }
        let onA = try account.entries(account.a)
        #expect(onA == (try account.entries(account.b)))
        #expect(onA[id]?["typed_score"] == .int(6), "\(String(describing: onA[id]))")
        #expect(onA[id]?["notes"] == .string("edited on a"))
        #expect(onA[id]?["labels"] == .array([.string("calm"), .string("grateful")]))
        #expect(try account.run(account.a, ["conflicts", "--json"]).contains("[]"))
    }

    @Test("The device whose edit a concurrent edit replaced learns it: conflicts, explain and history say so")
    func losingDeviceKnows() throws {
        let account = try Account("sync-losing")
        let id = try account.run(account.a, ["log", "--score", "6", "--label", "calm", "--note", "original"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try account.run(account.a, ["sync"])
        try account.run(account.b, ["sync"])
        try account.run(account.a, ["update", id, "--note", "from a"])
        try account.run(account.a, ["sync"])
        try account.run(account.b, ["update", id, "--note", "from b"])
        try account.run(account.b, ["sync"])
        try account.restart()  // the server's note of what was replaced survives a restart
        try account.run(account.a, ["sync"])
        let conflicts = try JSONParser.parse(try account.run(account.a, ["conflicts", "--json"])).arrayValue ?? []
        #expect(conflicts.count == 1, "\(conflicts)")
        #expect(conflicts.first?["field"] == .string("notes"))
        #expect(conflicts.first?["here"] == .string("from a") && conflicts.first?["server"] == .string("from b"))
        #expect(conflicts.first?["won"] == .string("server"))
        let explain = try account.run(account.a, ["sync", "explain", id])
        #expect(explain.contains("another device's write replaced this device's value"), "\(explain)")
        #expect(try account.run(account.a, ["history", id]).contains("sync.merged"))
        #expect(try account.entries(account.a) == account.entries(account.b))
        // Resolving here sends "from a" again; the other device then holds it too.
        try account.run(account.a, ["conflicts", "resolve", id, "--take", "here"])
    }

    @Test(
        "--dry-run shows the keys the run sends; an unreachable server is exit 69 with nothing appended; --help lists every option"
    )
    func dryRunKeysAndExits() throws {
        let account = try Account("sync-dry-run")
        for valence in ["0.1", "0.2", "0.3"] {
            try account.run(account.a, ["log", "--valence", valence, "--label", "calm"])
        }
        let planned = try JSONParser.parse(try account.run(account.a, ["sync", "--dry-run", "--json"])).arrayValue ?? []
        let plannedKeys = Set(planned.compactMap { $0["idempotency_key"]?.stringValue })
        #expect(plannedKeys.count == 3)
        try account.run(account.a, ["sync"])
        let lines = try account.run(account.a, ["events", "--json"]).split(separator: "\n")
        let sentKeys = Set(
            try lines.map { try JSONParser.parse(String($0)) }.filter { $0["type"] == .string("sync.attempted") }
                .compactMap { $0["data"]?["idempotency_key"]?.stringValue ?? $0["idempotency_key"]?.stringValue })
        #expect(sentKeys == plannedKeys, "planned \(plannedKeys), sent \(sentKeys)")
        // A fresh device whose remote has not answered yet: nothing recorded, exit 69.
        try account.restart(down: true)
        let before = try account.lastSeq(account.b)
        let output = try account.run(account.b, ["sync"], expect: 69)
        #expect(output.contains("could not ask the remote"), "\(output)")
        #expect(try account.lastSeq(account.b) == before)
        let help = try SyncCrashTests.run(["sync", "--help"]).1
        for option in ["--once", "--now", "--dry-run", "--credentials", "--concurrency", "--at", "--json"] {
            #expect(help.contains(option), "sync --help lacks \(option)")
        }
    }

    @Test("An outage with sync --now counts one attempt per run and parks nothing; the next run delivers")
    func outageDoesNotPark() throws {
        let account = try Account("sync-outage")
        let id = try account.run(account.a, ["log", "--valence", "0.3", "--label", "calm"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try account.run(account.a, ["sync"])
        try account.restart(down: true)
        try account.run(account.a, ["update", id, "--note", "while down"])
        for _ in 0..<12 {
            let before = try account.lastSeq(account.a)
            try account.run(account.a, ["sync", "--now"], expect: 69)
            // One attempt and its failure a run, whatever --now says.
            #expect(try account.events(account.a, after: before) == 2)
        }
        let status = try JSONParser.parse(try account.run(account.a, ["sync", "status", "--json"]))
        #expect(status.arrayValue?.first?["parked"] == .int(0), "\(status)")
        try account.restart()
        // The retry time the last failure drew may be minutes away: --now sends it as soon as the server is back.
        let output = try account.run(account.a, ["sync", "--now"])
        #expect(output.contains("1 delivered"), "\(output)")
    }

    @Test("A server restored from a backup: the revision going back is said once and the entry is sent again, no loop")
    func restoredServer() throws {
        let account = try Account("sync-restored")
        let id = try account.run(account.a, ["log", "--valence", "0.3", "--label", "calm"])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try account.run(account.a, ["sync"])
        try account.restart(down: true)
        let server = account.dir.sub("server")
        let backup = account.dir.sub("backup")
        try FileManager.default.copyItem(atPath: server, toPath: backup)
        try account.restart()
        for note in ["two", "three"] {
            try account.run(account.a, ["update", id, "--note", note])
            try account.run(account.a, ["sync"])
        }
        try account.restart(down: true)
        try FileManager.default.removeItem(atPath: server)
        try FileManager.default.moveItem(atPath: backup, toPath: server)
        try account.restart()
        try account.run(account.a, ["update", id, "--note", "four"])
        let output = try account.run(account.a, ["sync"])
        #expect(output.contains("went back from"), "\(output)")
        #expect(try account.run(account.a, ["sync"]).hasPrefix("sent 0"))
        try account.run(account.b, ["sync"])
        #expect(try account.entries(account.b)[id]?["notes"] == .string("four"))
    }

    /// The built `moodledger serve` on `port` (0: any) over `data`; its port once it listens.
    static func serve(_ data: String, port: UInt16) throws -> (Process, UInt16) {
        try ServeProcess.start(data, port: port)
    }

    @Test("Two devices and the built server killed (SIGKILL, SIGTERM, mid-sync) at seeded points: identical at the end")
    func killedServer() throws {
        var random = SeededRandom()
        let dir = TemporaryDirectory("sync-killed-server")
        let data = dir.sub("server")
        let key =
            try Tool.run(["serve", "user", "add", "alice", "--data", data]).out
            .split(separator: "\n").last.map(String.init) ?? ""
        let token = try Tool.run(["serve", "token", "--user", "alice", "--data", data, "--ttl", "1d"]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        var (server, port) = try Self.serve(data, port: 0)
        defer {
            if server.isRunning { kill(server.processIdentifier, SIGKILL) }
            server.waitUntilGone()
        }
        let environment = ["MOODLEDGER_API_KEY": key, "MOODLEDGER_TOKEN": token]
        let devices = [dir.sub("a"), dir.sub("b"), dir.sub("c")]
        func cli(_ ledger: String, _ arguments: [String]) throws -> (Int32, String) {
            try SyncCrashTests.run(arguments + ["--ledger", ledger], environment: environment)
        }
        for ledger in devices {
            #expect(try cli(ledger, ["init"]).0 == 0)
            #expect(try cli(ledger, ["remote", "set", "http://127.0.0.1:\(port)"]).0 == 0)
        }
        var ids: [String] = []
        for index in 0..<3 {
            let (code, id) = try cli(devices[0], ["log", "--score", "\(index + 4)", "--label", "calm"])
            #expect(code == 0)
            ids.append(id.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        for ledger in devices.prefix(2) { #expect(try cli(ledger, ["sync"]).0 == 0) }
        var kills = 0
        for step in 0..<24 {
            let ledger = devices[Int.random(in: 0..<2, using: &random)]
            let id = ids.randomElement(using: &random)!
            switch Int.random(in: 0..<4, using: &random) {
            case 0: _ = try cli(ledger, ["update", id, "--note", "n\(step)"])
            case 1: _ = try cli(ledger, ["update", id, "--score", "\(Int.random(in: 1...10, using: &random))"])
            case 2: _ = try cli(ledger, ["labels", id, "--add", ["grateful", "hopeful", "tired"][step % 3]])
            default: _ = try cli(ledger, ["update", id, "--valence", "0.\(Int.random(in: 10...99, using: &random))"])
            }
            if Int.random(in: 0..<3, using: &random) == 0 {
                // A kill while a sync may be between its attempt and its outcome, or between syncs.
                let (syncing, pipe) = try SyncCrashTests.start(
                    ["sync", "--now", "--ledger", devices[Int.random(in: 0..<2, using: &random)]],
                    environment: environment)
                Thread.sleep(forTimeInterval: Double(Int.random(in: 0...40, using: &random)) / 1000)
                kill(server.processIdentifier, Bool.random(using: &random) ? SIGKILL : SIGTERM)
                server.waitUntilGone()
                _ = pipe.fileHandleForReading.readDataToEndOfFile()
                syncing.waitUntilGone()
                (server, port) = try Self.serve(data, port: port)
                kills += 1
            } else {
                _ = try cli(ledger, ["sync", "--now"])
            }
        }
        // Fault-free: every retry now, until nothing moves.
        for _ in 0..<3 { for ledger in devices { _ = try cli(ledger, ["sync", "--now"]) } }
        print("[killedServer] seed \(random.seed): \(kills) kills")
        func exported(_ ledger: String) throws -> [JSONValue] {
            let (_, text) = try cli(ledger, ["export", "--format", "json"])
            let entries = try JSONParser.parse(text)["entries"]?.arrayValue ?? []
            return entries.map { entry in
                guard case .object(let pairs) = entry else { return entry }
                return .object(pairs.filter { !["source", "source_id", "created_at", "updated_at"].contains($0.0) })
            }.sorted { ($0["id"]?.stringValue ?? "") < ($1["id"]?.stringValue ?? "") }
        }
        let first = try exported(devices[0])
        #expect(first.count == 3)
        for ledger in devices.dropFirst() {
            #expect(try exported(ledger) == first, "seed \(random.seed)")
        }
        for ledger in devices {
            let (code, output) = try cli(ledger, ["sync", "status", "--json"])
            #expect(code == 0 && output.contains("\"parked\": 0"), "seed \(random.seed): \(output)")
        }
    }
}
