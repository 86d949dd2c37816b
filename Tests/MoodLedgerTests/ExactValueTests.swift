import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

@Suite("Values come back as written")
struct ExactValueTests {
    @Test("Every valence with up to six decimals reads back == as written (all 2,000,001 of them)")
    func sixDecimals() {
        var wrong: [Int] = []
        var entry = MoodEntry(id: EntryID(high: 1, low: 1), loggedAt: LoggedAt(milliseconds: 0))
        for k in -1_000_000...1_000_000 {
            let written = Double(k) / 1_000_000
            entry.valence = written
            if entry.valence != written { wrong.append(k) }
        }
        #expect(wrong.isEmpty, "first: \(wrong.prefix(5))")
        entry.valence = 0.4
        #expect(entry.valence == 0.4 && "\(entry.valence!)" == "0.4")
    }

    @Test("Seeded valences with seven to eleven decimals read back ==; reading and writing never drift")
    func moreDecimals() {
        var random = SeededRandom()
        var entry = MoodEntry(id: EntryID(high: 1, low: 1), loggedAt: LoggedAt(milliseconds: 0))
        for _ in 0..<200_000 {
            let digits = Int.random(in: 7...11, using: &random)
            let scale = pow(10, Double(digits))
            let written = (Double.random(in: -1...1, using: &random) * scale).rounded() / scale
            entry.valence = written
            #expect(entry.valence == written, "\(written)")
            let grid = entry.valenceGrid
            entry.valence = entry.valence
            #expect(entry.valenceGrid == grid, "a value read back lands on its own grid point")
        }
        #expect(Valence.display(Valence.from(score: 8)) == 0.555555555556)
    }

    @Test("Through the log, a reopen, the CLI's JSON and Codable: 0.4 is 0.4")
    func throughTheLedger() throws {
        let dir = TemporaryDirectory("exact")
        let ledger = try Ledger.open(at: dir.path)
        let id = try ledger.log(MoodDraft(valence: 0.4)).entry.id
        try ledger.update(id, MoodChanges(valence: 0.6))
        ledger.close()
        let reopened = try Ledger.open(at: dir.path)
        defer { reopened.close() }
        let entry = try #require(reopened.entry(id))
        #expect(entry.valence == 0.6)
        #expect(entry.json["valence"] == .double(0.6))
        let decoded = try JSONDecoder().decode(MoodEntry.self, from: JSONEncoder().encode(entry))
        #expect(decoded == entry && decoded.valence == 0.6)
    }

    @Test("Codable: seeded entries and drafts encode in the API's shape and decode ==")
    func codableRoundTrip() throws {
        var random = SeededRandom()
        let labels = ["calm", "happy", "my own word", "overwhelmed", "Current Events"]
        let associations = ["work", "family", "selfCare", "gardening"]
        for _ in 0..<300 {
            let entry = MoodEntry(
                id: EntryID.random(using: &random),
                loggedAt: LoggedAt(
                    milliseconds: Int64.random(in: -10_000_000_000_000...10_000_000_000_000, using: &random),
                    utcOffsetMinutes: Int.random(in: -840...840, using: &random)),
                kind: Bool.random(using: &random) ? .dailyMood : .momentaryEmotion,
                valence: Bool.random(using: &random)
                    ? Double(Int.random(in: -1000...1000, using: &random)) / 1000 : nil,
                enteredScore: Bool.random(using: &random) ? Int.random(in: 1...10, using: &random) : nil,
                labels: try labels.shuffled(using: &random).prefix(Int.random(in: 0...3, using: &random))
                    .map { try MoodLabel.parse($0) },
                associations: try associations.shuffled(using: &random).prefix(Int.random(in: 0...2, using: &random))
                    .map { try MoodAssociation.parse($0) },
                tags: Bool.random(using: &random) ? ["a tag"] : [],
                notes: Bool.random(using: &random) ? "a note, \"quoted\" é" : nil,
                source: MoodSource.allCases.randomElement(using: &random)!,
                sourceID: Bool.random(using: &random) ? "src-\(Int.random(in: 0...99, using: &random))" : nil,
                createdAt: 1_700_000_000_123,
                updatedAt: Bool.random(using: &random) ? 1_700_000_000_123 : 1_700_000_999_000)
            let data = try JSONEncoder().encode(entry)
            #expect(try JSONDecoder().decode(MoodEntry.self, from: data) == entry)
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(Set(object.keys).isSuperset(of: ["id", "logged_at", "valence", "labels", "score", "typed_score"]))
            let draft = MoodDraft(
                valence: entry.valence, labels: entry.labels.map(\.wireName), notes: entry.notes, kind: entry.kind,
                loggedAt: entry.loggedAt, source: entry.source, sourceID: entry.sourceID, id: entry.id)
            #expect(try JSONDecoder().decode(MoodDraft.self, from: JSONEncoder().encode(draft)) == draft)
        }
        let changes = MoodChanges(valence: 0.25, notes: .clear, kind: .dailyMood)
        let text = String(decoding: try JSONEncoder().encode(changes), as: UTF8.self)
        #expect(text.contains("\"notes\":null"))
        #expect(try JSONDecoder().decode(MoodChanges.self, from: Data(text.utf8)) == changes)
        let query = EntryQuery(
            from: LocalDate("2026-01-01"), label: try MoodLabel.parse("calm"), minValence: -0.5, limit: 10, offset: 20)
        #expect(try JSONDecoder().decode(EntryQuery.self, from: JSONEncoder().encode(query)) == query)
        #expect(try JSONDecoder().decode(EntryQuery.self, from: Data("{}".utf8)) == EntryQuery())
        let form = MoodReplacement(score: 7, labels: ["calm"], associations: ["work"], tags: [], notes: nil)
        #expect(try JSONDecoder().decode(MoodReplacement.self, from: JSONEncoder().encode(form)) == form)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(MoodEntry.self, from: Data(#"{"id":"x","logged_at":"2026-01-01T00:00:00Z"}"#.utf8))
        }
    }

    @Test("LoggedAt from a Date and a TimeZone: the instant to the millisecond and the zone's offset then")
    func loggedAtFromDate() {
        let berlin = TimeZone(identifier: "Europe/Berlin")!
        let winter = LoggedAt(Date(timeIntervalSince1970: 1_767_225_600.1239), timeZone: berlin)  // 2026-01-01
        #expect(winter.milliseconds == 1_767_225_600_123 && winter.utcOffsetMinutes == 60)
        let summer = LoggedAt(Date(timeIntervalSince1970: 1_782_864_000), timeZone: berlin)  // 2026-07-01
        #expect(summer.utcOffsetMinutes == 120)
        #expect(summer.date == Date(timeIntervalSince1970: 1_782_864_000))
        let before1970 = LoggedAt(Date(timeIntervalSince1970: -0.0005), timeZone: TimeZone(identifier: "UTC")!)
        #expect(before1970.milliseconds == -1)
    }
}

@Suite("Apple's vocabulary only, when asked")
struct StrictVocabularyTests {
    @Test("vocabulary = .apple refuses a word outside Apple's lists, naming it and the closest; appends nothing")
    func strict() throws {
        let dir = TemporaryDirectory("strict")
        var options = Ledger.Options()
        options.vocabulary = .apple
        let ledger = try Ledger.open(at: dir.path, options: options)
        defer { ledger.close() }
        let id = try ledger.log(MoodDraft(valence: 0.1, labels: ["Calm"], associations: ["current_events", "selfCare"]))
            .entry.id
        let seq = ledger.lastSeq
        let cases: [(() throws -> Void, String, String)] = [
            ({ _ = try ledger.log(MoodDraft(valence: 0.2, labels: ["calmm"])) }, "labels", "\"calm\""),
            ({ _ = try ledger.log(MoodDraft(valence: 0.2, associations: ["famly"])) }, "associations", "\"family\""),
            ({ _ = try ledger.editLabels(id, .add("anxios")) }, "labels", "\"anxious\""),
            ({ _ = try ledger.log(MoodDraft(valence: 0.2, labels: ["tired"])) }, "labels", "\"drained\""),
            (
                {
                    _ = try ledger.replace(
                        id, with: MoodReplacement(labels: ["happy"], associations: ["exercise"], tags: [], notes: nil))
                }, "associations", "\"fitness\""
            ),
            (
                { _ = try ledger.log(contentsOf: [MoodDraft(score: 3), MoodDraft(score: 4, labels: ["meh"])]) },
                "labels", "closest"
            )
        ]
        for (command, field, closest) in cases {
            #expect {
                try command()
            } throws: { error in
                guard let error = error as? MoodError else { return false }
                return error.field == field && error.rule.contains("is not one of Apple's")
                    && error.rule.contains(closest)
            }
        }
        #expect(ledger.lastSeq == seq, "nothing appended")
        // A word an entry already has (an import's) stays through an edit of its other words.
        let imported = try Ledger.open(at: dir.sub("imported"))
        let kept = try imported.log(MoodDraft(valence: 0.2, labels: ["my own word"])).entry.id
        imported.close()
        let strict = try Ledger.open(at: dir.sub("imported"), options: options)
        defer { strict.close() }
        #expect(try strict.editLabels(kept, .add("calm")).labels.map(\.name) == ["my own word", "calm"])
        // The default keeps a user's word as chosen.
        let open = try Ledger.open(at: dir.sub("open"))
        defer { open.close() }
        #expect(try open.log(MoodDraft(valence: 0.2, labels: ["calmm"])).entry.labels.map(\.name) == ["calmm"])
    }
}
