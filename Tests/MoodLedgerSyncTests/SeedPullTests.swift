import Foundation
import MoodLedger
import MoodLedgerSync
import Synchronization
import TestSupport
import Testing

/// Flow 3 of the seeds ("the backend has new mood data") against backends that have no changes feed: the list route
/// is read and what another client made or changed comes here (`Specs/sync.md`, *Pulling from a list*).
@Suite("Pulling from a seed backend's list")
struct SeedPullTests {
    static let credentials = SyncCredentials(apiKey: "k", token: "t")

    static func iso(_ milliseconds: Int64) -> String { ISO8601.format(milliseconds: milliseconds, offsetMinutes: 0) }

    @Test("wellness: a record another client made is pulled once, its edits follow, an edit here is never overwritten")
    func wellnessFlow3() throws {
        let dir = TemporaryDirectory("seed-pull-wellness")
        let backend = try SeedBackend(.wellness)
        let device = try Device(dir.sub("d"), remote: "http://seed.invalid", dialect: .wellness, capabilities: nil)
        let own = try device.ledger.log(
            MoodDraft(valence: -0.2, labels: ["sad", "homesick"], associations: ["work"], tags: ["rainy"])
        ).entry.id
        #expect(try device.sync(Self.credentials, transport: backend).delivered == 1)

        // Another client of the seed logs a mood an hour ago, in the seed's own spellings.
        let now = device.ledger.options.clock()
        let theirs = backend.insert(
            .object([
                ("valence", .double(0.5)), ("labels", .array([.string("happy"), .string("tired")])),
                ("associations", .array([.string("social")])), ("notes", .string("from the web")),
                ("logged_at", .string(Self.iso(now - 3_600_000))), ("source", .string("manual"))
            ]))
        let pulled = try device.sync(Self.credentials, transport: backend)
        #expect(pulled.isComplete && pulled.pulled == 1 && pulled.sent == 0, "\(pulled)")
        let state = device.ledger.state
        let entry = try #require(
            state.entries.all.first {
                state.outbox.record(OutboxKey(entryID: $0.id, destination: .backend))?.remoteID == theirs
            })
        #expect(entry.notes == "from the web" && entry.labels.map(\.name) == ["happy", "drained"])
        #expect(entry.associations.map(\.name) == ["friends"] && entry.valence == 0.5)
        #expect(entry.loggedAt.milliseconds.floorDivided(by: 1000) == (now - 3_600_000).floorDivided(by: 1000))
        #expect(state.entries.count == 2 && backend.entries.count == 2, "one entry each side, nothing sent back")

        // Read again: nothing new; nothing is ever duplicated.
        let again = try device.sync(Self.credentials, transport: backend)
        #expect(again.pulled == 0 && again.sent == 0 && device.ledger.state.entries.count == 2, "\(again)")

        // Edited there: the carried fields follow; what the seed cannot hold here (tags, a custom label) stays.
        backend.edit(theirs) { pairs in
            pairs.removeAll { $0.0 == "notes" || $0.0 == "valence" }
            pairs += [("notes", .string("edited on the web")), ("valence", .double(0.1))]
        }
        let ownRemote = try #require(
            device.ledger.state.outbox.record(OutboxKey(entryID: own, destination: .backend))?.remoteID)
        backend.edit(ownRemote) { pairs in
            pairs.removeAll { $0.0 == "notes" }
            pairs.append(("notes", .string("a note from the web")))
        }
        let edits = try device.sync(Self.credentials, transport: backend)
        #expect(edits.pulled == 2 && edits.sent == 0, "\(edits)")
        #expect(device.ledger.state.entries[entry.id]?.notes == "edited on the web")
        #expect(device.ledger.state.entries[entry.id]?.valence == 0.1)
        let mine = try #require(device.ledger.state.entries[own])
        #expect(mine.notes == "a note from the web" && mine.tags == ["rainy"])
        #expect(mine.labels.map(\.name) == ["sad", "homesick"] && mine.valence == -0.2)

        // Changed on both sides: the edit here is sent (it lands last), and the pull does not undo it.
        _ = try device.ledger.update(own, MoodChanges(notes: .set("mine, later")))
        backend.edit(ownRemote) { pairs in
            pairs.removeAll { $0.0 == "notes" }
            pairs.append(("notes", .string("theirs, earlier")))
        }
        let both = try device.sync(Self.credentials, transport: backend)
        #expect(both.isComplete && both.delivered == 1 && both.pulled == 0, "\(both)")
        #expect(device.ledger.state.entries[own]?.notes == "mine, later")
        #expect(backend.entries.first { $0.id == ownRemote }?.body["notes"] == .string("mine, later"))
        #expect(backend.violations.isEmpty, "\(backend.violations)")
    }

    @Test("mood-api: a second device pulls the first one's entries under their own ids, and sends nothing back")
    func moodAPITwoDevices() throws {
        let dir = TemporaryDirectory("seed-pull-mood-api")
        let backend = try SeedBackend(.moodAPI)
        let a = try Device(dir.sub("a"), remote: "http://seed.invalid", capabilities: nil)
        let b = try Device(dir.sub("b"), remote: "http://seed.invalid", capabilities: nil)
        let first = try a.ledger.log(MoodDraft(valence: 0.35, labels: ["calm"], notes: "walk")).entry.id
        #expect(try a.sync(Self.credentials, transport: backend).delivered == 1)
        let onB = try b.sync(Self.credentials, transport: backend)
        #expect(onB.isComplete && onB.pulled == 1 && onB.sent == 0, "\(onB)")
        #expect(b.ledger.state.entries[first]?.notes == "walk", "the same entry id on both devices")
        let second = try a.ledger.log(MoodDraft(score: 8)).entry.id
        _ = try a.sync(Self.credentials, transport: backend)
        let later = try b.sync(Self.credentials, transport: backend)
        #expect(later.pulled == 1 && later.sent == 0 && b.ledger.state.entries.count == 2, "\(later)")
        #expect(b.ledger.state.entries[second] != nil)
        // A's own records come back to A as what it holds: nothing pulled, nothing duplicated.
        let back = try a.sync(Self.credentials, transport: backend)
        #expect(back.pulled == 0 && a.ledger.state.entries.count == 2 && backend.entries.count == 2, "\(back)")
        #expect(backend.violations.isEmpty, "\(backend.violations)")
    }

    @Test("The list's pages are all read; a record this ledger's rules refuse stays there and is said")
    func pagesAndRefusals() throws {
        let dir = TemporaryDirectory("seed-pull-pages")
        let backend = try SeedBackend(.wellness)
        let device = try Device(dir.sub("d"), remote: "http://seed.invalid", dialect: .wellness, capabilities: nil)
        let now = device.ledger.options.clock()
        for index in 0..<250 {
            _ = backend.insert(
                .object([
                    ("valence", .double(Double(index % 20) / 20)), ("labels", .array([.string("calm")])),
                    ("associations", .array([])), ("notes", .string("n\(index)")),
                    ("logged_at", .string(Self.iso(now - Int64(index) * 600_000))), ("source", .string("manual"))
                ]))
        }
        _ = backend.insert(
            .object([
                ("valence", .double(3)), ("labels", .array([])), ("associations", .array([])),
                ("logged_at", .string(Self.iso(now))), ("source", .string("manual"))
            ]))
        let report = try device.sync(Self.credentials, transport: backend)
        #expect(report.pulled == 250 && device.ledger.state.entries.count == 250, "\(report)")
        #expect(report.pullSkipped?.contains("1 listed record broke this ledger's rules") == true)
        #expect(backend.requests.filter { $0.method == "GET" && $0.path.contains("offset=") }.count == 3)
        #expect(try device.sync(Self.credentials, transport: backend).pulled == 0)
    }

    @Test("A remote without the documented list is pushed to and never failed for it; a passing failure is retried")
    func noList() throws {
        let dir = TemporaryDirectory("seed-pull-no-list")
        let backend = try SeedBackend(.wellness)
        let device = try Device(dir.sub("d"), remote: "http://seed.invalid", dialect: .wellness, capabilities: nil)
        _ = try device.ledger.log(MoodDraft(valence: 0.3, labels: ["calm"]))
        let listStatus = Mutex(404)
        let transport = ScriptedTransport { request in
            if request.method == "GET", request.path.contains("offset=") {
                let status = listStatus.withLock { $0 }
                return .response(status: status, headers: [], body: Array(#"{"error":"no"}"#.utf8))
            }
            let (status, body) = backend.handle(request.method, request.path, request.body)
            return .response(status: status, headers: [], body: Array(body.utf8))
        }
        let report = try device.sync(Self.credentials, transport: transport)
        #expect(report.isComplete && report.delivered == 1, "\(report)")
        #expect(report.pullSkipped?.contains("HTTP 404") == true && report.pullError == nil, "\(report)")
        listStatus.withLock { $0 = 503 }
        _ = try device.ledger.log(MoodDraft(valence: 0.1, labels: ["calm"]))
        let busy = try device.sync(Self.credentials, transport: transport)
        #expect(busy.delivered == 1 && busy.pullError?.contains("HTTP 503") == true, "\(busy)")
    }

    @Test("A list in the seed's abbreviated shape (no notes, no source_id) never clears what it does not show")
    func abbreviatedList() throws {
        let dir = TemporaryDirectory("seed-pull-abbreviated")
        let backend = try SeedBackend(.moodAPI)
        let device = try Device(dir.sub("d"), remote: "http://seed.invalid", capabilities: nil)
        let id = try device.ledger.log(MoodDraft(valence: 0.35, labels: ["calm"], notes: "a walk")).entry.id
        // Seed 001's list example: id, valence, labels, associations, logged_at, source — no notes, no source_id.
        let transport = ScriptedTransport { request in
            let (status, body) = backend.handle(request.method, request.path, request.body)
            guard request.method == "GET", request.path.contains("offset="),
                let json = try? JSONParser.parse(body), let entries = json["data"]?["entries"]?.arrayValue
            else { return .response(status: status, headers: [], body: Array(body.utf8)) }
            let shortened = entries.map { entry -> JSONValue in
                guard case .object(let pairs) = entry else { return entry }
                return .object(pairs.filter { $0.0 != "notes" && $0.0 != "source_id" })
            }
            let answer = JSONValue.object([
                ("success", .bool(true)),
                ("data", .object([("entries", .array(shortened)), ("has_more", .bool(false))]))
            ])
            return .response(status: 200, headers: [], body: answer.serializedBytes())
        }
        let first = try device.sync(Self.credentials, transport: transport)
        #expect(first.isComplete && first.delivered == 1 && first.pulled == 0, "\(first)")
        #expect(device.ledger.entry(id)?.notes == "a walk", "the note the list does not show is kept")
        let again = try device.sync(Self.credentials, transport: transport)
        #expect(again.pulled == 0 && device.ledger.state.entries.count == 1, "\(again)")
    }
}
