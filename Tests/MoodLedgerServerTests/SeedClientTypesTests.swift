// swift-format-ignore-file: AlwaysUseLowerCamelCase

// The seeds' types are copied as their apps declare them, snake_case properties included.
import Foundation
import MoodLedger
import Testing

@testable import MoodLedgerServer

/// The seeds' own client types (as their documents and apps declare them), decoding every answer of their routes with
/// `JSONDecoder` and `.iso8601` dates: a missing key or a wrong type fails here, not in an app.
@Suite("The seeds' app types decode the reference server's answers")
struct SeedClientTypesTests {
    // Seed 002 (the lume app, /api/v1/wellness/mood-entries).
    struct MoodEntryData: Decodable {
        let id: String
        let user_id: String
        let valence: Double
        let labels: [String]
        let associations: [String]
        let notes: String?
        let logged_at: Date
        let source: String
        let source_id: String?
        let is_healthkit: Bool
        let created_at: Date
        let updated_at: Date
    }
    struct CreateMoodResponse: Decodable { let data: MoodEntryData }
    struct MoodListData: Decodable {
        let entries: [MoodEntryData]
        let total: Int
        let limit: Int
        let offset: Int
        let has_more: Bool
    }
    struct FetchMoodsResponse: Decodable { let data: MoodListData }

    // Seed 001 (/api/v1/mood).
    struct MoodLogData: Decodable {
        let id: String
        let user_id: String
        let valence: Double?
        let labels: [String]
        let associations: [String]
        let logged_at: Date
        let source: String
        let source_id: String?
        let notes: String?
        let created_at: Date
        let updated_at: Date?
    }
    struct MoodLogResponse: Decodable {
        let success: Bool
        let data: MoodLogData
    }
    struct MoodListItem: Decodable {
        let id: String
        let valence: Double?
        let labels: [String]
        let associations: [String]
        let logged_at: Date
        let source: String
    }
    struct MoodList: Decodable {
        let entries: [MoodListItem]
        let total: Int
        let limit: Int
        let offset: Int
        let has_more: Bool
    }
    struct MoodListResponse: Decodable {
        let success: Bool
        let data: MoodList
    }

    // Seed 004 (/api/v1/progress).
    struct ProgressData: Decodable {
        let id: String
        let user_id: String
        let type: String
        let quantity: Double
        let logged_at: Date
        let notes: String?
        let created_at: Date
        let updated_at: Date
    }
    struct ProgressResponse: Decodable {
        let success: Bool
        let data: ProgressData
        let error: String?
    }

    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8]) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(type, from: Data(body))
    }

    @Test("Seed 002: create, get, update and list decode with its types; words come back as sent")
    func wellness() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let created = try h.request(
            "POST", "/api/v1/wellness/mood-entries",
            json:
                #"{"valence":0.4,"labels":["energetic","happy"],"associations":["exercise","social","currentEvents"],"notes":"Great day!","logged_at":"2025-01-15T14:30:00Z","source":"manual"}"#
        )
        #expect(created.status == 201, "\(created.text)")
        let entry = try Self.decode(CreateMoodResponse.self, created.body).data
        #expect(entry.labels == ["energetic", "happy"], "a user's word is kept as they chose it")
        #expect(entry.associations == ["exercise", "social", "currentEvents"])
        #expect(!entry.is_healthkit && entry.updated_at == entry.created_at && entry.user_id == "alice")
        let read = try Self.decode(
            CreateMoodResponse.self, try h.request("GET", "/api/v1/wellness/mood-entries/\(entry.id)").body)
        #expect(read.data.labels.first == "energetic", "the app takes its mood kind from the first label")
        let updated = try h.request(
            "PUT", "/api/v1/wellness/mood-entries/\(entry.id)",
            json:
                #"{"valence":0.5,"labels":["tired"],"associations":[],"notes":null,"logged_at":"2025-01-15T14:30:00Z","source":"manual"}"#
        )
        #expect(updated.status == 200, "\(updated.text)")
        #expect(try Self.decode(CreateMoodResponse.self, updated.body).data.labels == ["tired"])
        let list = try h.request("GET", "/api/v1/wellness/mood-entries?from=2025-01-01&to=2025-01-31")
        let page = try Self.decode(FetchMoodsResponse.self, list.body).data
        #expect(page.entries.map(\.id) == [entry.id] && page.total == 1)
        // Filters and analytics count the stored words.
        let filtered = try h.request("GET", "/api/v1/mood?from=2025-01-01&to=2025-01-31&label=tired")
        #expect(try Self.decode(MoodListResponse.self, filtered.body).data.total == 1)
    }

    @Test("Seed 001: create (also valence-only with labels: []), get and list decode; the words it sent are echoed")
    func moodAPI() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let created = try h.request(
            "POST", "/api/v1/mood",
            json:
                #"{"valence":0.6,"labels":["happy","energetic"],"associations":["exercise","social"],"logged_at":"2024-01-15T14:30:00Z","source":"healthkit","source_id":"HK-MOOD-550e8400-e29b-41d4-a716-446655440000","notes":"Felt great after morning workout"}"#
        )
        #expect(created.status == 201, "\(created.text)")
        let entry = try Self.decode(MoodLogResponse.self, created.body).data
        #expect(entry.labels == ["happy", "energetic"] && entry.associations == ["exercise", "social"])
        #expect(entry.updated_at == nil, "seed 001: null until edited")
        let fitIQ = try h.request(
            "POST", "/api/v1/mood",
            json: #"{"valence":-0.3,"labels":[],"associations":[],"logged_at":"2024-01-16T09:00:00Z","notes":null}"#)
        #expect(fitIQ.status == 201, "a valence-only entry with labels: []: \(fitIQ.text)")
        _ = try Self.decode(MoodLogResponse.self, fitIQ.body)
        let alone = try h.request("POST", "/api/v1/mood", json: #"{"labels":[]}"#)
        #expect(alone.status == 422 && alone.text.contains("labels"))
        _ = try Self.decode(MoodLogResponse.self, try h.request("GET", "/api/v1/mood/\(entry.id)").body)
        let list = try h.request("GET", "/api/v1/mood?from=2024-01-01&to=2024-01-31")
        #expect(try Self.decode(MoodListResponse.self, list.body).data.entries.count == 2)
    }

    @Test("Seed 004: a progress record decodes with its type, user_id and the envelope's error")
    func progress() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let created = try h.request(
            "POST", "/api/v1/progress",
            json:
                #"{"type":"mood_score","quantity":8.0,"logged_at":"2025-01-27T10:00:00Z","notes":"Feeling energetic after morning run"}"#
        )
        #expect(created.status == 201, "\(created.text)")
        #expect(created.json["error"] == .null, "the envelope carries error: null")
        let record = try Self.decode(ProgressResponse.self, created.body).data
        #expect(record.user_id == "alice" && record.quantity == 8 && record.updated_at == record.created_at)
    }
}
