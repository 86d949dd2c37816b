import Foundation
import MoodLedger
import TestSupport
import Testing

@testable import MoodLedgerServer

@Suite("The seed API over per-user ledgers", .serialized)
struct APITests {
    static let entry =
        #"{"valence":0.6,"labels":["happy"],"associations":["fitness"],"logged_at":"2026-11-20T14:30:00Z","source":"healthkit","source_id":"HK-MOOD-1","notes":"Felt great"}"#

    @Test("Auth: both headers needed; bad, expired and cross-user credentials are 401; A never sees B's entries")
    func auth() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let none = try h.request("GET", "/api/v1/mood", user: nil)
        #expect(none.status == 401 && none.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        let keyOnly = try h.request("GET", "/api/v1/mood", user: nil, headers: [("X-API-Key", h.keys["alice"]!)])
        #expect(keyOnly.status == 401)
        let tokenOnly = try h.request(
            "GET", "/api/v1/mood", user: nil, headers: [("Authorization", "Bearer \(h.token("alice"))")])
        #expect(tokenOnly.status == 401)
        let mixed = try h.request(
            "GET", "/api/v1/mood", user: nil,
            headers: [("Authorization", "Bearer \(h.token("alice"))"), ("X-API-Key", h.keys["bob"]!)])
        #expect(mixed.status == 401, "bob's key with alice's token")
        let expired = try h.request(
            "GET", "/api/v1/mood", user: nil,
            headers: [("Authorization", "Bearer \(h.token("alice", ttl: 1))"), ("X-API-Key", h.keys["alice"]!)])
        #expect(expired.status == 200)
        h.clock.advance(2000)
        let late = try h.request(
            "GET", "/api/v1/mood", user: nil,
            headers: [
                (
                    "Authorization",
                    "Bearer \(h.backend.credentials.token(for: "alice", now: h.clock.now / 1000 - 10, ttl: 5)!)"
                ),
                ("X-API-Key", h.keys["alice"]!)
            ])
        #expect(late.status == 401 && late.header("WWW-Authenticate")?.contains("invalid_token") == true)
        let forged = try h.request(
            "GET", "/api/v1/mood", user: nil,
            headers: [
                (
                    "Authorization",
                    "Bearer \(JWT.sign(subject: "bob", now: h.clock.now / 1000, ttl: 60, secret: [UInt8](repeating: 1, count: 32)))"
                ),
                ("X-API-Key", h.keys["bob"]!)
            ])
        #expect(forged.status == 401)
        // Isolation.
        let created = try h.request("POST", "/api/v1/mood", user: "alice", json: Self.entry)
        #expect(created.status == 201)
        let id = created.data["id"]!.stringValue!
        #expect(try h.request("GET", "/api/v1/mood/\(id)", user: "bob").status == 404)
        #expect(try h.request("PUT", "/api/v1/mood/\(id)", user: "bob", json: #"{"valence":0.1}"#).status == 404)
        #expect(try h.request("DELETE", "/api/v1/mood/\(id)", user: "bob").status == 404)
        #expect(try h.request("GET", "/api/v1/mood?from=2000-01-01", user: "bob").data["total"] == .int(0))
        #expect(try h.request("GET", "/api/v1/mood/\(id)", user: "alice").status == 200)
        // No path can escape DIR: user ids are validated.
        #expect(
            !Credentials.isValidUserName("../x") && !Credentials.isValidUserName("a/b")
                && !Credentials.isValidUserName(""))
    }

    @Test(
        "Create, read, list, update with If-Match, delete; source_id makes a create idempotent; shapes follow the seed")
    func crud() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let created = try h.request("POST", "/api/v1/mood", json: Self.entry)
        #expect(created.status == 201)
        let seedKeys: Set<String> = [
            "id", "valence", "labels", "associations", "logged_at", "source", "source_id", "notes",
            "created_at", "updated_at"
        ]
        guard case .object(let pairs) = created.data else { Issue.record("no data"); return }
        #expect(seedKeys.isSubset(of: Set(pairs.map(\.0))), "the seed's entry keys")
        #expect(created.data["updated_at"] == .null && created.json["success"] == .bool(true))
        let id = created.data["id"]!.stringValue!
        #expect(created.header("Location") == "/api/v1/mood/\(id)")
        let again = try h.request("POST", "/api/v1/mood", json: Self.entry)
        #expect(
            again.status == 200 && again.data["id"] == .string(id), "a repeated source_id returns the existing entry")
        let list = try h.request("GET", "/api/v1/mood?from=2026-11-01&to=2026-11-30&label=happy&limit=20")
        #expect(
            list.data["total"] == .int(1) && list.data["limit"] == .int(20) && list.data["has_more"] == .bool(false))
        // HealthKit entries are read-only through the API.
        #expect(try h.request("PUT", "/api/v1/mood/\(id)", json: #"{"valence":0.1}"#).status == 403)
        let manual = try h.request("POST", "/api/v1/mood", json: #"{"valence":-0.2,"labels":["stressed"],"notes":"x"}"#)
        let mid = manual.data["id"]!.stringValue!
        let etag = manual.header("ETag")!
        h.clock.advance(1000)
        let put = try h.request(
            "PUT", "/api/v1/mood/\(mid)", headers: [("If-Match", etag)],
            json: #"{"valence":0.3,"associations":["work"],"notes":null}"#)
        #expect(put.status == 200 && put.data["valence"] == .double(0.3) && put.data["notes"] == .null)
        #expect(put.data["labels"] == .array([.string("stressed")]), "fields not given are kept")
        #expect(put.data["updated_at"] != .null)
        // Lists reuse an entry's rendered text only while the entry is unchanged: the list shows the replacement.
        let listed = try h.request("GET", "/api/v1/mood?from=2000-01-01&limit=100").data["entries"]?.arrayValue ?? []
        let shown = listed.first { $0["id"] == .string(mid) }
        // (Single-entry answers carry `user_id` besides; lists do not.)
        func listForm(_ json: JSONValue) -> JSONValue {
            guard case .object(let pairs) = json else { return json }
            return .object(pairs.filter { $0.0 != "user_id" })
        }
        #expect(shown == listForm(put.data), "the list's entry is the replaced one")
        h.clock.advance(1000)
        let again2 = try h.request("PUT", "/api/v1/mood/\(mid)", json: #"{"notes":"changed"}"#)
        let relisted = try h.request("GET", "/api/v1/mood?from=2000-01-01&limit=100").data["entries"]?.arrayValue ?? []
        #expect(
            relisted.first { $0["id"] == .string(mid) } == listForm(again2.data)
                && again2.data["notes"] == .string("changed"))
        let stale = try h.request(
            "PUT", "/api/v1/mood/\(mid)", headers: [("If-Match", etag)], json: #"{"valence":0.9}"#)
        let current = again2.header("ETag")!
        #expect(stale.status == 412 && stale.json["error"]?["code"] == .string("precondition_failed"))
        #expect(try h.request("DELETE", "/api/v1/mood/\(mid)", headers: [("If-Match", etag)]).status == 412)
        #expect(try h.request("DELETE", "/api/v1/mood/\(mid)", headers: [("If-Match", current)]).status == 204)
        let afterDelete =
            try h.request("GET", "/api/v1/mood?from=2000-01-01&limit=100").data["entries"]?.arrayValue ?? []
        #expect(!afterDelete.contains { $0["id"] == .string(mid) })
        #expect(try h.request("GET", "/api/v1/mood/\(mid)").status == 404)
        #expect(try h.request("DELETE", "/api/v1/mood/\(mid)").status == 404)
        // Aggregates.
        let daily = try h.request("GET", "/api/v1/mood/daily/2026-11-20?include_entries=true")
        #expect(daily.data["entry_count"] == .int(1) && daily.data["entries"]?.arrayValue?.count == 1)
        let trends = try h.request("GET", "/api/v1/mood/trends?from=2026-11-01&to=2026-11-30")
        for key in [
            "start_date", "end_date", "total_entries", "average_valence", "trend_direction", "valence_statistics",
            "daily_data"
        ] {
            #expect(trends.data[key] != nil, "trends has \(key)")
        }
        let labels = try h.request("GET", "/api/v1/mood/analytics/labels?from=2026-11-01&to=2026-11-30")
        #expect(labels.data["period"]?["from"] == .string("2026-11-01") && labels.data["unique_labels"] == .int(1))
        #expect(labels.data["top_labels"]?.arrayValue?.first?["percentage"] == .double(100))
        let associations = try h.request("GET", "/api/v1/mood/analytics/associations?from=2026-11-01&to=2026-11-30")
        #expect(associations.data["top_associations"]?.arrayValue?.first?["valence_impact"] != nil)
        let head = try h.request("HEAD", "/api/v1/mood")
        #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") != "0")
    }

    @Test("Validation errors are 422 naming the field, never echoing notes; bodies must be JSON (415) and valid (400)")
    func validation() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let cases: [(String, String)] = [
            (#"{"valence":1.5,"notes":"secret words"}"#, "valence"),
            (#"{"labels":[]}"#, "labels"),
            (#"{"valence":0.1,"mood_score":7}"#, "valence"),
            (#"{"mood_score":11}"#, "mood_score"),
            (#"{"valence":0.1,"logged_at":"yesterday"}"#, "logged_at"),
            (#"{"valence":0.1,"source":"fax"}"#, "source"),
            (#"{"valence":0.1,"labels":["x"],"notes":"\#(String(repeating: "n", count: 600))"}"#, "notes"),
            ("[1,2]", "body")
        ]
        for (json, field) in cases {
            let response = try h.request("POST", "/api/v1/mood", json: json)
            #expect(response.status == 422, "\(field): \(response.text)")
            #expect(response.json["error"]?["field"] == .string(field), "\(response.text)")
            #expect(!response.text.contains("secret words"))
        }
        #expect(
            try h.request("POST", "/api/v1/mood", headers: [("Content-Type", "text/plain")], json: "{}").status == 415)
        #expect(try h.request("POST", "/api/v1/mood", json: "{oops").status == 400)
        #expect(
            try h.request("POST", "/api/v1/mood", json: #"{"mood_score":7,"whatever":1}"#).status == 201,
            "unknown fields ignored")
        #expect(try h.request("GET", "/api/v1/mood?limit=0").status == 422)
    }

    @Test(
        "Idempotency-Key is scoped by the route, not its spelling; keys expire after 24 hours while the ledger is open")
    func idempotencyScopeAndExpiry() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let key = ("Idempotency-Key", "k-spelling")
        let body = #"{"valence":0.4,"labels":["calm"]}"#
        let answers = try ["/api/v1/mood", "/api/v1/mood/", "/api/v1/%6dood"].map {
            try h.request("POST", $0, headers: [key], json: body)
        }
        #expect(answers.map(\.status) == [201, 201, 201] && Set(answers.map(\.body)).count == 1)
        #expect(answers.dropFirst().allSatisfy { $0.header("Idempotent-Replayed") == "true" })
        #expect(try h.request("GET", "/api/v1/mood?from=2000-01-01").data["total"] == .int(1), "one entry, not three")
        // 100 keyed writes: every key held, only the most recent first answers.
        for i in 0..<100 {
            _ = try h.request("POST", "/api/v1/mood", headers: [("Idempotency-Key", "k-\(i)")], json: body)
        }
        let lease = try h.backend.ledgers.lease("alice")
        #expect(lease.user.heldKeys.keys == 101 && lease.user.heldKeys.answers <= UserLedger.rememberedAnswersPerUser)
        // An old key's replay rebuilds its first answer from the log: the same bytes.
        let again = try h.request("POST", "/api/v1/mood", headers: [key], json: body)
        #expect(again.body == answers[0].body && again.header("Idempotent-Replayed") == "true")
        // A day later, with the ledger open all along, the key is forgotten: the request is new.
        h.clock.advance(UserLedger.idempotencyWindowMilliseconds + 1)
        let later = try h.request("POST", "/api/v1/mood", headers: [key], json: body)
        #expect(later.status == 201 && later.header("Idempotent-Replayed") == nil && later.body != answers[0].body)
        #expect(lease.user.heldKeys.keys == 1, "the day-old keys went; the new one stays")
    }

    @Test("Idempotency-Key: same key and body replays the first answer, also after a restart; another body is 422")
    func idempotency() throws {
        let dir = TemporaryDirectoryBox.make()
        var h = try ServerHarness(dir: dir)
        let key = ("Idempotency-Key", "k-1")
        let first = try h.request("POST", "/api/v1/mood", headers: [key], json: #"{"valence":0.4,"labels":["calm"]}"#)
        #expect(first.status == 201)
        let second = try h.request("POST", "/api/v1/mood", headers: [key], json: #"{"valence":0.4,"labels":["calm"]}"#)
        #expect(second.status == 201 && second.body == first.body, "the first status and body")
        let other = try h.request("POST", "/api/v1/mood", headers: [key], json: #"{"valence":0.5,"labels":["calm"]}"#)
        #expect(other.status == 422)
        let keys = h.keys
        h.stop()
        h = try ServerHarness(dir: dir)
        h.keys = keys
        defer { h.stop() }
        let replay = try h.request("POST", "/api/v1/mood", headers: [key], json: #"{"valence":0.4,"labels":["calm"]}"#)
        #expect(replay.status == 201 && replay.body == first.body, "replayed from the ledger after a restart")
        #expect(try h.request("GET", "/api/v1/mood?from=2000-01-01").data["total"] == .int(1), "applied once")
        let delete = ("Idempotency-Key", "k-del")
        let id = first.data["id"]!.stringValue!
        #expect(try h.request("DELETE", "/api/v1/mood/\(id)", headers: [delete]).status == 204)
        #expect(try h.request("DELETE", "/api/v1/mood/\(id)", headers: [delete]).status == 204, "not 404: replayed")
    }

    @Test("Rate limits per user with RateLimit headers; 429 with Retry-After; the window resets (fake clock)")
    func rateLimits() throws {
        let h = try ServerHarness {
            $0.writesPerHour = 2; $0.writeBurst = 2; $0.readsPerHour = 3
        }
        defer { h.stop() }
        for _ in 0..<2 { #expect(try h.request("POST", "/api/v1/mood", json: #"{"mood_score":5}"#).status == 201) }
        let limited = try h.request("POST", "/api/v1/mood", json: #"{"mood_score":5}"#)
        #expect(
            // The budget refills at 2 entries an hour: one entry is 30 minutes away.
            limited.status == 429 && limited.header("Retry-After") == "1800"
                && limited.header("RateLimit-Remaining") == "0")
        #expect(
            try h.request("POST", "/api/v1/mood", user: "bob", json: #"{"mood_score":5}"#).status == 201, "per user")
        let read = try h.request("GET", "/api/v1/mood")
        #expect(
            read.status == 200 && read.header("RateLimit-Limit") == "3" && read.header("RateLimit-Remaining") == "2")
        h.clock.advance(3_600_000)
        #expect(try h.request("POST", "/api/v1/mood", json: #"{"mood_score":5}"#).status == 201)
    }

    @Test("The batch route: each item as its own request, one result each; replays; an item's 422 its own; its cost")
    func batch() throws {
        let h = try ServerHarness {
            $0.writesPerHour = 1; $0.writeBurst = 4
        }
        defer { h.stop() }
        let body =
            #"{"items":[{"method":"POST","idempotency_key":"k1","body":{"valence":0.5,"labels":["calm"]}},"#
            + #"{"method":"POST","idempotency_key":"k2","body":{"valence":7}},{"method":"PATCH"}]}"#
        let first = try h.request("POST", "/api/v1/mood/batch", json: body)
        let results = try #require(first.data["results"]?.arrayValue)
        #expect(first.status == 200 && results.count == 3)
        #expect(results.map { $0["status"]?.intValue } == [201, 422, 422])
        #expect(results[1]["body"]?["error"]?["field"] == .string("valence"))
        #expect(results[2]["body"]?["error"]?["field"] == .string("items[2].method"))
        let id = try #require(results[0]["body"]?["data"]?["id"]?.stringValue)
        #expect(results[0]["etag"]?.stringValue != nil && results[0]["replayed"] == .bool(false))
        // The same batch again (its answer lost): the first answer, nothing created twice.
        let again = try #require(try h.request("POST", "/api/v1/mood/batch", json: body).data["results"]?.arrayValue)
        #expect(again[0]["replayed"] == .bool(true) && again[0]["body"]?["data"]?["id"] == .string(id))
        #expect(try h.request("GET", "/api/v1/mood?from=2000-01-01").data["entries"]?.arrayValue?.count == 1)
        // The budget: 4 entries in the bucket; the first batch drew 3, its resend only its one item that was not a
        // replay; a third has that item to charge and nothing left: refused whole.
        let spent = try h.request("POST", "/api/v1/mood/batch", json: body)
        #expect(
            spent.status == 429 && spent.header("RateLimit-Remaining") == "0" && spent.header("Retry-After") == "3600")
        // A wrong shape refuses the whole batch, naming the field.
        let shape = try h.request("POST", "/api/v1/mood/batch", json: #"{"items":[{"method":"POST","body":3}]}"#)
        #expect(shape.status == 422 && shape.json["error"]?["field"] == .string("items[0].body"))
    }

    @Test("Erasures have a budget of their own: past it 429 with Retry-After, nothing erased; plain deletes unaffected")
    func erasureBudget() throws {
        let h = try ServerHarness { $0.erasuresPerHour = 1 }
        defer { h.stop() }
        let ids = try (0..<3).map { _ in
            try #require(try h.request("POST", "/api/v1/mood", json: #"{"valence":0.2}"#).data["id"]?.stringValue)
        }
        let erased = try h.request("DELETE", "/api/v1/mood/\(ids[0])?erase=true")
        #expect(erased.status == 204, "\(erased.text)")
        let refused = try h.request("DELETE", "/api/v1/mood/\(ids[1])?erase=true")
        #expect(refused.status == 429 && refused.header("Retry-After") == "3600")
        #expect(try h.request("GET", "/api/v1/mood/\(ids[1])").status == 200, "nothing erased, nothing deleted")
        #expect(try h.request("DELETE", "/api/v1/mood/\(ids[2])").status == 204, "a plain delete is a write")
        h.clock.advance(3_600_000)
        #expect(try h.request("DELETE", "/api/v1/mood/\(ids[1])?erase=true").status == 204, "the next hour")
    }

    @Test("The changes feed lists upserts and deletions after a revision, with the current revision")
    func changes() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        var ids: [String] = []
        for i in 0..<4 {
            ids.append(
                try h.request("POST", "/api/v1/mood", json: #"{"valence":0.\#(i),"labels":["calm"]}"#).data["id"]!
                    .stringValue!)
        }
        let all = try h.request("GET", "/api/v1/mood/changes?since=0")
        #expect(all.data["changes"]?.arrayValue?.count == 4 && all.data["revision"] == .int(4))
        #expect(try h.request("DELETE", "/api/v1/mood/\(ids[1])").status == 204)
        _ = try h.request("PUT", "/api/v1/mood/\(ids[2])", json: #"{"valence":0.9}"#)
        let since = try h.request("GET", "/api/v1/mood/changes?since=4")
        let items = since.data["changes"]!.arrayValue!
        #expect(items.map { $0["id"]!.stringValue! } == [ids[1], ids[2]])
        #expect(items[0]["operation"] == .string("delete") && items[1]["operation"] == .string("upsert"))
        let paged = try h.request("GET", "/api/v1/mood/changes?since=0&limit=2")
        #expect(paged.data["has_more"] == .bool(true) && paged.data["changes"]?.arrayValue?.count == 2)
    }

    @Test("Wellness CRUD and analytics, and the progress records, over the same ledger")
    func wellnessAndProgress() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let created = try h.request(
            "POST", "/api/v1/wellness/mood-entries",
            json:
                #"{"valence":0.4,"labels":["happy"],"associations":[],"notes":"Great day!","logged_at":"2026-11-20T14:30:00Z","source":"manual"}"#
        )
        #expect(created.status == 201)
        let id = created.data["id"]!.stringValue!
        #expect(try h.request("GET", "/api/v1/wellness/mood-entries/\(id)").data["notes"] == .string("Great day!"))
        #expect(
            try h.request("PUT", "/api/v1/wellness/mood-entries/\(id)", json: #"{"valence":0.5}"#).data["valence"]
                == .double(0.5))
        let analytics = try h.request(
            "GET", "/api/v1/wellness/mood-entries/analytics?from=2026-11-01&to=2026-11-30&include_daily_breakdown=true")
        for key in ["period", "summary", "trends", "top_labels", "top_associations", "daily_aggregates"] {
            #expect(analytics.data[key] != nil, "wellness analytics has \(key)")
        }
        let progress = try h.request(
            "POST", "/api/v1/progress",
            json: #"{"type":"mood_score","quantity":8.0,"logged_at":"2026-11-21T10:00:00Z","notes":"run"}"#)
        #expect(
            progress.status == 201 && progress.data["quantity"] == .double(8)
                && progress.data["type"] == .string("mood_score"))
        let records = try h.request("GET", "/api/v1/progress?type=mood_score&from=2026-11-01&to=2026-11-30")
        #expect(records.data.arrayValue?.count == 2)
        #expect(try h.request("DELETE", "/api/v1/wellness/mood-entries/\(id)").status == 204)
        #expect(try h.request("POST", "/api/v1/progress", json: #"{"type":"steps","quantity":8}"#).status == 422)
    }
}

/// A temporary directory that outlives one harness (restart tests).
enum TemporaryDirectoryBox {
    static func make() -> TemporaryDirectory { TemporaryDirectory("server-restart") }
}

@Suite("The route table and the handlers agree")
struct RouteTableTests {
    @Test("Every method each route allows reaches a handler (never a 405 or a 500); OPTIONS lists the table's methods")
    func everyAllowedMethodIsHandled() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let id = try #require(
            try h.request("POST", "/api/v1/mood", json: #"{"valence":0.1}"#).data["id"]?.stringValue)
        let paths = [
            "/api/v1/mood", "/api/v1/mood/changes", "/api/v1/mood/batch", "/api/v1/mood/trends",
            "/api/v1/mood/analytics/labels", "/api/v1/mood/analytics/associations", "/api/v1/mood/daily/2026-11-20",
            "/api/v1/mood/\(id)", "/api/v1/wellness/mood-entries", "/api/v1/wellness/mood-entries/analytics",
            "/api/v1/wellness/mood-entries/\(id)", "/api/v1/progress"
        ]
        for path in paths {
            let route = try #require(Route.match(path), "\(path) is in the table")
            for method in route.allowed where method != "DELETE" {
                let body: String? = method == "GET" ? nil : (path.hasSuffix("/batch") ? #"{"items":[]}"# : "{}")
                let answer = try h.request(method, path, json: body)
                #expect(answer.status != 405 && answer.status < 500, "\(method) \(path): \(answer.status)")
            }
            let options = try h.request("OPTIONS", path)
            let allow = options.header("Allow") ?? ""
            for method in route.allowed { #expect(allow.contains(method), "\(path) Allow: \(allow)") }
        }
        #expect(try h.request("DELETE", "/api/v1/mood/\(id)").status == 204)
    }
}
