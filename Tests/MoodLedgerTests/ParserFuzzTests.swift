import TestSupport
import Testing

@testable import MoodInterchange
@testable import MoodLedger
@testable import MoodModel

@Suite("Parsers never trap on hostile input")
struct ParserFuzzTests {
    /// Mutates a valid document: flips, inserts and deletes bytes.
    static func mutate(_ text: String, _ random: inout SeededRandom) -> String {
        var bytes = Array(text.utf8)
        for _ in 0..<Int.random(in: 1...6, using: &random) {
            guard !bytes.isEmpty else { break }
            let index = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0: bytes[index] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes.insert(Array("\",{}[]:\n\\<>&|".utf8).randomElement(using: &random)!, at: index)
            default: bytes.remove(at: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("Mutated JSON, CSV and Daylio files either parse or fail with an ImportError")
    func fuzz() {
        var random = SeededRandom()
        let json =
            #"{"data": {"entries": [{"valence": 0.42, "labels": ["calm", 17], "logged_at": "2025-06-01T07:15:00+01:00", "notes": "a\n\u00e9"}]}}"#
        let daylio =
            "full_date,date,weekday,time,mood,activities,note_title,note\n2024-01-01,1 Jan,Mon,10:00 pm,rad,\"work | x\",,\"<br>hi \"\"there\"\"\"\n"
        for _ in 0..<3_000 {
            let mutatedJSON = Self.mutate(json, &random)
            _ = try? JSONParser.parse(mutatedJSON)
            for format in [ImportFormat.moodAPI, .healthkit, .progress, .legacyMood] {
                _ = try? Importer.plan(mutatedJSON, format: format)
            }
            let mutatedCSV = Self.mutate(daylio, &random)
            _ = try? CSVReader.records(mutatedCSV)
            _ = try? Importer.plan(mutatedCSV, format: .daylio)
            _ = ISO8601.parse(Self.mutate("2025-06-01T07:15:00.123+01:00", &random))
        }
        // Deep nesting is refused, not a stack overflow.
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(String(repeating: "[", count: 100_000)) }
    }
}
