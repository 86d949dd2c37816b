import EventLog
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import MoodInterchange
@testable import MoodLedger
@testable import MoodLedgerCLI
@testable import MoodModel

func fixture(_ name: String) -> String { Repository.root + "/Tests/MoodLedgerCLITests/Fixtures/" + name }

@Suite("Imports, exports and the HealthKit port")
struct ImportExportTests {
    static let kijeMoods =
        "Good=5,Good [-]=5,Medium=4,Medium [-]=4,Not so good=3,Not so good [-]=3,Bad=2,Bad [-]=2,Awful=1,Awful [-]=1"

    func entries(_ cli: CLIHarness) throws -> [JSONValue] {
        try JSONParser.parse(cli.run(["export", "--format", "json"]).out)["entries"]!.arrayValue!
    }

    @Test(
        "The real Daylio exports: every row imported, values checked; re-import appends nothing",
        arguments: [
            ("kije-daylio-analyze.csv", 1158), ("staticf0x-daylio-parser.csv", 32),
            ("michaelcurrin-daylio-csv-parser.csv", 3)
        ])
    func realDaylio(file: String, rows: Int) throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let args = [
            "import", fixture("daylio/" + file), "--format", "daylio", "--utc-offset", "+02:00", "--mood-map",
            Self.kijeMoods, "--json"
        ]
        let first = cli.run(args)
        #expect(first.code == 0, "\(first.err)")
        let report = try JSONParser.parse(first.out)
        #expect(
            report["rows"] == .int(Int64(rows + (file.hasPrefix("kije") ? 1 : 0)))
                || report["rows"] == .int(Int64(rows)))
        let imported = try entries(cli)
        #expect(imported.count == report["rows"]!.intValue!, "every row becomes an entry")
        let seq = try JSONParser.parse(cli.run(["stats", "--json"]).out)["last_seq"]
        let again = try JSONParser.parse(cli.run(args).out)
        #expect(again["created"] == .int(0) && again["appended_events"] == .int(0))
        #expect(try JSONParser.parse(cli.run(["stats", "--json"]).out)["last_seq"] == seq)
        switch file {
        case "staticf0x-daylio-parser.csv":
            // 2020-05-30, 6:50 pm, rad, "friends | gaming | programming | nap", note "Awesome"
            let row = imported.first { $0["logged_at"] == .string("2020-05-30T18:50:00+02:00") }!
            #expect(row["valence"] == .double(1.0) && row["score"] == .int(10))
            #expect(row["associations"] == .array([.string("friends")]))
            #expect(row["tags"] == .array([.string("gaming"), .string("programming"), .string("nap")]))
            #expect(row["notes"] == .string("Awesome") && row["source"] == .string("import"))
            #expect(row["source_id"] == .string("daylio:2020-05-30T18:50#0"))
            #expect(imported.contains { $0["logged_at"] == .string("2020-05-30T01:23:00+02:00") }, "1:23 am")
        case "michaelcurrin-daylio-csv-parser.csv":
            // "sad " with a trailing space is level 2; activities keep no stray spaces.
            let row = imported.first { $0["logged_at"] == .string("2021-09-28T22:00:00+02:00") }!
            #expect(row["valence"] == .double(-0.5))
            #expect(
                row["tags"]?.arrayValue?.first == .string("clean")
                    && row["tags"]?.arrayValue?.contains(.string("stomachache")) == true)
        default:
            let row = imported.first { $0["logged_at"] == .string("2023-09-13T15:26:00+02:00") }!
            #expect(row["valence"] == .double(0.5) && row["tags"] == .array([.string("working (private)")]))
        }
    }

    @Test("--dry-run reports what an import would do and appends nothing")
    func dryRun() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let dry = try JSONParser.parse(
            cli.run([
                "import", fixture("daylio/staticf0x-daylio-parser.csv"), "--format", "daylio",
                "--dry-run", "--json"
            ]).out)
        #expect(dry["dry_run"] == .bool(true) && dry["created"] == .int(32) && dry["appended_events"] == .int(0))
        #expect(try JSONParser.parse(cli.run(["stats", "--json"]).out)["events"] == .int(0))
    }

    @Test("Every Daylio header version and quirk")
    func synthetic() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        for file in ["synthetic-v1-year-date.csv", "synthetic-v2-no-title.csv", "synthetic-v4-scales.csv"] {
            let result = cli.run(["import", fixture("daylio/" + file), "--format", "daylio", "--utc-offset", "-05:00"])
            #expect(result.code == 0, "\(file): \(result.err)")
        }
        let all = try entries(cli)
        #expect(all.count == 6)
        let nye = all.first { $0["logged_at"] == .string("2019-12-31T23:58:00-05:00") }!
        #expect(nye["notes"] == .string("Happy new year\nsee you in 2020 🎉"))
        // A different word is kept as itself: Daylio's "sport" is not Apple's fitness (it stays a tag, as "party").
        #expect(
            nye["associations"] == .array([.string("friends")])
                && nye["tags"] == .array([.string("party"), .string("sport")]), "\(nye)")
        let quoted = all.first { $0["logged_at"] == .string("2019-12-30T08:05:00-05:00") }!
        #expect(quoted["notes"] == .string("He said \"no\" & left") && quoted["valence"] == .double(-1.0))
        #expect(all.contains { $0["logged_at"] == .string("2019-01-01T00:00:00-05:00") }, "12:00 am is midnight")
        let hebrew = all.first { $0["notes"] == .string("שלום עולם") }!
        #expect(hebrew["associations"] == .array([.string("family")]), "\(hebrew)")
        #expect(hebrew["tags"]?.arrayValue?.contains(.string("Social")) == true, "Social is kept as itself: \(hebrew)")
        #expect(
            all.filter { $0["logged_at"] == .string("2022-03-01T07:00:00-05:00") }.count == 2, "two rows, one minute")
        let leap = all.first { $0["logged_at"] == .string("2024-02-29T21:15:00-05:00") }!
        #expect(leap["notes"] == .string("Leap day\nLong day.\nTired but ok"))
    }

    @Test(
        "Malformed files exit 65, name the line and field, and append nothing",
        arguments: [
            (
                "bad-fields.csv",
                "full_date,date,weekday,time,mood,activities,note_title,note\n2024-01-01,1 Jan,Mon,10:00,rad,work,\n",
                "line 2"
            ),
            (
                "unterminated.csv",
                "full_date,date,weekday,time,mood,activities,note_title,note\n2024-01-01,1 Jan,Mon,10:00,rad,\"work,,\n",
                "line 2"
            ),
            (
                "impossible-date.csv",
                "full_date,date,weekday,time,mood,activities,note_title,note\n2024-02-30,30 Feb,Fri,10:00,rad,,,\n",
                "full_date"
            ),
            (
                "bad-time.csv",
                "full_date,date,weekday,time,mood,activities,note_title,note\n2024-01-01,1 Jan,Mon,25:00,rad,,,\n",
                "time"
            ),
            (
                "unmapped.csv",
                "full_date,date,weekday,time,mood,activities,note_title,note\n2024-01-01,1 Jan,Mon,10:00,Fabulous,,,\n2024-01-02,2 Jan,Tue,10:00,Grim,,,\n",
                "\"Fabulous\", \"Grim\""
            ),
            (
                "long-note.csv",
                "full_date,date,weekday,time,mood,activities,note_title,note\n2024-01-01,1 Jan,Mon,10:00,rad,,,"
                    + String(repeating: "x", count: 501) + "\n", "--truncate-notes"
            )
        ])
    func malformedDaylio(name: String, content: String, mention: String) throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let path = cli.dir.sub(name)
        try content.write(toFile: path, atomically: true, encoding: .utf8)
        let result = cli.run(["import", path, "--format", "daylio"])
        #expect(result.code == 65, "\(result.err)")
        #expect(result.err.contains(mention) && result.err.contains("nothing was imported"), "\(result.err)")
        #expect(!result.err.contains("xxxxxxxx"), "notes are never echoed")
        #expect(try JSONParser.parse(cli.run(["stats", "--json"]).out)["events"] == .int(0))
        if name == "long-note.csv" {
            let cut = cli.run(["import", path, "--format", "daylio", "--truncate-notes"])
            #expect(cut.code == 0 && cut.out.contains("line 2: notes cut to 500 characters"))
        }
    }

    @Test("JSON formats: progress, legacy-mood, mood-api, healthkit")
    func jsonFormats() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        // Without --suggest nothing is stored that the file did not hold.
        let plain = CLIHarness()
        plain.run(["init"])
        #expect(plain.run(["import", fixture("json/progress.json"), "--format", "progress"]).code == 0)
        for entry in try entries(plain) {
            #expect(entry["labels"] == .array([]) && entry["associations"] == .array([]))
        }
        for format in ["progress", "legacy-mood", "mood-api", "healthkit"] {
            let result = cli.run(["import", fixture("json/\(format).json"), "--format", format, "--suggest"])
            #expect(result.code == 0, "\(format): \(result.err)")
            #expect(
                cli.run(["import", fixture("json/\(format).json"), "--format", format, "--json"]).out.contains(
                    "\"created\": 0"))
        }
        let all = try entries(cli)
        #expect(all.count == 8)
        let run = all.first { $0["notes"] == .string("Morning run with a friend") }!
        #expect(run["score"] == .int(8) && run["labels"] == .array([.string("happy"), .string("confident")]))
        #expect(run["associations"] == .array([.string("friends"), .string("fitness")]))
        let lonely = all.first { $0["notes"] == .string("Feeling lonely") }!
        #expect(lonely["labels"] == .array([.string("sad"), .string("hopeless"), .string("lonely")]))
        let dinner = all.first { $0["notes"] == .string("Family dinner") }!
        #expect(dinner["labels"] == .array([.string("happy"), .string("energetic")]) && dinner["score"] == .int(7))
        let hk = all.first { $0["id"] == .string("5a3f0c2e-1b7d-4c8e-9f00-aa11bb22cc33") }!
        #expect(
            hk["source"] == .string("healthkit")
                && hk["source_id"] == .string("HK-MOOD-5a3f0c2e-1b7d-4c8e-9f00-aa11bb22cc33"))
        #expect(
            hk["labels"] == .array([.string("happy"), .string("grateful")])
                && hk["associations"] == .array([.string("partner")]))
        #expect(hk["valence_classification"] == .string("very_pleasant"), "recomputed, not the file's 1")
        let api = all.first { $0["id"] == .string("0b5d6c1e-9a47-4f0e-8f6e-2f7a3c1d9e10") }!
        #expect(
            api["kind"] == .string("daily_mood")
                && api["labels"] == .array([.string("stressed"), .string("my own word")]))
    }

    @Test(
        "Malformed JSON and wrong types exit 65 and append nothing",
        arguments: [
            ("{\"data\": [", "progress", "bad JSON"),
            (
                "[{\"type\": \"mood_score\", \"quantity\": \"eight\", \"logged_at\": \"2024-01-01T10:00:00Z\"}]",
                "progress", "quantity"
            ),
            (
                "[{\"mood_score\": 7, \"emotions\": \"happy\", \"logged_at\": \"2024-01-01T10:00:00Z\"}]",
                "legacy-mood", "emotions"
            ),
            ("[{\"mood_score\": 11, \"logged_at\": \"2024-01-01T10:00:00Z\"}]", "legacy-mood", "mood_score"),
            ("{\"entries\": [{\"valence\": 3, \"logged_at\": \"2024-01-01T10:00:00Z\"}]}", "mood-api", "valence"),
            ("{\"entries\": [{\"valence\": 0.1, \"logged_at\": \"2024-02-30T10:00:00Z\"}]}", "mood-api", "logged_at"),
            ("{\"samples\": [{\"uuid\": \"nope\", \"valence\": 0.1}]}", "healthkit", "uuid"),
            ("42", "mood-api", "expected an object")
        ])
    func malformedJSON(content: String, format: String, mention: String) throws {
        let cli = CLIHarness()
        cli.run(["init"])
        cli.run(["log", "--valence", "0.1"])
        let path = cli.dir.sub("bad.json")
        try content.write(toFile: path, atomically: true, encoding: .utf8)
        let result = cli.run(["import", path, "--format", format])
        #expect(result.code == 65 && result.err.contains(mention), "\(result.err)")
        #expect(try JSONParser.parse(cli.run(["stats", "--json"]).out)["events"] == .int(1))
    }

    @Test(
        "export json → import mood-api and export healthkit → import healthkit give the same entries; csv is RFC 4180")
    func roundTrips() throws {
        let source = CLIHarness()
        source.run(["init"])
        source.run(["import", fixture("daylio/staticf0x-daylio-parser.csv"), "--format", "daylio"])
        source.run([
            "log", "--score", "9", "--label", "my own word", "--note", "comma, \"quote\"\nnewline", "--association",
            "family"
        ])
        let json = source.run(["export", "--format", "json"]).out
        let hk = source.run(["export", "--format", "healthkit"]).out
        #expect(try JSONParser.parse(hk)["skipped_custom_words"] == .int(1))
        let target = CLIHarness()
        target.run(["init"])
        try json.write(toFile: target.dir.sub("e.json"), atomically: true, encoding: .utf8)
        #expect(target.run(["import", target.dir.sub("e.json"), "--format", "mood-api"]).code == 0)
        // Every export format's name imports back: `json` is mood-api (nothing new: the same entries are there).
        let again = target.run(["import", target.dir.sub("e.json"), "--format", "json", "--json"])
        #expect(again.code == 0 && again.out.contains("\"created\": 0"), "\(again.err)")
        let strip: (JSONValue) -> JSONValue = { entry in
            guard case .object(let pairs) = entry else { return entry }
            return .object(pairs.filter { !["created_at", "updated_at"].contains($0.0) })
        }
        #expect(try entries(source).map(strip) == entries(target).map(strip))

        let hkTarget = CLIHarness()
        hkTarget.run(["init"])
        try hk.write(toFile: hkTarget.dir.sub("h.json"), atomically: true, encoding: .utf8)
        #expect(hkTarget.run(["import", hkTarget.dir.sub("h.json"), "--format", "healthkit"]).code == 0)
        let back = try entries(hkTarget)
        let original = try entries(source)
        #expect(back.count == original.count)
        for (a, b) in zip(original, back) {
            for key in ["id", "logged_at", "kind", "valence", "associations"] { #expect(a[key] == b[key], "\(key)") }
            #expect(b["labels"] == .array(a["labels"]!.arrayValue!.filter { $0 != .string("my own word") }))
        }

        let csv = source.run(["export", "--format", "csv"]).out
        let records = try CSVReader.records(csv)
        #expect(records.count == original.count + 1 && records.allSatisfy { $0.fields.count == 14 })
        #expect(records.last!.fields[11] == "comma, \"quote\"\nnewline" && records.last!.fields[8] == "my own word")
    }

    @Test("HealthKit port: push, edit = replace (no duplicate), denied authorization retried, pull only the unknown")
    func healthKitPort() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let store = cli.dir.sub("health.json")
        let a = cli.id(["log", "--valence", "0.5", "--label", "calm", "--label", "custom word"])
        _ = cli.id(["log", "--valence", "-0.5", "--source", "healthkit", "--source-id", "HK-MOOD-x"])
        var push = try JSONParser.parse(cli.run(["healthkit", "push", "--store", store, "--json"]).out)
        #expect(
            push["saved"] == .int(1) && push["skipped_custom_words"] == .int(1), "the HealthKit entry is not sent back")
        cli.run(["update", a, "--valence", "0.7"])
        push = try JSONParser.parse(cli.run(["healthkit", "push", "--store", store, "--json"]).out)
        #expect(push["replaced"] == .int(1))
        let samples = FileHealthStore(path: store)
        #expect(try samples.samples().count == 1, "an edit never duplicates")
        #expect(try samples.samples()[0].valence == 0.7)
        try samples.setAuthorized(false)
        cli.run(["update", a, "--valence", "0.9"])
        let refused = cli.run(["healthkit", "push", "--store", store, "--json"])
        #expect(refused.code == 69, "a push with failures is EX_UNAVAILABLE")
        push = try JSONParser.parse(refused.out)
        #expect(push["failed"] == .int(1) && push["failures"]?.arrayValue?.first?["entry_id"] == .string(a))
        let outbox = try JSONParser.parse(cli.run(["outbox", "--destination", "healthkit", "--json"]).out)
        #expect(outbox["items"]?.arrayValue?.first?["last_error"] == .string("authorization denied"))
        #expect(cli.run(["show", a, "--json"]).out.contains("0.9"), "the local save succeeded")
        try samples.setAuthorized(true)
        try samples.save(
            StateOfMindSample(
                uuid: EntryID("11111111-2222-4333-8444-555555555555")!,
                date: LoggedAt(milliseconds: 1_779_000_000_000, utcOffsetMinutes: 0),
                kind: .momentaryEmotion, valence: 0.2, labels: [.named("proud")], associations: []))
        let pull = try JSONParser.parse(cli.run(["healthkit", "pull", "--store", store, "--json"]).out)
        #expect(pull["pulled"] == .int(1), "only the sample the ledger did not write")
        // What the ledger pushed is known by its external id, never by the store's own uuid: no duplicate.
        #expect(try samples.samples().allSatisfy { $0.uuid != $0.externalID })
        let listed = try JSONParser.parse(cli.run(["list", "--json", "--limit", "100"]).out)
        #expect(listed["total"] == .int(3), "two entries logged here, one pulled: the pushed one not again")
        #expect(
            try JSONParser.parse(cli.run(["healthkit", "pull", "--store", store, "--json"]).out)["pulled"] == .int(0))
    }

    /// A store that counts the whole-store reads a push makes.
    final class CountingStore: HealthStore, @unchecked Sendable {
        // @unchecked Sendable: the count is only touched from the test's one thread.
        let inner: FileHealthStore
        var wholeReads = 0
        init(_ inner: FileHealthStore) { self.inner = inner }
        func save(_ sample: StateOfMindSample) throws { try inner.save(sample) }
        func delete(_ uuid: EntryID) throws { try inner.delete(uuid) }
        func samples() throws -> [StateOfMindSample] {
            wholeReads += 1
            return try inner.samples()
        }
        func changes(after anchor: [UInt8]?) throws -> HealthChanges { try inner.changes(after: anchor) }
        func checkWritable() throws { try inner.checkWritable() }
    }

    @Test("A push costs what it sends: it never reads every sample in the store")
    func pushReadsNoWholeStore() throws {
        let dir = TemporaryDirectory("healthkit-push-cost")
        let ledger = try Ledger.open(
            at: dir.sub("ledger"),
            options: {
                var o = Ledger.Options(); o.createIfMissing = true; return o
            }())
        let store = CountingStore(FileHealthStore(path: dir.sub("health.json")))
        for index in 0..<20 {
            try store.inner.save(
                StateOfMindSample(
                    uuid: EntryID.random(),
                    date: LoggedAt(milliseconds: 1_779_000_000_000 + Int64(index), utcOffsetMinutes: 0),
                    kind: .momentaryEmotion, valence: 0.1, labels: [], associations: []))
        }
        _ = try ledger.log(MoodDraft(valence: 0.4, labels: ["calm"]))
        let report = try ledger.pushToHealthKit(store, now: Int64(Date().timeIntervalSince1970 * 1000) + 1)
        #expect(report.saved == 1 && store.wholeReads == 0, "\(report)")
        ledger.close()
    }

    /// A store whose synchronous calls must never be used: the `async` push and pull await its `async` ones. The
    /// first save says it began and waits until the test lets it go (streams, so no thread of the pool waits).
    final class AsyncOnlyStore: HealthStore, @unchecked Sendable {
        // @unchecked Sendable: the inner store locks its own file; the counters and the gate are atomics.
        let inner: FileHealthStore
        let asyncSaves = Atomic<Int>(0)
        let started = AsyncStream<Void>.makeStream()
        let released = AsyncStream<Void>.makeStream()
        let first = Atomic<Bool>(true)
        init(_ inner: FileHealthStore) { self.inner = inner }
        func save(_ sample: StateOfMindSample) throws { Issue.record("the synchronous save was used") }
        func delete(_ uuid: EntryID) throws { Issue.record("the synchronous delete was used") }
        func samples() throws -> [StateOfMindSample] { try inner.samples() }
        func changes(after anchor: [UInt8]?) throws -> HealthChanges {
            Issue.record("the synchronous query was used")
            return try inner.changes(after: anchor)
        }
        func save(_ sample: StateOfMindSample) async throws {
            if first.exchange(false, ordering: .relaxed) {
                started.continuation.yield()
                for await _ in released.stream { break }
            }
            asyncSaves.add(1, ordering: .relaxed)
            try await inner.save(sample)
        }
        func delete(_ uuid: EntryID) async throws { try await inner.delete(uuid) }
        func changes(after anchor: [UInt8]?) async throws -> HealthChanges { try await inner.changes(after: anchor) }
    }

    @Test("The async HealthKit push awaits the store's async calls; a cancelled push finishes the item begun, no more")
    func asyncPushCancelled() async throws {
        let dir = TemporaryDirectory("healthkit-async")
        var options = Ledger.Options()
        options.createIfMissing = true
        let ledger = try Ledger.open(at: dir.sub("ledger"), options: options)
        defer { ledger.close() }
        for valence in [0.1, 0.2, 0.3] { _ = try await ledger.log(MoodDraft(valence: valence, labels: ["calm"])) }
        let store = AsyncOnlyStore(FileHealthStore(path: dir.sub("health.json")))
        let now = Int64(Date().timeIntervalSince1970 * 1000) + 1
        let push = Task { try await ledger.pushToHealthKit(store, now: now) }
        for await _ in store.started.stream { break }
        push.cancel()
        store.released.continuation.yield()
        await #expect(throws: CancellationError.self) { try await push.value }
        #expect(store.asyncSaves.load(ordering: .relaxed) == 1, "the item begun was finished, no other begun")
        let due = ledger.state.outboxItems(destination: .healthkit).filter { $0.status == "pending" }
        #expect(due.count == 2, "what was not begun stays due")
        // Done again without cancelling: the rest goes; a pull (the async query) finds only the ledger's own samples.
        let rest = try await ledger.pushToHealthKit(store, now: now)
        #expect(rest.saved == 2 && store.asyncSaves.load(ordering: .relaxed) == 3)
        #expect(try store.samples().count == 3)
        #expect(try await ledger.pullFromHealthKit(store).pulled == 0)
    }

    @Test("A note and a typed 1–10 score travel in a sample's metadata; another app's come back on a pull")
    func healthKitMetadata() throws {
        let phone = CLIHarness()
        phone.run(["init"])
        let store = phone.dir.sub("health.json")
        let scored = phone.id(["log", "--score", "8", "--note", "Feeling great!"])
        _ = phone.id(["log", "--valence", "-0.3", "--label", "tired", "--note", "long day"])
        #expect(phone.run(["healthkit", "push", "--store", store]).code == 0)
        let health = FileHealthStore(path: store)
        let samples = try health.samples()
        let first = try #require(samples.first { $0.notes == "Feeling great!" })
        #expect(first.score == 8 && first.consistentScore == 8 && first.ledgerEntryID == EntryID(scored))
        #expect(samples.first { $0.notes == "long day" }.map { $0.score == nil } == true)
        // Another device of the person's pulls neither: they are copies of this ledger's entries, which reach it
        // through the backend (never as second entries from Health).
        let watch = CLIHarness()
        watch.run(["init"])
        #expect(
            try JSONParser.parse(watch.run(["healthkit", "pull", "--store", store, "--json"]).out)["pulled"] == .int(0))
        // Another app's sample with the same metadata keys: its note and typed score come back.
        try health.save(
            StateOfMindSample(
                uuid: EntryID("31111111-2222-4333-8444-555555555555")!,
                date: LoggedAt(milliseconds: 1_779_000_000_000, utcOffsetMinutes: 0), kind: .momentaryEmotion,
                valence: Valence.from(score: 3), labels: [], associations: [], notes: "from another app", score: 3))
        let pull = try JSONParser.parse(watch.run(["healthkit", "pull", "--store", store, "--json"]).out)
        #expect(pull["pulled"] == .int(1), "\(pull)")
        let entries = try JSONParser.parse(watch.run(["list", "--json"]).out)["entries"]?.arrayValue ?? []
        let pulled = try #require(entries.first { $0["notes"] == .string("from another app") })
        #expect(pulled["typed_score"] == .int(3) || pulled["score"] == .int(3), "\(pulled)")
        // A score beside a valence it does not translate (edited in another app) is not taken: the valence stands.
        var edited = first
        edited.valence = 0.1
        #expect(edited.consistentScore == nil)
    }

    @Test(
        "HealthKit pull is anchored: only what changed since the kept anchor; a sample deleted there deletes its entry")
    func healthKitAnchor() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        let store = cli.dir.sub("health.json")
        let samples = FileHealthStore(path: store)
        func sample(_ uuid: String, _ valence: Double) -> StateOfMindSample {
            StateOfMindSample(
                uuid: EntryID(uuid)!, date: LoggedAt(milliseconds: 1_779_000_000_000, utcOffsetMinutes: 0),
                kind: .momentaryEmotion, valence: valence, labels: [.named("calm")], associations: [])
        }
        let first = "11111111-2222-4333-8444-555555555555"
        let second = "21111111-2222-4333-8444-555555555555"
        try samples.save(sample(first, 0.2))
        var pull = try JSONParser.parse(cli.run(["healthkit", "pull", "--store", store, "--json"]).out)
        #expect(pull["pulled"] == .int(1))
        // The store answers only what came after the anchor the ledger kept.
        let anchored = try samples.changes(after: nil).anchor
        #expect(try samples.changes(after: anchored).added.isEmpty)
        try samples.save(sample(second, -0.3))
        // As HealthKit does, the store gave each sample its own uuid; the saving app's id is its external id.
        #expect(try samples.changes(after: anchored).added.map(\.externalID) == [EntryID(second)!])
        let stored = try samples.samples()
        let firstHere = try #require(stored.first { $0.externalID == EntryID(first) }).uuid
        let secondHere = try #require(stored.first { $0.externalID == EntryID(second) }).uuid
        #expect(firstHere != EntryID(first) && secondHere != EntryID(second))
        pull = try JSONParser.parse(cli.run(["healthkit", "pull", "--store", store, "--json"]).out)
        #expect(pull["pulled"] == .int(1) && pull["deleted"] == .int(0))
        try samples.delete(EntryID(first)!)
        pull = try JSONParser.parse(cli.run(["healthkit", "pull", "--store", store, "--json"]).out)
        #expect(pull["pulled"] == .int(0) && pull["deleted"] == .int(1), "\(pull)")
        #expect(cli.run(["show", firstHere.description]).code != 0, "the entry pulled from the deleted sample is gone")
        #expect(cli.run(["show", secondHere.description]).code == 0)
        #expect(cli.run(["verify"]).code == 0)
    }

    @Test(
        "The pull's anchor is a healthkit.anchored event folded into HealthKit's progress; an older log's 0x8004 record still counts"
    )
    func healthKitAnchorFolded() throws {
        let dir = TemporaryDirectory("ledger")
        let store = FileHealthStore(path: dir.sub("health.json"))
        try store.save(
            StateOfMindSample(
                uuid: EntryID("11111111-2222-4333-8444-555555555555")!,
                date: LoggedAt(milliseconds: 1_779_000_000_000, utcOffsetMinutes: 0), kind: .momentaryEmotion,
                valence: 0.2, labels: [.named("calm")], associations: []))
        var ledger = try Ledger.open(at: dir.sub("ledger"))
        #expect(try ledger.pullFromHealthKit(store).pulled == 1)
        let anchor = try store.changes(after: nil).anchor
        #expect(ledger.state.outbox.progress(.healthkit).anchor == anchor)
        #expect(
            try ledger.events(filter: EventFilter(type: .healthKitAnchored)).map(\.event) == [
                .healthKitAnchored(anchor)
            ])
        ledger.close()
        // As an older version kept it: a safe-to-ignore record of the anchor's bytes, after the event.
        let older: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1]
        let log = try EventLog.open(directory: dir.sub("ledger"))
        _ = try log.append(type: Attachment.Kind.healthKitAnchor.recordType, payload: older)
        log.close()
        ledger = try Ledger.open(at: dir.sub("ledger"))
        #expect(ledger.state.outbox.progress(.healthkit).anchor == older, "the tail after the snapshot")
        try ledger.snapshot()
        ledger.close()
        for useSnapshots in [true, false] {
            var options = Ledger.Options()
            options.useSnapshots = useSnapshots
            let reopened = try Ledger.open(at: dir.sub("ledger"), options: options)
            #expect(reopened.state.outbox.progress(.healthkit).anchor == older, "snapshots used: \(useSnapshots)")
            // The next pull asks from the kept anchor: the sample saved after anchor 1 comes again, and is known.
            #expect(try reopened.pullFromHealthKit(store).pulled == 0)
            #expect(reopened.state.outbox.progress(.healthkit).anchor == anchor)
            reopened.close()
        }
    }

    @Test(
        "A HealthKit store file is input like any other: a bad sample refuses pull and push with exit 65, nothing appended"
    )
    func hostileHealthStore() throws {
        let cli = CLIHarness()
        cli.run(["init"])
        _ = cli.id(["log", "--valence", "0.5", "--label", "calm"])
        let store = cli.dir.sub("health.json")
        let good =
            "{\"uuid\": \"11111111-2222-4333-8444-555555555555\", \"start_date\": \"2026-01-02T10:00:00Z\", "
            + "\"kind\": 1, \"valence\": 0.2}"
        let bad: [(String, String)] = [
            (
                "{\"uuid\": \"11111111-2222-4333-8444-555555555556\", \"start_date\": \"2026-01-02T10:00:00Z\", \"kind\": 1, \"valence\": 1e7}",
                "valence"
            ),
            (
                "{\"uuid\": \"11111111-2222-4333-8444-555555555556\", \"start_date\": \"yesterday-ish\", \"kind\": 1, \"valence\": 0.1}",
                "start_date"
            ),
            (
                "{\"uuid\": \"11111111-2222-4333-8444-555555555556\", \"start_date\": \"2026-01-02T10:00:00Z\", \"kind\": 7, \"valence\": 0.1}",
                "kind"
            ),
            (
                "{\"uuid\": \"not-a-uuid\", \"start_date\": \"2026-01-02T10:00:00Z\", \"kind\": 1, \"valence\": 0.1}",
                "uuid"
            )
        ]
        let before = cli.run(["stats", "--json"]).out
        for (sample, field) in bad {
            try Data("{\"authorized\": true, \"samples\": [\(good), \(sample)]}".utf8).write(
                to: URL(fileURLWithPath: store))
            for direction in ["pull", "push"] {
                let result = cli.run(["healthkit", direction, "--store", store])
                #expect(result.code == 65, "\(direction) \(field): \(result.err)")
                #expect(result.err.contains("sample 2") && result.err.contains(field), "\(direction): \(result.err)")
            }
            #expect(cli.run(["stats", "--json"]).out == before, "nothing appended (\(field))")
        }
    }
}
