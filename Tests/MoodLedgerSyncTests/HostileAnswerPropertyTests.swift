import Foundation
import MoodLedger
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerSync

/// A seed-002 (`wellness`) backend that applies every request honestly — ids of its own, idempotency keys kept —
/// behind a layer that answers at random: the right answer, another request's answer (a stray), the right change
/// with its answer lost, a 500 without the change, a redirect.
final class HostileWellness: @unchecked Sendable {  // every variable is under `state`
    struct State {
        var records: [String: JSONValue] = [:]
        var keys: [String: (Int, String)] = [:]
        var answers: [(Int, String)] = []
        var next = 1
        var random: SeededRandom
        var hostile = true
    }
    let state: Mutex<State>

    init(seed: UInt64?) { state = Mutex(State(random: SeededRandom(seed: seed, test: "hostile wellness"))) }

    var records: [String: JSONValue] { state.withLock { $0.records } }
    func calm() { state.withLock { $0.hostile = false } }

    private static func answer(_ id: String, _ fields: JSONValue) -> String {
        var pairs: [(String, JSONValue)] = [("id", .string(id))]
        if case .object(let more) = fields { pairs += more }
        return JSONValue.object([("success", .bool(true)), ("data", .object(pairs))]).serialized()
    }

    /// The honest answer, the change applied.
    private static func apply(_ request: SyncRequest, _ state: inout State) -> (Int, String) {
        let collection = "/api/v1/wellness/mood-entries"
        let body = request.body.flatMap { try? JSONParser.parse(String(decoding: $0, as: UTF8.self)) } ?? .null
        if request.method == "GET" {
            let entries = state.records.map { Self.answer($0.key, $0.value) }
            return (200, #"{"success":true,"data":{"entries":[],"has_more":false,"seen":\#(entries.count)}}"#)
        }
        if let key = request.idempotencyKey, let known = state.keys[request.method + key] { return known }
        var result: (Int, String)
        let id = request.path.hasPrefix(collection + "/") ? String(request.path.dropFirst(collection.count + 1)) : ""
        switch request.method {
        case "POST":
            let id = "r\(state.next)"
            state.next += 1
            state.records[id] = body
            result = (201, Self.answer(id, body))
        case "PUT":
            guard state.records[id] != nil else { return (404, #"{"success":false}"#) }
            state.records[id] = body
            result = (200, Self.answer(id, body))
        case "DELETE":
            guard state.records.removeValue(forKey: id) != nil else { return (404, #"{"success":false}"#) }
            result = (204, "")
        default: result = (405, "")
        }
        if let key = request.idempotencyKey { state.keys[request.method + key] = result }
        return result
    }

    func handle(_ request: SyncRequest) -> SyncExchange {
        state.withLock { state in
            let roll = state.hostile ? Int.random(in: 0..<10, using: &state.random) : 0
            switch roll {
            case 7:
                return .response(status: 500, headers: [], body: Array(#"{"success":false}"#.utf8))
            case 8:
                return .response(status: 307, headers: [("Location", "https://elsewhere.example/")], body: [])
            default: break
            }
            let honest = Self.apply(request, &state)
            defer { if request.method != "GET" { state.answers.append(honest) } }
            switch roll {
            case 4, 5:
                // A stray: another request's answer (when there was one), read for this one.
                guard let stray = state.answers.randomElement(using: &state.random) else { break }
                return .response(status: stray.0, headers: [], body: Array(stray.1.utf8))
            case 6:
                return .failure(kind: "network", message: "the connection was reset")
            default: break
            }
            return .response(status: honest.0, headers: [], body: Array(honest.1.utf8))
        }
    }
}

@Suite("Sync against a backend whose answers cannot be trusted")
struct HostileAnswerPropertyTests {
    @Test("Random answers (right, stray, lost, failed, redirected): no two entries share a server id, no edit is lost")
    func randomAnswers() throws {
        for round in 0..<3 {
            let dir = TemporaryDirectory("hostile-answers")
            let backend = HostileWellness(seed: nil)
            var random = SeededRandom(test: "hostile answers, round \(round)")
            let device = try Device(
                dir.sub("device"), remote: "http://127.0.0.1:9", dialect: .wellness, capabilities: .seed(.wellness))
            let transport = ScriptedTransport { backend.handle($0) }
            var ids: [EntryID] = []
            for index in 0..<8 {
                ids.append(
                    try device.ledger.log(
                        MoodDraft(valence: Double(index) / 10 - 0.3, labels: ["calm"], notes: "entry \(index)")
                    ).entry.id)
            }
            for step in 0..<12 {
                if let id = ids.randomElement(using: &random), device.ledger.entry(id) != nil {
                    if Int.random(in: 0..<6, using: &random) == 0 {
                        try device.ledger.delete(id)
                    } else {
                        _ = try device.ledger.update(id, MoodChanges(notes: .set("edit \(step) of \(id)")))
                    }
                }
                _ = try device.sync(
                    SyncCredentials(apiKey: "k", token: "t"), transport: transport, concurrency: 3, now: true)
            }
            // The backend calms down: everything pending goes out.
            backend.calm()
            var complete = false
            for _ in 0..<6 where !complete {
                try device.ledger.releaseParked()
                complete = try device.sync(SyncCredentials(apiKey: "k", token: "t"), transport: transport, now: true)
                    .isComplete
            }
            #expect(complete, "round \(round): everything delivered once the backend is honest")
            let state = device.ledger.state
            let held = ids.compactMap { id -> (EntryID, String)? in
                state.outbox.record(OutboxKey(entryID: id, destination: .backend))?.remoteID.map { (id, $0) }
            }
            #expect(Set(held.map(\.1)).count == held.count, "round \(round): two entries share a server id: \(held)")
            let records = backend.records
            for id in ids {
                guard let entry = state.entries[id] else { continue }
                let remote = try #require(
                    state.outbox.record(OutboxKey(entryID: id, destination: .backend))?.remoteID, "round \(round)")
                let stored = try #require(records[remote], "round \(round): \(id)'s record \(remote) is on the server")
                #expect(stored["notes"]?.stringValue == entry.notes, "round \(round): no edit lost for \(id)")
            }
            // Not yet a property: a create whose answer was lost, edited before it was sent again (a new key), or
            // deleted meanwhile (create + delete = nothing here), can leave a record on the server that no entry
            // here names. Counted, so the gap stays visible (`Specs/sync.md`, *What the client refuses*).
            let named = Set(held.map(\.1))
            let orphans = records.keys.filter { !named.contains($0) }.count
            print("round \(round): \(records.count) records on the server, \(orphans) that no entry here names")
            #expect(records.keys.filter(named.contains).count == state.entries.count, "round \(round)")
        }
    }
}
