import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodLedgerCLI
@testable import MoodModel

@Suite("Golden human output (re-record with MOODLEDGER_RECORD_GOLDEN=1)")
struct GoldenOutputTests {
    @Test("A scripted session's human output")
    func session() throws {
        let cli = CLIHarness()
        var transcript = ""
        func record(_ words: [String]) {
            let result = cli.run(words)
            transcript += "$ moodledger " + words.joined(separator: " ") + "\n" + result.out
            if !result.err.isEmpty { transcript += "[stderr] " + result.err }
            transcript += "[exit \(result.code)]\n\n"
        }
        record(["init"])
        let a = cli.id(["log", "--score", "3", "--note", "rough day at work", "--time", "2026-05-27T09:00:00+02:00"])
        let b = cli.id([
            "log", "--valence", "0.62", "--label", "grateful", "--label", "My Own Word",
            "--association", "friends", "--time", "2026-05-27T19:30:00+02:00"
        ])
        _ = cli.id([
            "log", "--valence", "-0.1", "--kind", "daily", "--tag", "rain", "--time", "2026-05-28T21:00:00+02:00"
        ])
        record(["update", a, "--score", "4"])
        record(["labels", b, "--remove", "my own word"])
        record(["list"])
        record(["show", a])
        record(["history", a])
        record(["day", "2026-05-27", "--entries"])
        record(["trends", "--from", "2026-05-27", "--to", "2026-05-28"])
        record(["analytics", "labels"])
        record(["outbox", "--destination", "healthkit"])
        record(["diff", "1", "5"])
        record(["verify"])
        record(["delete", b])
        record(["list", "--at", "2"])
        let transcriptWithoutPaths = transcript.replacingOccurrences(of: cli.ledger, with: "<ledger>")
        let (matches, expected) = try golden("session.txt", transcriptWithoutPaths)
        #expect(matches, "golden mismatch:\n--- expected\n\(expected)\n--- actual\n\(transcriptWithoutPaths)")
    }

    @Test("The demo's guided tour")
    func demo() throws {
        let cli = CLIHarness()
        let result = cli.run(["demo"])
        #expect(result.code == 0, "\(result.err)")
        let output = result.out.replacingOccurrences(of: cli.ledger, with: "<ledger>")
        let (matches, expected) = try golden("demo.txt", output)
        #expect(matches, "golden mismatch:\n--- expected\n\(expected)\n--- actual\n\(output)")
        #expect(cli.run(["demo"]).code == 0, "a demo ledger is rebuilt")
        #expect(cli.run(["verify"]).code == 0)
        // Every command the tour prints runs when pasted, as printed (it names its ledger).
        let commands = result.out.split(separator: "\n").filter { $0.hasPrefix("$ moodledger ") }
        #expect(commands.count >= 8)
        for line in commands {
            let words = line.dropFirst("$ moodledger ".count).split(separator: " ").map(String.init)
            #expect(words.starts(with: ["--ledger", cli.ledger]), "\(line)")
            let pasted = cli.run(words, ledger: false)
            #expect(pasted.code == 0, "\(line): \(pasted.err)")
        }
    }
}

@Suite("The built binary", .serialized)
struct BinaryTests {
    func run(
        _ arguments: [String], directory: String, environment: [String: String] = [:]
    ) throws -> (Int32, String, String) {
        let outcome = try Tool.run(
            arguments, environment: environment.merging(["PATH": "/usr/bin:/bin"]) { a, _ in a },
            directory: directory)
        return (outcome.code, outcome.out, outcome.err)
    }

    @Test("demo runs in a temporary directory and leaves a verifiable ledger")
    func demoEndToEnd() throws {
        let dir = TemporaryDirectory("e2e")
        let (code, out, err) = try run(["demo"], directory: dir.path)
        #expect(code == 0, "\(err)")
        #expect(out.contains("ok: ") && out.contains("$ moodledger --ledger ./demo.ledger history"))
        #expect(FileManager.default.fileExists(atPath: dir.sub("demo.ledger/events.log")))
        let mode =
            try FileManager.default.attributesOfItem(atPath: dir.sub("demo.ledger"))[.posixPermissions] as! NSNumber
        #expect(mode.intValue == 0o700)
        let (verify, _, _) = try run(["verify", "--ledger", "demo.ledger"], directory: dir.path)
        #expect(verify == 0)
        let (stats, json, _) = try run(
            ["stats", "--json"], directory: dir.path, environment: ["MOODLEDGER_LEDGER": "demo.ledger"])
        #expect(stats == 0 && json.contains("\"entries\""))
    }

    /// A writer that holds the lock for as long as the ledger is open (as the reference server does).
    static var exclusive: Ledger.Options {
        var options = Ledger.Options()
        options.keepsWriterLock = true
        options.lockWaitMilliseconds = 0
        return options
    }

    @Test("A second concurrent writer exits 75")
    func concurrentWriter() throws {
        let dir = TemporaryDirectory("e2e")
        #expect(try run(["init", "--ledger", "l"], directory: dir.path).0 == 0)
        let holder = try Ledger.open(at: dir.sub("l"), options: Self.exclusive)
        defer { holder.close() }
        let started = Date()
        let (code, _, err) = try run(["log", "--valence", "0.2", "--ledger", "l", "--wait", "0.3"], directory: dir.path)
        #expect(code == 75, "\(err)")
        #expect(err.contains("locked by pid \(getpid())"))
        #expect(Date().timeIntervalSince(started) >= 0.3, "it waited for the lock first")
    }

    @Test("A writer waits for the lock (default up to 5 s) and goes ahead once the other writer is done")
    func writerWaits() throws {
        let dir = TemporaryDirectory("e2e")
        #expect(try run(["init", "--ledger", "l"], directory: dir.path).0 == 0)
        let holder = try Ledger.open(at: dir.sub("l"), options: Self.exclusive)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.4) { holder.close() }
        let (code, _, err) = try run(["log", "--valence", "0.2", "--ledger", "l"], directory: dir.path)
        #expect(code == 0, "\(err)")
    }
}

@Suite("Golden JSON output of every command (re-record with MOODLEDGER_RECORD_GOLDEN=1)")
struct GoldenJSONTests {
    @Test("Every --json output of a scripted session")
    func everyJSON() throws {
        let cli = CLIHarness()
        var transcript = ""
        func record(_ words: [String]) {
            let result = cli.run(words + ["--json"])
            transcript += "$ moodledger " + (words + ["--json"]).joined(separator: " ") + "\n" + result.out
            if !result.err.isEmpty { transcript += "[stderr] " + result.err }
            transcript += "[exit \(result.code)]\n\n"
        }
        cli.run(["init"])
        let a = cli.id(["log", "--score", "3", "--note", "rough day at work", "--time", "2026-05-27T09:00:00+02:00"])
        let b = cli.id([
            "log", "--valence", "0.62", "--label", "grateful", "--label", "My Own Word",
            "--association", "friends", "--tag", "tea", "--time", "2026-05-27T19:30:00+02:00"
        ])
        record(["log", "--valence", "-0.1", "--kind", "daily", "--tag", "rain", "--time", "2026-05-28T21:00:00+02:00"])
        record(["update", a, "--score", "4"])
        record(["labels", b, "--remove", "my own word"])
        record(["associations", b, "--add", "family"])
        record(["tags", b, "--add", "walk"])
        record(["list"])
        record(["list", "--tag", "walk", "--limit", "1"])
        record(["show", a])
        record(["history", a])
        record(["events", "--entry", b])
        record(["day", "2026-05-27", "--entries"])
        record(["trends", "--from", "2026-05-27", "--to", "2026-05-28"])
        record(["analytics", "labels", "--from", "2026-05-01", "--to", "2026-05-28"])
        record(["analytics", "associations", "--from", "2026-05-01", "--to", "2026-05-28"])
        record(["analytics", "tags", "--from", "2026-05-01", "--to", "2026-05-28"])
        record(["summary", "7D"])
        record(["outbox"])
        record(["diff", "1", "5"])
        record(["insights", "--from", "2026-05-01", "--to", "2026-05-28"])
        record(["remote", "set", "http://127.0.0.1:9", "--dialect", "wellness"])
        record(["remote", "show"])
        record(["sync", "status"])
        record(["sync", "--dry-run"])
        record(["sync", "explain", a])
        record(["verify"])
        record(["delete", b])
        record(["erase", b, "--yes"])
        record(["list", "--at", "2"])
        // An Idempotency-Key's ledger tag is the log's random file id (Specs/sync.md, Idempotency).
        let stable = transcript.replacingOccurrences(of: cli.dir.path, with: "<dir>")
            .replacing(/\.[0-9a-f]{16}\.(?=[0-9]+")/, with: ".<ledger tag>.")
        let (matches, expected) = try golden("json.txt", stable)
        #expect(
            matches,
            "JSON shapes changed — re-record only for an intended change:\n\(stable.prefix(3000))\nexpected:\n\(expected.prefix(1000))"
        )
    }
}

@Suite("Human output")
struct HumanFormatTests {
    @Test("A valence prints signed, to three decimals, and one that rounds to zero prints +0.000")
    func valence() {
        #expect(HumanFormat.valence(nil) == "   —  ")
        #expect(HumanFormat.valence(1) == "+1.000")
        #expect(HumanFormat.valence(-1) == "-1.000")
        #expect(HumanFormat.valence(-0.5) == "-0.500")
        #expect(HumanFormat.valence(0.05) == "+0.050")
        #expect(HumanFormat.valence(-0.0004) == "+0.000")
        #expect(HumanFormat.valence(0.2346) == "+0.235")
        #expect(HumanFormat.valence(-0.007) == "-0.007")
        #expect(HumanFormat.valence(.nan) == "   —  " && HumanFormat.valence(.infinity) == "   —  ", "never a trap")
    }
}
