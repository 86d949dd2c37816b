import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodLedgerCLI
@testable import MoodModel

@Suite("Argument parsing")
struct ArgumentListTests {
    @Test("--flag value, --flag=value, repeats, flags, -- and negative numbers")
    func parse() throws {
        let list = try ArgumentList(
            ["ID", "--label", "calm", "--label=happy,sad", "--json", "--valence", "-0.5", "--", "--note"],
            valueOptions: ["label", "valence"], flagOptions: ["json"])
        #expect(list.positionals == ["ID", "--note"])
        #expect(list.list("label") == ["calm", "happy", "sad"])
        #expect(list.value("valence") == "-0.5")
        #expect(list.has("json"))
        #expect(throws: UsageError.self) { try ArgumentList(["--nope"], valueOptions: [], flagOptions: []) }
        #expect(throws: UsageError.self) { try ArgumentList(["--label"], valueOptions: ["label"], flagOptions: []) }
        #expect(throws: UsageError.self) { try ArgumentList(["--json=1"], valueOptions: [], flagOptions: ["json"]) }
        #expect(throws: UsageError.self) { try ArgumentList(["-x"], valueOptions: [], flagOptions: []) }
    }
}

@Suite("Commands in-process")
struct CommandLineTests {
    @Test("init, log, show, update, labels, associations, tags, delete, list, history, events, with JSON shapes")
    func lifecycle() throws {
        let cli = CLIHarness()
        #expect(cli.run(["list"]).code == 66, "no ledger yet")
        #expect(cli.run(["init"]).code == 0)
        #expect(cli.run(["init"]).code == 73, "already exists")
        let id = cli.id([
            "log", "--score", "8", "--association", "family", "--note", "dinner with my sister",
            "--time", "2026-05-28T19:30:00+01:00", "--suggest"
        ])
        #expect(EntryID(id) != nil, "\(id)")
        let shown = try JSONParser.parse(cli.run(["show", id, "--json"]).out)
        #expect(shown["score"] == .int(8) && shown["labels"] == .array([.string("happy"), .string("confident")]))
        #expect(shown["valence_classification"] == .string("pleasant"))
        let keys = [
            "id", "logged_at", "utc_offset_minutes", "kind", "valence", "valence_classification", "score",
            "labels", "associations", "tags", "notes", "source", "source_id", "created_at", "updated_at"
        ]
        if case .object(let pairs) = shown { #expect(pairs.map(\.0) == keys) }
        #expect(cli.run(["update", id, "--valence", "-0.25", "--clear-note"]).code == 0)
        #expect(cli.run(["labels", id, "--add", "tired"]).code == 0)
        #expect(cli.run(["associations", id, "--set", "work,Current Events"]).code == 0)
        #expect(cli.run(["tags", id, "--add", "walk"]).code == 0)
        let after = try JSONParser.parse(cli.run(["show", id, "--json"]).out)
        #expect(after["valence"] == .double(-0.25) && after["notes"] == .null)
        #expect(after["labels"] == .array([.string("happy"), .string("confident"), .string("tired")]))
        #expect(after["associations"] == .array([.string("work"), .string("current_events")]))
        let page = try JSONParser.parse(cli.run(["list", "--json", "--label", "tired"]).out)
        #expect(page["total"] == .int(1) && page["has_more"] == .bool(false) && page["limit"] == .int(30))
        let history = try JSONParser.parse(cli.run(["history", id, "--json"]).out)
        #expect(history["events"]?.arrayValue?.count == 5)
        let lines = cli.run(["events", "--json"]).out.split(separator: "\n")
        #expect(lines.count == 5)
        let first = try JSONParser.parse(String(lines[0]))
        if case .object(let pairs) = first {
            #expect(
                pairs.map(\.0) == ["seq", "recorded_at", "type", "entry_id", "command_id", "offset", "size", "data"])
        }
        #expect(first["offset"] == .int(48))
        #expect(cli.run(["delete", id]).code == 0)
        #expect(cli.run(["show", id]).code == 66)
        #expect(cli.run(["show", id, "--at", "1"]).code == 0, "time travel still shows it")
        #expect(cli.run(["delete", id]).code == 66)
    }

    @Test(
        "Every exit code",
        arguments: [
            (["frobnicate"], 64), (["log", "--valence"], 64), (["log", "--valence", "2"], 65),
            (["log", "--score", "x"], 65),
            (["log"], 65), (["show", "not-a-uuid"], 64), (["show", "6f1c2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b"], 66),
            (["trends", "--from", "someday"], 65), (["log", "--valence", "0.1", "--tz", "Mars/Olympus"], 65),
            (["list", "--limit", "500"], 65), (["list", "--from", "2026-13-01"], 65),
            (["repair"], 64), (["verify"], 0), (["diff", "1"], 64), (["list", "--at", "yesterday"], 64)
        ] as [([String], Int32)])
    func exitCodes(words: [String], code: Int32) throws {
        let cli = CLIHarness()
        cli.run(["init"])
        cli.run(["log", "--valence", "0.3"])
        let result = cli.run(words)
        #expect(result.code == code, "\(words): \(result.err)")
        if code != 0 {
            #expect(result.err.hasPrefix("moodledger") && result.err.split(separator: "\n").count == 1, "\(result.err)")
            #expect(result.out.isEmpty)
        }
    }

    @Test("Validation errors name the field and never echo the notes; nothing is appended")
    func notesNeverEchoed() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let secret = "my very private diary " + String(repeating: "z", count: 500)
        let result = cli.run(["log", "--valence", "0.1", "--note", secret])
        #expect(result.code == 65)
        #expect(result.err.contains("notes") && !result.err.contains("private"))
        #expect(try JSONParser.parse(cli.run(["stats", "--json"]).out)["events"] == .int(0))
    }

    @Test("verify exits 1 on damage, repair --salvage mends it, a torn tail is a notice with exit 0")
    func verifyAndRepair() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        for v in ["0.1", "0.2", "0.3", "0.4"] { cli.run(["log", "--valence", v]) }
        let log = cli.ledger + "/events.log"
        var bytes = Bytes.read(log)
        bytes[100] ^= 0x01
        Bytes.write(bytes, to: log)
        let verify = cli.run(["verify", "--json"])
        #expect(verify.code == 1)
        let report = try JSONParser.parse(verify.out)
        #expect(report["ok"] == .bool(false) && report["problems"]?.arrayValue?.first?["seq"] == .int(1))
        // A warm open checks only the tail after its snapshot; reading the damaged record refuses with its offset.
        let events = cli.run(["events"])
        #expect(
            events.code == 74 && events.err.contains("repair --salvage") && events.err.contains("offset 48"),
            "\(events.err)")
        try FileManager.default.removeItem(atPath: cli.ledger + "/snapshots")
        let list = cli.run(["list"])
        #expect(list.code == 74 && list.err.contains("seq 1"), "\(list.err)")
        let repair = cli.run(["repair", "--salvage"])
        #expect(repair.code == 0 && repair.out.contains("broken-"))
        #expect(cli.run(["verify"]).code == 0)
        #expect(try JSONParser.parse(cli.run(["list", "--json"]).out)["total"] == .int(3))
        // A torn tail: a notice on stderr, exit 0.
        Bytes.write(Bytes.read(log) + [1, 2, 3], to: log)
        let torn = cli.run(["log", "--valence", "0.5"])
        #expect(torn.code == 0 && torn.err.contains("torn tail"))
    }

    @Test("repair --truncate keeps the records before the damage and a copy of the file")
    func repairTruncate() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        for v in ["0.1", "0.2", "0.3", "0.4"] { cli.run(["log", "--valence", v]) }
        let log = cli.ledger + "/events.log"
        let events = try cli.run(["events", "--json"]).out.split(separator: "\n").map {
            try JSONParser.parse(String($0))
        }
        let third = events[2]["offset"]!.intValue!
        var bytes = Bytes.read(log)
        bytes[third + 40] ^= 0xFF
        Bytes.write(bytes, to: log)
        let repair = try JSONParser.parse(cli.run(["repair", "--truncate", "--json"]).out)
        #expect(repair["kept_records"] == .int(2) && repair["lost_seqs"] == .array([.array([.int(3), .int(4)])]))
        #expect(Bytes.read(repair["backup"]!.stringValue!) == bytes)
        #expect(try JSONParser.parse(cli.run(["list", "--json"]).out)["total"] == .int(2))
        #expect(cli.run(["repair", "--truncate"]).out.contains("nothing to repair"))
    }

    @Test("A second writer gets exit 75")
    func lockedLedger() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        var options = cli.options
        options.lockWaitMilliseconds = 0
        options.keepsWriterLock = true  // a writer that holds the ledger while open (as a server does)
        let holder = try Ledger.open(at: cli.ledger, options: options)
        defer { holder.close() }
        let capture = CapturedOutput()
        var fast = cli.options
        fast.lockWaitMilliseconds = 0
        let code = CLI.run(
            ["log", "--valence", "0.1", "--ledger", cli.ledger], environment: [:],
            console: capture.console(), options: fast)
        #expect(code == 75 && capture.err.contains("locked"))
        #expect(cli.run(["list"]).code == 0, "readers are not blocked")
    }

    @Test("Reports: day, trends, analytics, summary, outbox, diff, snapshot, rebuild, stats")
    func reports() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        var ids: [String] = []
        for (i, v) in ["0.5", "-0.2", "0.8", "-0.6", "0.1"].enumerated() {
            ids.append(
                cli.id([
                    "log", "--valence", v, "--label", i % 2 == 0 ? "happy" : "stressed",
                    "--association", i % 2 == 0 ? "friends" : "work", "--time", "2026-05-2\(i + 1)T12:00:00+01:00"
                ]))
        }
        let day = try JSONParser.parse(cli.run(["day", "2026-05-21", "--json"]).out)
        #expect(day["entry_count"] == .int(1) && day["average_valence"] == .double(0.5))
        let trends = try JSONParser.parse(
            cli.run(["trends", "--from", "2026-05-21", "--to", "2026-05-25", "--json"]).out)
        #expect(trends["total_entries"] == .int(5) && trends["valence_statistics"]?["median"] == .double(0.1))
        let associations = try JSONParser.parse(
            cli.run(["analytics", "associations", "--from", "2026-05-01", "--to", "2026-05-31", "--json"]).out)
        #expect(associations["top_associations"]?.arrayValue?.first?["valence_impact"] == .string("positive"))
        #expect(
            associations["unique_associations"] == .int(2) && associations["period"]?["from"] == .string("2026-05-01"))
        #expect(trends["start_date"] == .string("2026-05-21") && trends["end_date"] == .string("2026-05-25"))
        #expect(trends["daily_data"]?.arrayValue?.first?["top_labels"]?.arrayValue?.first?["label"] == .string("happy"))
        let summary = try JSONParser.parse(cli.run(["summary", "7D", "--today", "2026-05-25", "--json"]).out)
        #expect(summary["highest_score"] != nil && summary["lowest_score"] != nil && summary["average_score"] != nil)
        #expect(summary["average_score"] != .null)
        let outbox = try JSONParser.parse(cli.run(["outbox", "--json"]).out)
        #expect(outbox["items"]?.arrayValue?.count == 10)
        let diff = try JSONParser.parse(cli.run(["diff", "2", "5", "--json"]).out)
        #expect(diff["added"]?.arrayValue?.count == 3)
        #expect(cli.run(["snapshot"]).code == 0)
        #expect(cli.run(["rebuild"]).code == 0)
        let stats = try JSONParser.parse(cli.run(["stats", "--json"]).out)
        #expect(stats["entries"] == .int(5) && stats["snapshot_files"]?.arrayValue?.count == 1)
        #expect(stats["log_files"]?.arrayValue?.first?.stringValue?.hasPrefix("/") == true)
        #expect(cli.run(["--help"]).code == 0 && cli.run(["log", "--help"]).out.contains("usage: moodledger log"))
    }
}

@Suite("One entry resolver, exact words")
struct ResolverAndWordsTests {
    @Test("Every id-taking command resolves a full id, a 4+ digit prefix and last alike; with --at, as of that point")
    func resolver() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let first = cli.id(["log", "--valence", "0.2", "--label", "calm", "--note", "first"])
        let second = cli.id(["log", "--valence", "-0.2", "--label", "sad"])
        let prefix = String(first.prefix(6))
        #expect(cli.run(["events", "--entry", prefix]).out.contains(first))
        #expect(cli.run(["events", "--entry", "last", "--json"]).out.contains(second))
        #expect(cli.run(["show", "last", "--at", "1"]).out.contains(first), "last as of seq 1 is the first entry")
        cli.run(["delete", first])
        #expect(cli.run(["show", prefix, "--at", "1"]).code == 0, "a prefix resolves against the state at the point")
        #expect(cli.run(["show", prefix]).code != 0, "and not now: the entry is deleted")
        #expect(cli.run(["history", prefix]).code == 0)
    }

    @Test(
        "A note set after a clear is 'set'; numeric options state their rule; conflicting or missing inputs are named")
    func words() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let id = cli.id(["log", "--valence", "0.2", "--label", "calm", "--note", "first"])
        cli.run(["update", id, "--clear-note"])
        cli.run(["update", id, "--note", "second thoughts"])
        let history = cli.run(["history", id]).out
        #expect(history.contains("notes cleared (was \"first\")") && history.contains("notes set: \"second thoughts\""))
        #expect(!history.components(separatedBy: "created:").dropFirst(2).contains { _ in true }, "one creation only")
        #expect(cli.run(["log", "--score", "7.5"]).err.contains("from 1 to 10"))
        #expect(cli.run(["list", "--limit", "x"]).err.contains("from 1 to 100"))
        let both = cli.run(["log", "--valence", "0.1", "--tz", "Europe/Berlin", "--utc-offset", "+05:30"])
        #expect(both.code != 0 && both.err.contains("--tz") && both.err.contains("--utc-offset"))
        let report = cli.run(["report", "--out", "/nonexistent/dir/r.html"])
        #expect(report.err.contains("the directory /nonexistent/dir does not exist"), "\(report.err)")
        let missing = cli.run(["import", cli.dir.sub("nothere.csv"), "--format", "csv"])
        #expect(missing.err.contains("nothere.csv") && missing.err.contains("No such file"), "\(missing.err)")
    }
}
