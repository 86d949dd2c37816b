import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// The direct JSON writer the server answers with must write exactly what the JSON trees serialize to.
@Suite("JSONBytes against JSONValue")
struct JSONBytesTests {
    @Test("Every entry of a random workload, and pages of them, write the same bytes as their trees")
    func entriesAndPages() throws {
        let dir = TemporaryDirectory("ledger")
        let clock = ManualClock()
        var workload = Workload(random: SeededRandom(), clock: clock)
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock))
        defer { ledger.close() }
        for _ in 0..<400 { try workload.step(ledger) }
        // Entries the workload does not make: hostile text, milliseconds, odd offsets, spilled word lists.
        var draft = MoodDraft(
            valence: -0.123456789,
            labels: [
                "calm", "happy", "sad", "proud", "joyful", "lonely", "angry",
                "brave", "amazed", "my \"own\" word"
            ],
            associations: ["currentEvents", "selfCare"])
        draft.notes = "quote \" backslash \\ tab \t nl \n cr \r bell \u{7} del \u{7F} é 🙂"
        draft.tags = ["a\"b", "ü"]
        draft.loggedAt = LoggedAt(milliseconds: clock.now - 1_234, utcOffsetMinutes: -570)
        try ledger.log(draft)
        draft.loggedAt = LoggedAt(milliseconds: clock.now - 5_000_001, utcOffsetMinutes: 840)
        draft.valence = nil
        draft.score = 7
        try ledger.log(draft)
        let state = ledger.state
        #expect(state.entries.count > 20)
        for entry in state.entries.all {
            var out = JSONBytes()
            entry.writeJSON(to: &out)
            #expect(out.bytes == entry.json.serializedBytes(), "\(entry.id)")
            var withUser = JSONBytes()
            entry.writeJSON(to: &withUser, userID: "alice")
            guard case .object(var pairs) = entry.json else { Issue.record("not an object"); continue }
            pairs.insert(("user_id", .string("alice")), at: 1)
            #expect(withUser.bytes == JSONValue.object(pairs).serializedBytes())
            var typed = JSONBytes()
            entry.writeJSON(to: &typed, typedScore: true)
            let parsed = try JSONParser.parse(String(decoding: typed.bytes, as: UTF8.self))
            #expect(parsed["typed_score"] == .optional(entry.enteredScore) { .int(Int64($0)) })
            #expect(
                Self.keys(of: parsed, insertingTypedScoreAfterScore: false)
                    == Self.keys(of: entry.json, insertingTypedScoreAfterScore: true))
        }
        for offset in [0, 5, 30] {
            var query = EntryQuery()
            query.offset = offset
            query.limit = 17
            let page = try state.list(query)
            var out = JSONBytes()
            page.writeJSON(to: &out)
            #expect(out.bytes == page.json.serializedBytes())
        }
    }

    @Test("Nesting, commas and every scalar match the tree's serialization")
    func scalars() {
        var out = JSONBytes()
        out.beginObject()
        out.key("a")
        out.beginArray()
        out.int(-3)
        out.double(0.1)
        out.double(2)
        out.bool(false)
        out.null()
        out.string("x\u{1}")
        out.beginObject()
        out.endObject()
        out.beginArray()
        out.endArray()
        out.endArray()
        out.key("b")
        out.value(.object([("c", .string("d"))]))
        out.key("t")
        out.instant(milliseconds: 1_767_225_600_001, offsetMinutes: 330)
        out.endObject()
        let tree = JSONValue.object([
            (
                "a",
                .array([
                    .int(-3), .double(0.1), .double(2), .bool(false), .null, .string("x\u{1}"), .object([]), .array([])
                ])
            ),
            ("b", .object([("c", .string("d"))])),
            ("t", .string(ISO8601.format(milliseconds: 1_767_225_600_001, offsetMinutes: 330)))
        ])
        #expect(out.bytes == tree.serializedBytes())
        #expect(ISO8601.format(milliseconds: 1_767_225_600_001, offsetMinutes: 330) == "2026-01-01T05:30:00.001+05:30")
        #expect(ISO8601.format(milliseconds: -1, offsetMinutes: -61) == "1969-12-31T22:58:59.999-01:01")
    }

    static func keys(of json: JSONValue, insertingTypedScoreAfterScore: Bool) -> [String]? {
        guard case .object(let pairs) = json else { return nil }
        var keys: [String] = []
        for (key, _) in pairs {
            keys.append(key)
            if key == "score", insertingTypedScoreAfterScore { keys.append("typed_score") }
        }
        return keys
    }
}
