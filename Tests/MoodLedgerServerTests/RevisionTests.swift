import Foundation
import MoodLedger
import TestSupport
import Testing

@testable import MoodLedgerServer

/// An entry's revision is a promise: the same on every open of the data directory, never lower than one answered.
@Suite("Revisions across restarts")
struct RevisionTests {
    /// Every entry's ETag and the feed's revisions, as one server answers them.
    private func revisions(_ h: ServerHarness, _ ids: [String]) throws -> [String: String] {
        var seen: [String: String] = [:]
        for id in ids {
            let answer = try h.request("GET", "/api/v1/mood/\(id)")
            seen[id] = answer.status == 200 ? answer.header("ETag") ?? "none" : "HTTP \(answer.status)"
        }
        let feed = try h.request("GET", "/api/v1/mood/changes?since=0&limit=500")
        for change in feed.data["changes"]?.arrayValue ?? [] {
            seen["feed " + (change["id"]?.stringValue ?? "?")] = change["revision"].map { "\($0)" } ?? "none"
        }
        seen["feed"] = feed.data["revision"].map { "\($0)" } ?? "none"
        return seen
    }

    @Test("ETags and the changes feed answer the same revisions after a restart, keyed writes and erasures included")
    func sameAfterRestart() throws {
        let dir = TemporaryDirectory("revisions")
        var ids: [String] = []
        let before: [String: String]
        var keys: [String: String] = [:]
        do {
            let h = try ServerHarness(dir: dir)
            defer { h.stop() }
            keys = h.keys
            for i in 0..<5 {
                // Keyed and unkeyed writes: a keyed write's batch ends with its idempotency record.
                let headers = i % 2 == 0 ? [("Idempotency-Key", "create-\(i)")] : []
                let created = try h.request(
                    "POST", "/api/v1/mood", headers: headers, json: #"{"valence":0.\#(i),"labels":["calm"]}"#)
                #expect(created.status == 201)
                ids.append(created.data["id"]!.stringValue!)
            }
            let put = try h.request(
                "PUT", "/api/v1/mood/\(ids[1])", headers: [("Idempotency-Key", "put-1")], json: #"{"notes":"x"}"#)
            #expect(put.status == 200)
            #expect(
                try h.request("DELETE", "/api/v1/mood/\(ids[2])", headers: [("Idempotency-Key", "d")]).status == 204)
            #expect(try h.request("DELETE", "/api/v1/mood/\(ids[3])?erase=true").status == 204)
            before = try revisions(h, ids)
            #expect(before[ids[1]] == put.header("ETag"))
        }
        let h = try ServerHarness(dir: dir)
        defer { h.stop() }
        h.keys = keys
        let after = try revisions(h, ids)
        #expect(after == before, "revisions changed across a restart: \(before) → \(after)")
    }

    @Test(
        "A write that replaced another device's edit says so in the feed, before and after a restart; a bad note is 422"
    )
    func replacedNotes() throws {
        let dir = TemporaryDirectory("replaced")
        let id: String
        var keys: [String: String] = [:]
        do {
            let h = try ServerHarness(dir: dir)
            defer { h.stop() }
            keys = h.keys
            id = try #require(
                try h.request("POST", "/api/v1/mood", json: #"{"valence":0.1,"notes":"a"}"#).data["id"]?.stringValue)
            for bad in ["x; fields=notes", "0; fields=notes", "3; fields=", "3; fields=notes,colour", "3 fields=notes"]
            {
                let refused = try h.request(
                    "PUT", "/api/v1/mood/\(id)", headers: [("MoodLedger-Replaces", bad)], json: #"{"notes":"b"}"#)
                #expect(refused.status == 422 && refused.text.contains("MoodLedger-Replaces"), "\(bad)")
            }
            let put = try h.request(
                "PUT", "/api/v1/mood/\(id)", headers: [("MoodLedger-Replaces", "1; fields=notes,mood")],
                json: #"{"notes":"b"}"#)
            #expect(put.status == 200)
            let change = try h.request("GET", "/api/v1/mood/changes?since=0").data["changes"]?.arrayValue?.first
            #expect(change?["replaced"]?["revision"] == .int(1))
            // In the fields' bit order (`events.md`), not as sent.
            #expect(change?["replaced"]?["fields"] == .array([.string("mood"), .string("notes")]))
        }
        let h = try ServerHarness(dir: dir)
        defer { h.stop() }
        h.keys = keys
        let change = try h.request("GET", "/api/v1/mood/changes?since=0").data["changes"]?.arrayValue?.first
        #expect(change?["replaced"]?["fields"] == .array([.string("mood"), .string("notes")]))
        // A later change without a note is plain again.
        #expect(try h.request("PUT", "/api/v1/mood/\(id)", json: #"{"notes":"c"}"#).status == 200)
        let later = try h.request("GET", "/api/v1/mood/changes?since=0").data["changes"]?.arrayValue?.first
        #expect(later?["replaced"] == nil)
    }
}
