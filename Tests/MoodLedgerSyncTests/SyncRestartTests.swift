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
            #expect(try account.lastSeq(account.a) - before == 2)
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
}
