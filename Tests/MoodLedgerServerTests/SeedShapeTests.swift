import Foundation
import MoodLedger
import TestSupport
import Testing

@testable import MoodLedgerServer

@Suite("Server JSON against the seed API's own examples")
struct SeedShapeTests {
    /// Every key of `seed` is in `ours` with the same kind, recursively (arrays: their first elements).
    static func missing(_ seed: JSONValue, in ours: JSONValue, path: String = "") -> [String] {
        switch (seed, ours) {
        case (.object(let pairs), .object):
            return pairs.flatMap { key, value -> [String] in
                guard let mine = ours[key] else { return ["\(path).\(key) missing"] }
                return missing(value, in: mine, path: path + "." + key)
            }
        case (.array(let items), .array(let mine)):
            guard let first = items.first else { return [] }
            guard let sample = mine.first else { return ["\(path)[] empty in ours: cannot compare"] }
            return missing(first, in: sample, path: path + "[]")
        case (.int, .int), (.int, .double), (.double, .double), (.double, .int), (.string, .string), (.bool, .bool):
            return []
        case (_, .null), (.null, _):
            return []  // a value the seed shows may be null in ours (e.g. no valence), and the reverse
        default:
            return ["\(path): seed \(seed.serialized()) vs ours \(ours.serialized().prefix(60))"]
        }
    }

    @Test("Create, list, daily, trends, label and association analytics carry every key of the seed's examples")
    func shapes() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let fixture = try JSONParser.parse(
            String(contentsOfFile: Repository.root + "/Tests/Server/seed-examples.json", encoding: .utf8))
        let created = try h.request(
            "POST", "/api/v1/mood",
            json:
                #"{"valence": 0.6, "labels": ["happy", "excited"], "associations": ["fitness", "friends"], "logged_at": "2026-11-20T14:30:00Z", "source": "healthkit", "source_id": "HK-MOOD-1", "notes": "after a run"}"#
        )
        _ = try h.request(
            "POST", "/api/v1/mood",
            json:
                #"{"valence": -0.4, "labels": ["stressed"], "associations": ["work"], "logged_at": "2026-11-20T18:00:00Z"}"#
        )
        let answers: [String: JSONValue] = [
            "POST /api/v1/mood": created.json,
            "GET /api/v1/mood": try h.request("GET", "/api/v1/mood?from=2026-11-01&to=2026-11-30").json,
            "GET /api/v1/mood/daily/{date}": try h.request("GET", "/api/v1/mood/daily/2026-11-20?include_entries=true")
                .json,
            "GET /api/v1/mood/trends": try h.request("GET", "/api/v1/mood/trends?from=2026-11-01&to=2026-11-30").json,
            "GET /api/v1/mood/analytics/labels": try h.request(
                "GET", "/api/v1/mood/analytics/labels?from=2026-11-01&to=2026-11-30"
            ).json,
            "GET /api/v1/mood/analytics/associations": try h.request(
                "GET", "/api/v1/mood/analytics/associations?from=2026-11-01&to=2026-11-30"
            ).json
        ]
        for example in fixture["examples"]!.arrayValue! {
            let route = example["route"]!.stringValue!
            let ours = try #require(answers[route], "\(route)")
            #expect(
                Self.missing(example["example"]!, in: ours).isEmpty,
                "\(route): \(Self.missing(example["example"]!, in: ours))")
        }
    }
}
