import Foundation
import MoodLedger
import MoodLedgerSync
import Synchronization
import TestSupport
import Testing

/// Two devices of one account (two ledgers driven through the built `moodledger`) and one `moodledger serve`:
/// concurrent edits merge field by field; a field changed on both sides is a conflict you can list and resolve.
@Suite("Merging concurrent edits (the built binary against moodledger serve)")
struct MergeEndToEndTests {
    final class Account {
        let dir: TemporaryDirectory
        let server: SyncServer
        let environment: [String: String]
        let a: String
        let b: String
        let id: String

        let proxy: FaultProxy?

        /// An account whose devices share one entry; with `decide`, device `a` reaches the server through a
        /// fault-injecting proxy.
        init(
            _ name: String, notes: String = "orig", labels: [String] = ["calm"],
            decide: (@Sendable (Int, String, String) -> FaultProxy.Action)? = nil
        ) throws {
            dir = TemporaryDirectory(name)
            server = try SyncServer(dir: dir.sub("server"))
            let credentials = server.credentials
            environment = ["MOODLEDGER_API_KEY": credentials.apiKey!, "MOODLEDGER_TOKEN": credentials.token!]
            a = dir.sub("a")
            b = dir.sub("b")
            let port = server.port
            proxy = try decide.map { try FaultProxy(upstream: port, decide: $0) }
            for ledger in [a, b] {
                _ = try Self.cli(["init", "--ledger", ledger])
                let url = ledger == a ? proxy?.url ?? server.url : server.url
                _ = try Self.cli(["remote", "set", url, "--dialect", "mood-api", "--ledger", ledger])
            }
            let (_, logged) = try Self.cli(
                ["log", "--valence", "0.2", "--note", notes, "--json", "--ledger", a]
                    + labels.flatMap { ["--label", $0] })
            id = try #require(try JSONParser.parse(logged)["id"]?.stringValue)
            try sync(a)
            try sync(b)
        }

        static func cli(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
            try SyncCrashTests.run(arguments, environment: environment)
        }

        @discardableResult
        func run(_ ledger: String, _ arguments: [String]) throws -> String {
            let (code, output) = try Self.cli(arguments + ["--ledger", ledger], environment: environment)
            #expect(code == 0, "\(arguments): \(output)")
            return output
        }

        func sync(_ ledger: String) throws { try run(ledger, ["sync"]) }

        /// A and B each edit the entry while apart (one command each), then A, B and A sync.
        func apart(a onA: [String], b onB: [String]) throws {
            try run(a, onA)
            try run(b, onB)
            for ledger in [a, b, a] { try sync(ledger) }
        }

        func entry(_ ledger: String) throws -> JSONValue {
            try JSONParser.parse(try run(ledger, ["show", id, "--json"]))
        }

        func conflicts(_ ledger: String, _ extra: [String] = []) throws -> [JSONValue] {
            try JSONParser.parse(try run(ledger, ["conflicts", "--json"] + extra)).arrayValue ?? []
        }

        deinit {
            proxy?.stop()
            server.stop()
        }
    }

    @Test("A edits the note, B the score; A, B, A sync: both keep both edits and no conflict is recorded")
    func differentFields() throws {
        let account = try Account("merge-fields")
        try account.apart(a: ["update", account.id, "--note", "A's note"], b: ["update", account.id, "--score", "8"])
        for ledger in [account.a, account.b] {
            let entry = try account.entry(ledger)
            #expect(entry["notes"]?.stringValue == "A's note" && entry["score"]?.intValue == 8, "\(entry)")
            #expect(try account.conflicts(ledger).isEmpty)
        }
        let story = try account.run(account.b, ["sync", "explain", account.id])
        #expect(story.contains("notes: changed on the server") && story.contains("mood: changed here"), "\(story)")
    }

    @Test("Labels merge as sets: grateful here and hopeful there give both; calm removed here and hopeful added there")
    func labelSets() throws {
        let account = try Account("merge-labels")
        try account.apart(a: ["labels", account.id, "--add", "grateful"], b: ["labels", account.id, "--add", "hopeful"])
        for ledger in [account.a, account.b] {
            #expect(
                Set(try account.entry(ledger)["labels"]?.arrayValue?.compactMap(\.stringValue) ?? [])
                    == ["calm", "grateful", "hopeful"])
        }
        try account.apart(a: ["labels", account.id, "--remove", "calm"], b: ["labels", account.id, "--add", "proud"])
        for ledger in [account.a, account.b] {
            #expect(
                Set(try account.entry(ledger)["labels"]?.arrayValue?.compactMap(\.stringValue) ?? [])
                    == ["grateful", "hopeful", "proud"])
        }
    }

    @Test("A adds a tag, B edits the note: both survive")
    func tagAndNote() throws {
        let account = try Account("merge-tag-note")
        try account.apart(a: ["tags", account.id, "--add", "walk"], b: ["update", account.id, "--note", "B's note"])
        for ledger in [account.a, account.b] {
            let entry = try account.entry(ledger)
            #expect(entry["tags"] == .array([.string("walk")]) && entry["notes"]?.stringValue == "B's note", "\(entry)")
        }
    }

    @Test(
        "Both edit the note: the last to reach the server wins, the conflict lists both values, resolve takes the other"
    )
    func sameField() throws {
        let account = try Account("merge-same")
        try account.apart(a: ["update", account.id, "--note", "from A"], b: ["update", account.id, "--note", "from B"])
        #expect(try account.entry(account.a)["notes"]?.stringValue == "from B", "B reached the server last")
        // A's device learns that its note was replaced: the same conflict, won by the server.
        let lost = try account.conflicts(account.a)
        #expect(lost.count == 1, "\(lost)")
        #expect(
            lost.first?["here"]?.stringValue == "from A" && lost.first?["server"]?.stringValue == "from B"
                && lost.first?["won"]?.stringValue == "server", "\(lost)")
        let open = try account.conflicts(account.b)
        #expect(open.count == 1)
        let conflict = try #require(open.first)
        #expect(
            conflict["field"]?.stringValue == "notes" && conflict["base"]?.stringValue == "orig"
                && conflict["here"]?.stringValue == "from B" && conflict["server"]?.stringValue == "from A"
                && conflict["won"]?.stringValue == "here", "\(conflict)")
        let seq = try #require(conflict["seq"]?.intValue)
        // Time travel: the conflict as the user saw it at that moment, and not before.
        #expect(try account.conflicts(account.b, ["--at", String(seq)]).count == 1)
        #expect(try account.conflicts(account.b, ["--at", String(seq - 1)]).isEmpty)
        let then = try account.run(account.b, ["sync", "explain", account.id, "--at", String(seq)])
        // A conflict's values are shown as `conflicts` shows them.
        #expect(then.contains("notes: conflict") && then.contains("\"from A\""), "\(then)")

        try account.run(account.b, ["conflicts", "resolve", String(account.id.prefix(8)), "--take", "server"])
        #expect(try account.conflicts(account.b).isEmpty)
        #expect(
            try account.conflicts(account.b, ["--at", String(seq)]).count == 1, "resolved conflicts stay in the past")
        for ledger in [account.b, account.a] { try account.sync(ledger) }
        for ledger in [account.a, account.b] { #expect(try account.entry(ledger)["notes"]?.stringValue == "from A") }
        let history = try account.run(account.b, ["history", account.id])
        #expect(history.contains("conflict.resolved") && history.contains("sync.merged"), "\(history)")
    }

    @Test("Deleted on one device, edited on the other: recorded as a conflict that says what was lost")
    func deleteAgainstEdit() throws {
        let account = try Account("merge-delete")
        try account.run(account.a, ["delete", account.id])
        try account.run(account.b, ["update", account.id, "--score", "3"])
        for ledger in [account.b, account.a] { try account.sync(ledger) }
        // A's delete (conditional on the base) met B's edit: the deletion wins (it reached the server last), and the
        // edit it overrode is listed.
        let open = try account.conflicts(account.a)
        #expect(open.count == 1 && open.first?["field"]?.stringValue == "entry", "\(open)")
        try account.sync(account.b)
        let (code, _) = try Account.cli(["show", account.id, "--ledger", account.b])
        #expect(code == 66, "deleted everywhere")
    }

    @Test(
        "A deletion here whose send failed meets the server's edit in a pull: the deletion still wins, listed as a conflict"
    )
    func unsentDeletionMeetsPull() throws {
        let flag = FaultSwitch()
        let account = try Account("merge-unsent-delete") { _, method, _ in
            method == "DELETE" && flag.isOn
                ? .answer(503, [], #"{"error":{"message":"maintenance"}}"#) : .relay
        }
        try account.run(account.a, ["delete", account.id])
        try account.run(account.b, ["update", account.id, "--score", "2"])
        try account.sync(account.b)
        flag.set(true)
        // the DELETE fails; the pull meets B's edit
        _ = try Account.cli(["sync", "--ledger", account.a], environment: account.environment)
        let (gone, _) = try Account.cli(["show", account.id, "--ledger", account.a])
        #expect(gone == 66, "the pull did not bring the entry back")
        #expect(try account.conflicts(account.a).first?["field"]?.stringValue == "entry")
        flag.set(false)
        try account.run(account.a, ["sync", "--now"])
        try account.sync(account.b)
        let (code, _) = try Account.cli(["show", account.id, "--ledger", account.b])
        #expect(code == 66, "deleted everywhere")
    }

    @Test("sync --now sends a change whose retry time is an hour away")
    func now() throws {
        let flag = FaultSwitch()
        let account = try Account("merge-now") { _, method, path in
            (method == "PUT" || path.hasSuffix("/batch")) && flag.isOn
                ? .answer(429, ["Retry-After: 3600"], #"{"error":{"message":"slow down"}}"#) : .relay
        }
        try account.run(account.a, ["update", account.id, "--score", "9"])
        flag.set(true)
        let (limited, _) = try Account.cli(["sync", "--ledger", account.a], environment: account.environment)
        #expect(limited == 69)
        flag.set(false)
        let (waiting, output) = try Account.cli(["sync", "--ledger", account.a], environment: account.environment)
        #expect(waiting == 69 && output.contains("next retry"), "the hour is not up: \(output)")
        try account.run(account.a, ["sync", "--now"])
        try account.sync(account.b)
        #expect(try account.entry(account.b)["score"]?.intValue == 9)
    }
}

/// Turns a proxy's injected fault on and off while a test runs.
final class FaultSwitch: Sendable {
    private let on = Atomic<Bool>(false)
    var isOn: Bool { on.load(ordering: .relaxed) }
    func set(_ value: Bool) { on.store(value, ordering: .relaxed) }
}
