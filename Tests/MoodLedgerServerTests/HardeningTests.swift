import Foundation
import MoodLedger
import TestSupport
import Testing

@testable import MoodLedgerServer

/// What a security review found loose in the reference server, each through real sockets.
@Suite("Server hardening", .serialized)
struct HardeningTests {
    static let body = #"{"valence":0.5,"labels":["calm"],"logged_at":"2026-11-20T14:30:00Z"}"#

    @Test("JSON is RFC 8259's: loose numbers and duplicate keys are 400 (naming the key); the valid forms pass")
    func strictJSON() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        for number in ["01", "+1", ".5", "1.", "00.5", "-", "1e", "0x1"] {
            let response = try h.request("POST", "/api/v1/mood", json: #"{"valence":\#(number)}"#)
            #expect(response.status == 400, "valence \(number): \(response.status)")
        }
        for number in ["0.5", "-0.5", "5e-1", "0", "-0"] {
            let response = try h.request("POST", "/api/v1/mood", json: #"{"valence":\#(number),"labels":["calm"]}"#)
            #expect(response.status == 201, "valence \(number): \(response.status)")
        }
        let duplicate = try h.request("POST", "/api/v1/mood", json: #"{"valence":0.1,"labels":["calm"],"valence":0.9}"#)
        #expect(
            duplicate.status == 400 && duplicate.json["error"]?["message"]?.stringValue?.contains("\"valence\"") == true
        )
        let both = try h.request("POST", "/api/v1/mood", json: #"{"score":7,"mood_score":7}"#)
        #expect(both.status == 422)
    }

    @Test("A known source_id or id does not skip validation: an invalid repeat is 422, a valid one is the stored entry")
    func validateBeforeDeduplicating() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let first = try h.request(
            "POST", "/api/v1/mood", json: #"{"valence":0.3,"labels":["calm"],"source":"backend","source_id":"dup-1"}"#)
        #expect(first.status == 201)
        let id = try #require(first.data["id"]?.stringValue)
        let labels = (0..<11).map { "\"w\($0)\"" }.joined(separator: ",")
        let tags = (0..<65).map { "\"t\($0)\"" }.joined(separator: ",")
        for bad in [
            #""valence":5"#, #""valence":0.3,"notes":"\#(String(repeating: "n", count: 501))""#,
            #""valence":0.3,"labels":[\#(labels)]"#, #""valence":0.3,"tags":[\#(tags)]"#
        ] {
            let bySource = try h.request(
                "POST", "/api/v1/mood", json: #"{\#(bad),"source":"backend","source_id":"dup-1"}"#)
            #expect(bySource.status == 422, "\(bad.prefix(30)): \(bySource.status)")
            let byID = try h.request("POST", "/api/v1/mood", json: #"{\#(bad),"id":"\#(id)"}"#)
            #expect(byID.status == 422, "\(bad.prefix(30)) by id: \(byID.status)")
        }
        let repeatValid = try h.request(
            "POST", "/api/v1/mood", json: #"{"valence":0.3,"labels":["calm"],"source":"backend","source_id":"dup-1"}"#)
        #expect(repeatValid.status == 200 && repeatValid.data["id"]?.stringValue == id)
    }

    @Test("Booleans in queries are true or false only; If-Match compares strongly; two credentials headers are 400")
    func queriesAndHeaders() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        for value in ["", "1", "TRUE", "yes"] {
            #expect(
                try h.request("GET", "/api/v1/mood/daily/2026-11-20?include_entries=\(value)").status == 422, "\(value)"
            )
        }
        #expect(try h.request("GET", "/api/v1/mood/daily/2026-11-20?include_entries=true").status == 200)
        let created = try h.request("POST", "/api/v1/mood", json: Self.body)
        let id = try #require(created.data["id"]?.stringValue)
        let etag = try #require(created.header("ETag"))
        let weak = try h.request(
            "PUT", "/api/v1/mood/\(id)", headers: [("If-Match", "W/" + etag)], json: #"{"valence":0.2}"#)
        #expect(weak.status == 412, "a weak tag never matches")
        let strong = try h.request(
            "PUT", "/api/v1/mood/\(id)", headers: [("If-Match", etag)], json: #"{"valence":0.2}"#)
        #expect(strong.status == 200)
        let twoTokens = try h.request("GET", "/api/v1/mood", headers: [("Authorization", "Bearer \(h.token("alice"))")])
        #expect(twoTokens.status == 400)
        let twoKeys = try h.request("GET", "/api/v1/mood", headers: [("X-API-Key", h.keys["alice"]!)])
        #expect(twoKeys.status == 400)
        let tokenOnly = try h.request(
            "GET", "/api/v1/mood", user: nil, headers: [("Authorization", "Bearer \(h.token("alice"))")])
        #expect(tokenOnly.status == 401 && tokenOnly.json["error"]?["message"]?.stringValue == "X-API-Key is required")
    }

    @Test(
        "Methods HTTP does not define are 501; a standard one a route does not take is 405 with the Allow list OPTIONS gives; /health is in the envelope"
    )
    func methods() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        for method in ["BREW", "PROPFIND", "M-SEARCH"] {
            #expect(try h.request(method, "/api/v1/mood").status == 501, "\(method)")
        }
        for method in ["PATCH", "TRACE"] {
            let response = try h.request(method, "/api/v1/mood")
            #expect(response.status == 405 && response.header("Allow") != nil, "\(method): \(response.status)")
        }
        let options = try h.request("OPTIONS", "/api/v1/mood")
        let notAllowed = try h.request("DELETE", "/api/v1/mood")
        #expect(notAllowed.status == 405 && notAllowed.header("Allow") == options.header("Allow"))
        #expect(options.header("Allow")?.contains("HEAD") == true)
        let health = try h.request("GET", "/health", user: nil)
        #expect(health.status == 200 && health.json["success"] == .bool(true) && health.data["status"] == .string("ok"))
    }
}

@Suite("Idempotent replays", .serialized)
struct ReplayTests {
    @Test(
        "A replayed POST and PUT answer with the first answer's ETag and Location; progress has no Location it cannot serve; after an erasure a replay is 410"
    )
    func replays() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let first = try h.request(
            "POST", "/api/v1/mood", headers: [("Idempotency-Key", "k-post")], json: HardeningTests.body)
        let again = try h.request(
            "POST", "/api/v1/mood", headers: [("Idempotency-Key", "k-post")], json: HardeningTests.body)
        #expect(first.status == 201 && again.status == 201 && again.header("Idempotent-Replayed") == "true")
        #expect(first.header("ETag") != nil && again.header("ETag") == first.header("ETag"))
        #expect(first.header("Location") != nil && again.header("Location") == first.header("Location"))
        #expect(again.body == first.body)
        let id = try #require(first.data["id"]?.stringValue)
        let put = try h.request(
            "PUT", "/api/v1/mood/\(id)", headers: [("Idempotency-Key", "k-put")], json: #"{"valence":-0.2}"#)
        let putAgain = try h.request(
            "PUT", "/api/v1/mood/\(id)", headers: [("Idempotency-Key", "k-put")], json: #"{"valence":-0.2}"#)
        #expect(put.status == 200 && putAgain.status == 200 && putAgain.header("ETag") == put.header("ETag"))
        let progress = try h.request("POST", "/api/v1/progress", json: #"{"type":"mood_score","quantity":7}"#)
        #expect(progress.status == 201 && progress.header("Location") == nil)
        // Erased since: the first answer (the entry's data) is gone, and the request is not applied again.
        #expect(try h.request("DELETE", "/api/v1/mood/\(id)?erase=true").status == 204)
        let afterErasure = try h.request(
            "POST", "/api/v1/mood", headers: [("Idempotency-Key", "k-post")], json: HardeningTests.body)
        #expect(afterErasure.status == 410 && afterErasure.json["error"]?["code"] == .string("erased"))
    }
}

extension ReplayTests {
    @Test("The same JSON written another way is the same request: a batch item re-sent alone is a replay, not a 422")
    func canonicalFingerprint() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let batch =
            #"{"items":[{"method":"POST","idempotency_key":"k-b","body":{"valence":0.5,"labels":["calm"],"notes":"n"}}]}"#
        let first = try #require(try h.request("POST", "/api/v1/mood/batch", json: batch).data["results"]?.arrayValue)
        #expect(first.first?["status"]?.intValue == 201)
        let id = try #require(first.first?["body"]?["data"]?["id"]?.stringValue)
        // The batch's answer was lost; another client re-sends the item alone, its keys in another order and spaced.
        let alone = try h.request(
            "POST", "/api/v1/mood", headers: [("Idempotency-Key", "k-b")],
            json: #"{ "notes": "n", "labels": [ "calm" ], "valence": 0.50 }"#)
        #expect(alone.status == 201 && alone.header("Idempotent-Replayed") == "true", "\(alone.status) \(alone.text)")
        #expect(alone.data["id"]?.stringValue == id)
        // Other content under the same key is still another request.
        let other = try h.request(
            "POST", "/api/v1/mood", headers: [("Idempotency-Key", "k-b")],
            json: #"{"valence":0.6,"labels":["calm"],"notes":"n"}"#)
        #expect(other.status == 422 && other.json["error"]?["code"] == .string("idempotency_key_reused"))
        #expect(try h.request("GET", "/api/v1/mood?from=2000-01-01").data["entries"]?.arrayValue?.count == 1)
    }
}

@Suite("Request targets and line endings", .serialized)
struct TargetTests {
    func exchange(_ harness: ServerHarness, _ raw: String) throws -> RawResponse { try harness.exchange(raw) }

    @Test(
        "absolute-form targets are served as their path; a fragment never reaches the query; a bare LF is 400 at once")
    func targets() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        #expect(
            try exchange(h, "GET http://localhost/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .status == 200)
        #expect(
            try exchange(h, "GET HTTP://localhost:8080/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status
                == 200)
        #expect(try exchange(h, "GET http:///health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status == 400)
        let auth = h.auth("alice").map { "\($0.0): \($0.1)\r\n" }.joined()
        let fragment = try exchange(
            h,
            "GET /api/v1/mood/daily/2026-11-20?include_entries=true#x=1 HTTP/1.1\r\nHost: a\r\n\(auth)Connection: close\r\n\r\n"
        )
        #expect(fragment.status == 200, "the fragment is not part of include_entries")
        let started = Date()
        let bare = try exchange(h, "GET /health HTTP/1.1\nHost: a\n\n")
        #expect(
            bare.status == 400 && Date().timeIntervalSince(started) < 5, "answered at once, not after the read timeout")
    }
}

@Suite("A connection that cannot make progress", .serialized)
struct StuckConnectionTests {
    @Test("Chunk extensions that fill the input buffer without completing a request: 413 and the connection closed")
    func fullBuffer() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let client = try RawClient(port: h.server.port)
        defer { client.close() }
        let head =
            "POST /api/v1/mood HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        let chunk = "1;" + String(repeating: "e", count: 1000) + "\r\n{\r\n"
        try client.send(head + String(repeating: chunk, count: 1_200))
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(client.closedByPeer(), "closed after the 413 (read until the end of the stream)")
    }
}

@Suite("HTTP parser corpus")
struct HTTPCorpusTests {
    @Test(
        "The fuzz corpus of the HTTP parser, replayed: a framed request frames alike alone, and each prefix asks for more"
    )
    func corpus() throws {
        var inputs: [(String, [UInt8])] = []
        for folder in ["Seeds", "Regressions"] {
            let dir = Repository.root + "/Tests/Fuzz/\(folder)/http"
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted()
            where name != ".keep" {
                inputs.append((name, Bytes.read(dir + "/" + name)))
            }
        }
        #expect(inputs.count >= 4, "the HTTP corpus is there")
        let parser = HTTPParser(limits: HTTPParser.Limits())
        for (name, bytes) in inputs {
            try bytes.withUnsafeBytes { buffer in
                guard case .request(let request, let consumed) = parser.parse(buffer) else { return }
                for cut in 0..<consumed {
                    guard case .needMore = parser.parse(UnsafeRawBufferPointer(rebasing: buffer[0..<cut])) else {
                        Issue.record("\(name): a prefix of \(cut) bytes did not ask for more")
                        return
                    }
                }
                let alone = parser.parse(UnsafeRawBufferPointer(rebasing: buffer[0..<consumed]))
                guard case .request(let again, consumed) = alone else { throw CorpusError(name: name) }
                #expect(
                    again.method == request.method && again.path == request.path && again.body == request.body,
                    "\(name)")
            }
        }
    }

    struct CorpusError: Error { var name: String }

    @Test("A request's parts as parsed: the query's pairs decoded, header names lowercased, values without OWS")
    func parsedParts() throws {
        let raw = Array(
            ("GET /api/v1/mood?a=1&&b=%20x+y&c&=&d=%zz&e=1=2&f=%C3%A9#frag HTTP/1.1\r\nHost: h\r\n"
                + "X-Mixed-Case:\t  spaced value \t\r\nX-Empty:   \r\nX-Latin: caf\u{E9}\r\n\r\n").utf8)
        let parser = HTTPParser(limits: HTTPParser.Limits())
        let parsed = raw.withUnsafeBytes { parser.parse($0) }
        guard case .request(let request, let consumed) = parsed else {
            Issue.record("not a request: \(parsed)")
            return
        }
        #expect(consumed == raw.count)
        #expect(request.path == "/api/v1/mood" && request.query == "a=1&&b=%20x+y&c&=&d=%zz&e=1=2&f=%C3%A9")
        #expect(
            request.queryItems.map { "\($0.name)=\($0.value)" } == [
                "a=1", "b= x y", "c=", "=", "d=", "e=1=2", "f=\u{E9}"
            ])
        #expect(request.header("x-mixed-case") == "spaced value")
        #expect(request.header("x-empty") == "")
        #expect(request.header("x-latin") == "caf\u{E9}")
        #expect(request.headers.map(\.name) == ["host", "x-mixed-case", "x-empty", "x-latin"])
        // A byte that is not UTF-8 in a value is read as ISO-8859-1.
        let latin1 = Array("GET / HTTP/1.1\r\nHost: h\r\nX-Old: caf".utf8) + [0xE9] + Array("\r\n\r\n".utf8)
        guard case .request(let old, _) = latin1.withUnsafeBytes({ parser.parse($0) }) else {
            Issue.record("a Latin-1 value was refused")
            return
        }
        #expect(old.header("x-old") == "caf\u{E9}")
    }
}

@Suite("Replays and the write budget", .serialized)
struct ReplayBudgetTests {
    @Test("Once the write budget is spent, a new write is 429 but the replay of an acknowledged one is its answer")
    func replayAfterBudget() throws {
        let h = try ServerHarness {
            $0.writesPerHour = 2
            $0.writeBurst = 2
        }
        defer { h.stop() }
        let first = try h.request(
            "POST", "/api/v1/mood", headers: [("Idempotency-Key", "b-1")], json: HardeningTests.body)
        #expect(first.status == 201)
        #expect(
            try h.request("POST", "/api/v1/mood", headers: [("Idempotency-Key", "b-2")], json: HardeningTests.body)
                .status == 201)
        #expect(
            try h.request("POST", "/api/v1/mood", headers: [("Idempotency-Key", "b-3")], json: HardeningTests.body)
                .status == 429)
        let replay = try h.request(
            "POST", "/api/v1/mood", headers: [("Idempotency-Key", "b-1")], json: HardeningTests.body)
        #expect(replay.status == 201 && replay.header("Idempotent-Replayed") == "true" && replay.body == first.body)
    }
}

@Suite("Refusals that say what to do")
struct RefusalWordingTests {
    @Test("A genuine token that has only expired is named as expired; every other refusal still reads alike")
    func expiredToken() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let token = h.token("alice", ttl: 60)
        let key = try #require(h.keys["alice"])
        let headers = [("Authorization", "Bearer \(token)"), ("X-API-Key", key)]
        #expect(try h.request("GET", "/api/v1/mood", user: nil, headers: headers).status == 200)
        h.clock.advance(61_000)
        let expired = try h.request("GET", "/api/v1/mood", user: nil, headers: headers)
        #expect(expired.status == 401)
        #expect(expired.json["error"]?["message"]?.stringValue?.contains("expired") == true, "\(expired.text)")
        #expect(expired.header("WWW-Authenticate")?.contains("expired") == true)
        // The same expired token with another user's key is no genuine pair: the common refusal, which names nothing.
        let other = try h.request(
            "GET", "/api/v1/mood", user: nil,
            headers: [("Authorization", "Bearer \(token)"), ("X-API-Key", try #require(h.keys["bob"]))])
        #expect(other.status == 401 && other.json["error"]?["message"]?.stringValue?.contains("expired") == false)
    }
}
