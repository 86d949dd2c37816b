import Foundation
import MoodLedger
import TestSupport
import Testing

@testable import MoodLedgerCLI

/// A command that exits non-zero has changed nothing: the log's bytes are the same before and after.
@Suite("A failed command changes nothing")
struct FailedCommandTests {
    /// The demo ledger: backend copies (with no backend configured), HealthKit entries, deletes and failed syncs.
    static func demo() throws -> (CLIHarness, healthKit: String, synced: String, live: String) {
        let cli = CLIHarness()
        #expect(cli.run(["demo"]).code == 0)
        let fromHealthKit = try JSONParser.parse(
            cli.run(["list", "--source", "healthkit", "--limit", "1", "--json"]).out)
        let healthKit = try #require(fromHealthKit["entries"]?.arrayValue?.first?["id"]?.stringValue)
        let outbox = try JSONParser.parse(cli.run(["outbox", "--all", "--destination", "backend", "--json"]).out)
        let items = try #require(outbox["items"]?.arrayValue)
        let healthKitIDs = Set(
            try JSONParser.parse(cli.run(["list", "--source", "healthkit", "--all", "--json"]).out)["entries"]?
                .arrayValue?.compactMap { $0["id"]?.stringValue } ?? [])
        let synced = try #require(
            items.first {
                $0["status"] == .string("synced") && !healthKitIDs.contains($0["entry_id"]?.stringValue ?? "")
            }?["entry_id"]?.stringValue)
        let live = cli.id(["log", "--score", "6", "--note", "private words"])
        return (cli, healthKit, synced, live)
    }

    static func bytes(_ cli: CLIHarness) -> [UInt8] { Bytes.read(cli.ledger + "/events.log") }

    @Test(
        "Every documented failure of every writing command: the exit code says so and the log is byte for byte the same"
    )
    func everyFailure() throws {
        let (cli, healthKit, synced, live) = try Self.demo()
        let bad = cli.dir.sub("bad.json")
        try #"{"entries": [{"valence": 0.2}, {"valence": 7}]}"#.write(toFile: bad, atomically: true, encoding: .utf8)
        let daylio = cli.dir.sub("bad.csv")
        try
            "full_date,date,weekday,time,mood,activities,note\n2025-01-01,January 1,Wednesday,10:00,rad,,ok\nnot a date,x,y,z,rad,,\n"
            .write(toFile: daylio, atomically: true, encoding: .utf8)
        let cases: [([String], Int32)] = [
            (["log", "--score", "11"], ExitCode.invalidInput),
            (["log", "--valence", "0.5", "--score", "3"], ExitCode.invalidInput),
            (["log", "--valence", "2"], ExitCode.invalidInput),
            (["log", "--score", "5", "--note", String(repeating: "n", count: 501)], ExitCode.invalidInput),
            (["log", "--score", "5", "--time", "2999-01-01"], ExitCode.invalidInput),
            (["log", "--score", "5", "--tz", "Mars/Olympus"], ExitCode.invalidInput),
            (["log", "--bogus"], ExitCode.usage),
            (["log", "--score", "99999999999999999999999"], ExitCode.invalidInput),
            (["update", live, "--score", "0"], ExitCode.invalidInput),
            (["update", "ffffffff", "--score", "5"], ExitCode.noInput),
            (["update", healthKit, "--score", "5"], ExitCode.invalidInput),
            (["labels", live, "--add", String(repeating: "w", count: 51)], ExitCode.invalidInput),
            (["labels", live], ExitCode.usage),
            (["tags", healthKit, "--add", "x"], ExitCode.invalidInput),
            (["delete", healthKit], ExitCode.invalidInput),
            (["delete", "ffffffff"], ExitCode.noInput),
            (["erase", synced, "--yes"], ExitCode.unavailable),
            (["erase", "--all", "--yes"], ExitCode.unavailable),
            (["erase", "--all", "--before", "2025-07-01", "--yes"], ExitCode.unavailable),
            (["erase", live], ExitCode.usage),
            (["erase", "ffffffff", "--yes"], ExitCode.noInput),
            (["import", cli.dir.sub("missing.csv"), "--format", "daylio"], ExitCode.noInput),
            (["import", bad, "--format", "mood-api"], ExitCode.invalidInput),
            (["import", daylio, "--format", "daylio"], ExitCode.invalidInput),
            (["import", bad, "--format", "nonsense"], ExitCode.usage),
            (["sync"], ExitCode.config),
            (["remote", "set", "ftp://example", "--dialect", "mood-api"], ExitCode.invalidInput),
            (["remote", "set", "http://127.0.0.1:1", "--dialect", "klingon"], ExitCode.usage),
            (["init"], ExitCode.cannotCreate),
            (["repair"], ExitCode.usage),
            (["rebuild", "--bogus"], ExitCode.usage),
            (["snapshot", "extra"], ExitCode.usage)
        ]
        for (words, code) in cases {
            let before = Self.bytes(cli)
            let result = cli.run(words)
            #expect(result.code == code, "\(words.joined(separator: " ")): \(result.code) \(result.err)")
            let unchanged = Self.bytes(cli) == before
            #expect(unchanged, "\(words.joined(separator: " ")) changed the log")
            #expect(!result.err.contains("private words"), "\(words.first!) echoed the notes")
        }
        // Locked: another writer holds the ledger (one that keeps the writer lock while open, as a server does).
        var options = Ledger.Options()
        options.lockWaitMilliseconds = 0
        options.keepsWriterLock = true
        let holder = try Ledger.open(at: cli.ledger, options: options)
        let before = Self.bytes(cli)
        let result = cli.run(["log", "--score", "5", "--wait", "0"])
        holder.close()
        let unchanged = Self.bytes(cli) == before
        #expect(result.code == ExitCode.locked && unchanged)
    }

    @Test(
        "erase --all leaves HealthKit entries and counts them (--include-healthkit reaches them); erase --local-only of an entry with a backend copy"
    )
    func eraseAll() throws {
        let (cli, healthKit, synced, _) = try Self.demo()
        let all = try JSONParser.parse(cli.run(["erase", "--all", "--yes", "--local-only", "--json"]).out)
        let skipped = try #require(all["skipped_healthkit"]?.intValue)
        #expect(skipped > 0)
        #expect(
            try JSONParser.parse(cli.run(["list", "--json", "--limit", "100"]).out)["total"] == .int(Int64(skipped)))
        #expect(cli.run(["show", healthKit]).code == 0)
        #expect(cli.run(["history", synced]).out.contains("erased"))
        #expect(cli.run(["verify"]).code == 0)
        let rest = cli.run(["erase", "--all", "--include-healthkit", "--yes", "--local-only"])
        #expect(rest.code == 0 && rest.out.contains("erased every entry (\(skipped) current)"), "\(rest.err)")
        #expect(cli.run(["erase", "--all", "--yes"]).out.contains("nothing to erase"))
    }

    @Test(
        "Deleted and erased entries resolve by id prefix for history, erase and sync explain; current-entry commands do not reach them"
    )
    func pastPrefixes() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let id = cli.id(["log", "--score", "4", "--label", "calm"])
        let prefix = String(id.prefix(8))
        #expect(cli.run(["delete", prefix]).code == 0)
        #expect(cli.run(["history", prefix]).out.contains("mood.deleted"))
        #expect(cli.run(["sync", "explain", prefix]).code == 0)
        #expect(cli.run(["show", prefix]).code == ExitCode.noInput)
        #expect(cli.run(["update", prefix, "--score", "5"]).code == ExitCode.noInput)
        #expect(cli.run(["erase", prefix, "--yes"]).code == 0)
        #expect(cli.run(["history", prefix]).out.contains("erased"))
        #expect(cli.run(["erase", prefix, "--yes"]).code == ExitCode.noInput)
    }
}
