import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodLedgerCLI
@testable import MoodModel

/// Zones not offsets, daily moods that merge, nothing stored that nobody chose (fixed zone names).
@Suite("Data correctness: zones, daily merges, suggestions")
struct DataCorrectnessTests {
    func entry(_ cli: CLIHarness, _ id: String, _ extra: [String] = []) throws -> JSONValue {
        try JSONParser.parse(cli.run(["show", id, "--json"] + extra).out)
    }

    @Test(
        "A DST week in New York: local times get the offset in force; instants keep their instant and land on the local day"
    )
    func newYorkWeek() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let tz = ["--tz", "America/New_York"]
        // Across the 2026-03-08 spring-forward.
        let cases: [(String, String, String)] = [
            ("2026-03-06T21:00", "2026-03-06T21:00:00-05:00", "2026-03-06"),
            ("2026-03-07T23:30", "2026-03-07T23:30:00-05:00", "2026-03-07"),
            ("2026-03-08T01:59", "2026-03-08T01:59:00-05:00", "2026-03-08"),
            ("2026-03-08T02:30", "2026-03-08T03:30:00-04:00", "2026-03-08"),  // skipped: moved forward
            ("2026-03-08T09:00", "2026-03-08T09:00:00-04:00", "2026-03-08"),
            ("2026-03-10T00:15", "2026-03-10T00:15:00-04:00", "2026-03-10"),
            ("2026-03-10T04:00:00Z", "2026-03-10T00:00:00-04:00", "2026-03-10"),
            ("2026-03-11T03:00:00Z", "2026-03-10T23:00:00-04:00", "2026-03-10"),
            ("2026-05-16T08:30", "2026-05-16T08:30:00-04:00", "2026-05-16")
        ]
        for (typed, stored, day) in cases {
            let result = cli.run(["log", "--valence", "0.2", "--time", typed, "--json"] + tz)
            #expect(result.code == 0, "\(typed): \(result.err)")
            let json = try JSONParser.parse(result.out)
            #expect(json["logged_at"] == .string(stored), "\(typed) → \(json["logged_at"]!)")
            #expect(
                LoggedAt(
                    milliseconds: ISO8601.parse(stored)!.milliseconds,
                    utcOffsetMinutes: ISO8601.parse(stored)!.utcOffsetMinutes
                ).localDate == LocalDate(day))
            if typed == "2026-03-08T02:30" { #expect(result.err.contains("does not exist"), "reported: \(result.err)") }
        }
        let march10 = try JSONParser.parse(cli.run(["day", "2026-03-10", "--json"]).out)
        #expect(march10["entry_count"] == .int(3))
        // The same instant under another zone lands on that zone's day.
        let berlin = try JSONParser.parse(
            cli.run([
                "log", "--valence", "0.1", "--time", "2025-11-20T03:00:00Z",
                "--tz", "Europe/Berlin", "--json"
            ]).out)
        #expect(berlin["logged_at"] == .string("2025-11-20T04:00:00+01:00"))
        let newYork = try JSONParser.parse(
            cli.run(["log", "--valence", "0.1", "--time", "2025-11-20T03:00:00Z", "--json"] + tz).out)
        #expect(newYork["logged_at"] == .string("2025-11-19T22:00:00-05:00"))
    }

    @Test(
        "The zone comes from $TZ by default: Lord Howe is +10:30 in July and +11:00 in January; --utc-offset fixes it")
    func lordHowe() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let env = ["TZ": "Australia/Lord_Howe"]
        let july = try JSONParser.parse(
            cli.run(["log", "--valence", "0.1", "--time", "2025-07-10T12:00", "--json"], environment: env).out)
        #expect(july["logged_at"] == .string("2025-07-10T12:00:00+10:30"))
        let january = try JSONParser.parse(
            cli.run(["log", "--valence", "0.1", "--time", "2026-01-10T12:00", "--json"], environment: env).out)
        #expect(january["logged_at"] == .string("2026-01-10T12:00:00+11:00"))
        let fixed = try JSONParser.parse(
            cli.run(
                [
                    "log", "--valence", "0.1", "--time", "2025-07-10T12:00", "--utc-offset", "+05:30",
                    "--json"
                ], environment: env
            ).out)
        #expect(fixed["logged_at"] == .string("2025-07-10T12:00:00+05:30"))
    }

    @Test("Daylio rows take the zone's offset per row; skipped and repeated local times are reported")
    func daylioZones() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let csv = """
            full_date,date,weekday,time,mood,activities,note_title,note
            2025-01-15,January 15,Wednesday,08:00,good,,,
            2025-07-15,July 15,Tuesday,08:00,good,,,
            2025-03-09,March 9,Sunday,02:30,meh,,,
            2025-11-02,November 2,Sunday,01:30,rad,,,
            """
        let path = cli.dir.sub("daylio.csv")
        try Data(csv.utf8).write(to: URL(fileURLWithPath: path))
        let result = cli.run(["import", path, "--format", "daylio", "--tz", "America/New_York"])
        #expect(result.code == 0, "\(result.err)")
        #expect(result.out.contains("does not exist") && result.out.contains("occurs twice"), "\(result.out)")
        let page = try JSONParser.parse(cli.run(["list", "--from", "2025-01-01", "--to", "2025-12-31", "--json"]).out)
        let times = Set(page["entries"]!.arrayValue!.map { $0["logged_at"]!.stringValue! })
        #expect(
            times == [
                "2025-01-15T08:00:00-05:00", "2025-07-15T08:00:00-04:00", "2025-03-09T03:30:00-04:00",
                "2025-11-02T01:30:00-04:00"
            ])
        // A corrected re-import never duplicates: the source id does not depend on the zone.
        #expect(
            cli.run(["import", path, "--format", "daylio", "--tz", "Europe/Berlin", "--json"]).out.contains(
                "\"created\": 0"))
    }

    @Test("A second daily mood merges: given fields replace, the rest is kept; nothing appended when nothing changes")
    func dailyMerge() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let time = ["--time", "2026-05-20T09:00:00+01:00"]
        let id = cli.id(
            [
                "log", "--kind", "daily", "--score", "6", "--label", "calm", "--association", "work",
                "--tag", "office", "--note", "fine"
            ] + time)
        #expect(
            cli.id([
                "log", "--kind", "daily", "--score", "4", "--label", "drained", "--time", "2026-05-20T18:00:00+01:00"
            ]) == id)
        var merged = try entry(cli, id)
        #expect(merged["score"] == .int(4) && merged["labels"] == .array([.string("drained")]))
        #expect(merged["associations"] == .array([.string("work")]) && merged["tags"] == .array([.string("office")]))
        #expect(merged["notes"] == .string("fine"))
        let events = try JSONParser.parse(cli.run(["stats", "--json"]).out)["events"]
        #expect(cli.id(["log", "--kind", "daily", "--score", "4", "--time", "2026-05-20T18:00:00+01:00"]) == id)
        #expect(
            try JSONParser.parse(cli.run(["stats", "--json"]).out)["events"] == events,
            "nothing changed, nothing appended")
        merged = try entry(cli, id)
        #expect(merged["labels"] == .array([.string("drained")]), "no suggested labels replace the chosen ones")
        #expect(
            cli.id(["log", "--kind", "daily", "--association", "family", "--time", "2026-05-20T20:00:00+01:00"]) == id,
            "a merge may give only associations")
        merged = try entry(cli, id)
        #expect(
            merged["associations"] == .array([.string("family")]) && merged["labels"] == .array([.string("drained")]))
        #expect(merged["score"] == .int(4))
    }

    @Test("Suggestions are printed, stored only with --suggest; an alias that changes a word is reported")
    func suggestions() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let plain = cli.run(["log", "--score", "5", "--association", "work"])
        #expect(plain.err.contains("suggested labels: calm, content"), "\(plain.err)")
        let stored = try entry(cli, plain.out.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(stored["labels"] == .array([]) && stored["score"] == .int(5))
        let suggested = try entry(cli, cli.id(["log", "--score", "5", "--suggest"]))
        #expect(suggested["labels"] == .array([.string("calm"), .string("content")]))
        // A different word than Apple's is kept as the user chose it, with nothing to report.
        let own = cli.run(["log", "--valence", "-0.3", "--label", "tired"])
        #expect(!own.err.contains("recorded as"), "\(own.err)")
        #expect(
            try entry(cli, own.out.trimmingCharacters(in: .whitespacesAndNewlines))["labels"]
                == .array([.string("tired")]))
    }

    @Test("day defaults to today; trends, analytics and summary to the last 30 days; dates may be today or yesterday")
    func defaults() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        cli.run(["log", "--valence", "0.4", "--label", "calm"])  // now (the harness clock)
        let today = try JSONParser.parse(cli.run(["day", "--json"]).out)
        #expect(today["entry_count"] == .int(1))
        #expect(try JSONParser.parse(cli.run(["day", "yesterday", "--json"]).out)["entry_count"] == .int(0))
        let trends = try JSONParser.parse(cli.run(["trends", "--json"]).out)
        #expect(trends["total_entries"] == .int(1) && trends["end_date"] == today["date"])
        #expect(try JSONParser.parse(cli.run(["analytics", "labels", "--json"]).out)["total_entries"] == .int(1))
        #expect(try JSONParser.parse(cli.run(["summary", "--json"]).out)["entry_count"] == .int(1))
        #expect(cli.run(["list", "--from", "yesterday", "--to", "today"]).code == 0)
    }
}

@Suite("Round trips keep every field", .serialized)
struct RoundTripTests {
    @Test("demo ledger: export json → import mood-api → export json is byte-identical; the same for csv")
    func demoRoundTrips() throws {
        let demo = CLIHarness()
        #expect(demo.run(["demo"]).code == 0)
        for (format, importFormat) in [("json", "mood-api"), ("csv", "csv")] {
            let first = demo.run(["export", "--format", format])
            #expect(first.code == 0 && first.out.count > 1000)
            let path = demo.dir.sub("export.\(format)")
            try Data(first.out.utf8).write(to: URL(fileURLWithPath: path))
            let target = CLIHarness()
            target.run(["init"])
            let imported = target.run(["import", path, "--format", importFormat])
            #expect(imported.code == 0, "\(format): \(imported.err)")
            let second = target.run(["export", "--format", format])
            #expect(second.out == first.out, "\(format): a second export is byte-identical")
            if second.out != first.out {
                let a = first.out.split(separator: "\n")
                let b = second.out.split(separator: "\n")
                if let i = (0..<min(a.count, b.count)).first(where: { a[$0] != b[$0] }) {
                    Issue.record("first difference: \(a[i]) vs \(b[i])")
                }
            }
        }
    }

    @Test("A typed score comes back typed; legacy mood_score and a missing logged_at are accepted")
    func typedScore() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let id = cli.id(["log", "--score", "6", "--label", "grateful", "--kind", "daily", "--tag", "t"])
        let exported = cli.run(["export", "--format", "json"]).out
        #expect(exported.contains("\"typed_score\": 6"))
        let target = CLIHarness()
        target.run(["init"])
        let path = cli.dir.sub("e.json")
        try Data(exported.utf8).write(to: URL(fileURLWithPath: path))
        #expect(target.run(["import", path, "--format", "mood-api"]).code == 0)
        let entry = try JSONParser.parse(target.run(["show", id, "--json"]).out)
        #expect(
            entry["score"] == .int(6) && entry["kind"] == .string("daily_mood")
                && entry["tags"] == .array([.string("t")]))
        #expect(target.run(["export", "--format", "json"]).out.contains("\"typed_score\": 6"))
        let legacy = cli.dir.sub("legacy.json")
        try Data(#"[{"mood_score": 7, "labels": ["happy"]}]"#.utf8).write(to: URL(fileURLWithPath: legacy))
        #expect(target.run(["import", legacy, "--format", "mood-api", "--json"]).out.contains("\"created\": 1"))
    }

    @Test("A corrected Daylio re-import reports differing rows and updates them only with --update-existing")
    func updateExisting() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let csv =
            "full_date,date,weekday,time,mood,activities,note_title,note\n2025-05-10,May 10,Saturday,08:00,good,,,\n"
        let path = cli.dir.sub("d.csv")
        try Data(csv.utf8).write(to: URL(fileURLWithPath: path))
        #expect(cli.run(["import", path, "--format", "daylio", "--utc-offset", "+00:00"]).code == 0)
        let again = cli.run(["import", path, "--format", "daylio", "--tz", "America/New_York"])
        #expect(again.out.contains("1 rows already imported with different values"), "\(again.out)")
        let updated = try JSONParser.parse(
            cli.run([
                "import", path, "--format", "daylio", "--tz", "America/New_York",
                "--update-existing", "--json"
            ]).out)
        #expect(updated["updated"] == .int(1) && updated["created"] == .int(0))
        let page = try JSONParser.parse(cli.run(["list", "--from", "2025-05-01", "--to", "2025-05-31", "--json"]).out)
        #expect(page["total"] == .int(1), "never duplicated")
        #expect(page["entries"]?.arrayValue?.first?["logged_at"] == .string("2025-05-10T08:00:00-04:00"))
    }
}

@Suite("Tags are first-class")
struct TagTests {
    @Test("Daylio activities that are not associations become tags: shown, filtered, analysed")
    func tags() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let csv = """
            full_date,date,weekday,time,mood,activities,note_title,note
            2025-05-10,May 10,Saturday,08:00,rad,reading | work,,Finished the book
            2025-05-11,May 11,Sunday,08:00,good,reading,,
            2025-05-12,May 12,Monday,08:00,awful,chores,,
            """
        let path = cli.dir.sub("d.csv")
        try Data(csv.utf8).write(to: URL(fileURLWithPath: path))
        #expect(cli.run(["import", path, "--format", "daylio", "--utc-offset", "+00:00"]).code == 0)
        let tagged = try JSONParser.parse(
            cli.run(["list", "--from", "2025-05-01", "--to", "2025-05-31", "--tag", "Reading", "--json"]).out)
        #expect(tagged["total"] == .int(2))
        let human = cli.run(["list", "--from", "2025-05-01", "--to", "2025-05-31"]).out
        #expect(
            human.contains("#reading") && human.contains("[work]") && human.contains("“Finished the book”"), "\(human)")
        let analytics = try JSONParser.parse(
            cli.run(["analytics", "tags", "--from", "2025-05-01", "--to", "2025-05-31", "--json"]).out)
        #expect(analytics["unique_tags"] == .int(2) && analytics["total_entries"] == .int(3))
        let top = analytics["top_tags"]!.arrayValue!
        #expect(top.first?["tag"] == .string("reading") && top.first?["count"] == .int(2))
        #expect(top.first?["average_valence"] == .double(0.75), "what I did on good days")
        #expect(
            try JSONParser.parse(
                cli.run([
                    "list", "--from", "2025-05-01", "--to", "2025-05-31", "--search", "BOOK",
                    "--json"
                ]).out)["total"] == .int(1))
    }
}
