import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// Reads a vector file from `Specs/vectors/`.
func vector(_ name: String) throws -> JSONValue {
    try JSONParser.parse(String(contentsOfFile: Repository.root + "/Specs/vectors/" + name, encoding: .utf8))
}

@Suite("Specs/vectors: translation and vocabulary")
struct VectorTests {
    @Test("score ↔ valence, label adjustment, classification, Daylio levels")
    func translation() throws {
        let v = try vector("translation.json")
        for case let item in v["score_to_valence"]!.arrayValue! {
            let score = item["score"]!.intValue!
            #expect(Valence.from(score: score) == item["valence"]!.doubleValue!, "score \(score)")
            #expect(Valence.score(for: Valence.from(score: score)) == score, "score \(score) round trip")
        }
        for item in v["valence_to_score"]!.arrayValue! {
            let valence = Valence.quantized(item["valence"]!.doubleValue!)
            #expect(Valence.score(for: valence) == item["score"]!.intValue!, "valence \(valence)")
        }
        for item in v["label_adjustment"]!.arrayValue! {
            let labels = item["labels"]!.arrayValue!.map { MoodLabel.named($0.stringValue!) }
            let valence = Valence.quantized(item["valence"]!.doubleValue!)
            #expect(Valence.score(for: valence, labels: labels) == item["score"]!.intValue!, "\(item)")
            // A typed score is never adjusted.
            let typed = MoodEntry(
                id: .random(), loggedAt: LoggedAt(milliseconds: 0), valence: valence,
                enteredScore: 5, labels: labels)
            #expect(typed.score == 5)
        }
        for item in v["classification"]!.arrayValue! {
            let valence = item["valence"]!.doubleValue!
            #expect(Valence.classification(of: valence).wireName == item["class"]!.stringValue!, "valence \(valence)")
        }
        for item in v["daylio_levels"]!.arrayValue! {
            #expect(Valence.from(daylioLevel: item["level"]!.intValue!) == item["valence"]!.doubleValue!)
        }
    }

    @Test("Suggested labels and associations")
    func suggestions() throws {
        let v = try vector("translation.json")
        for item in v["suggested_labels"]!.arrayValue! {
            let labels = Suggestions.labels(forScore: item["score"]!.intValue!, notes: item["notes"]!.stringValue)
            #expect(labels.map(\.wireName) == item["labels"]!.arrayValue!.map { $0.stringValue! }, "\(item)")
        }
        for item in v["legacy_mood_kind"]!.arrayValue! {
            let labels = try item["labels"]!.arrayValue!.map { try MoodLabel.parse($0.stringValue!) }
            #expect(Suggestions.legacyMoodKind(for: labels).wireName == item["kind"]!.stringValue!)
        }
        for item in v["suggested_associations"]!.arrayValue! {
            let associations = Suggestions.associations(forNotes: item["notes"]!.stringValue)
            #expect(associations.map(\.wireName) == item["associations"]!.arrayValue!.map { $0.stringValue! })
        }
    }

    @Test("Apple's 38 labels and 18 associations with raw values, aliases, custom words")
    func vocabulary() throws {
        let v = try vector("vocabulary.json")
        let labels = v["labels"]!.arrayValue!
        #expect(labels.count == 38)
        #expect(MoodLabel.allCanonical.map(\.name) == labels.map { $0["name"]!.stringValue! })
        for item in labels {
            #expect(MoodLabel(appleRawValue: item["raw"]!.intValue!)?.name == item["name"]!.stringValue!)
        }
        let associations = v["associations"]!.arrayValue!
        #expect(associations.count == 18)
        for item in associations {
            let word = MoodAssociation(appleRawValue: item["raw"]!.intValue!)!
            #expect(word.name == item["name"]!.stringValue! && word.wireName == item["wire"]!.stringValue!)
        }
        for item in v["inputs"]!.arrayValue! {
            let input = item["input"]!.stringValue!
            let (name, raw, custom): (String, Int?, Bool)
            if item["kind"]!.stringValue! == "label" {
                let word = try MoodLabel.parse(input)
                (name, raw, custom) = (word.wireName, word.appleRawValue, word.isCustom)
            } else {
                let word = try MoodAssociation.parse(input)
                (name, raw, custom) = (word.wireName, word.appleRawValue, word.isCustom)
            }
            #expect(name == item["name"]!.stringValue!, "\(input)")
            #expect(raw == item["raw"]!.intValue, "\(input)")
            #expect(custom == (item["custom"]! == .bool(true)), "\(input)")
        }
        for item in v["errors"]!.arrayValue! {
            let input = item["input"]!.stringValue!
            #expect {
                _ =
                    item["kind"]!.stringValue! == "label"
                    ? try MoodLabel.parse(input).name
                    : try MoodAssociation.parse(input).name
            } throws: { ($0 as! MoodError).field == item["field"]!.stringValue! }
        }
    }

    @Test("Validation rules name the field, never echo notes, and match the vectors")
    func validation() throws {
        let v = try vector("validation.json")
        let now = ISO8601.parse(v["now"]!.stringValue!)!.milliseconds
        for item in v["cases"]!.arrayValue! {
            let name = item["name"]!.stringValue!
            let d = item["draft"]!
            var draft = MoodDraft()
            switch d["valence"] {
            case .string("nan")?: draft.valence = .nan
            case .string("inf")?: draft.valence = .infinity
            case let value?: draft.valence = value.doubleValue
            case nil: break
            }
            draft.score = d["score"]?.intValue
            draft.labels = d["labels"]?.arrayValue?.map { $0.stringValue! } ?? []
            draft.associations = d["associations"]?.arrayValue?.map { $0.stringValue! } ?? []
            draft.tags = d["tags"]?.arrayValue?.map { $0.stringValue! } ?? []
            if let count = d["tags_count"]?.intValue { draft.tags = (0..<count).map { "tag\($0)" } }
            draft.notes = d["notes"]?.stringValue
            if let repeatSpec = d["notes_repeat"]?.arrayValue {
                draft.notes = String(repeating: repeatSpec[0].stringValue!, count: repeatSpec[1].intValue!)
            }
            draft.loggedAt = d["logged_at"].flatMap { ISO8601.parse($0.stringValue!) }
            draft.sourceID = d["source_id"]?.stringValue
            // The vectors document the older apps' suggestions, which are stored only when asked for.
            draft.suggestLabels = true
            do {
                let entry = try MoodRules.validate(draft, now: now, newID: EntryID.random)
                #expect(item["ok"] == .bool(true), "\(name) should fail")
                if let labels = item["labels"]?.arrayValue {
                    #expect(entry.labels.map(\.wireName) == labels.map { $0.stringValue! }, "\(name)")
                }
                if let score = item["score"] { #expect(entry.score == score.intValue, "\(name)") }
                if let valence = item["valence"]?.doubleValue {
                    #expect(abs(entry.valence! - valence) < 1e-12, "\(name)")
                }
                if item["notes"] == .null { #expect(entry.notes == nil, "\(name)") }
            } catch {
                #expect(item["ok"] == nil, "\(name) should pass: \(error)")
                #expect(error.field == item["field"]?.stringValue, "\(name): \(error)")
                #expect(error.code.rawValue == item["code"]?.stringValue, "\(name)")
                if let notes = draft.notes, !notes.isEmpty {
                    #expect(!error.description.contains(notes), "\(name): the error must not echo the notes")
                }
            }
        }
    }
}
