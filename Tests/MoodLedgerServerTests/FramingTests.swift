import Foundation
import TestSupport
import Testing

@testable import MoodLedgerServer

/// RFC 9112 framing over raw sockets (`Specs/server.md`, *HTTP*).
@Suite("HTTP/1.1 framing on raw sockets", .serialized)
struct FramingTests {
    func exchange(_ harness: ServerHarness, _ raw: String) throws -> RawResponse { try harness.exchange(raw) }

    @Test("Each malformed framing gets its status; a good request still works on the same server")
    func malformed() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let cases: [(String, Int, String)] = [
            ("GET /health HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n", 400, "obs-fold"),
            ("GET /health HTTP/1.1\r\n\r\n", 400, "no Host"),
            ("GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "two Hosts"),
            ("POST /api/v1/mood HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello", 400, "CL sign"),
            (
                "POST /api/v1/mood HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400,
                "differing CL"
            ),
            (
                "POST /api/v1/mood HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                400, "CL+TE"
            ),
            ("POST /api/v1/mood HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "gzip"),
            ("POST /api/v1/mood HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n", 413, "body cap"),
            ("GET /\(String(repeating: "a", count: 9000)) HTTP/1.1\r\nHost: a\r\n\r\n", 414, "long target"),
            ("GET /health HTTP/2.0\r\nHost: a\r\n\r\n", 505, "HTTP/2"),
            ("GET /health HTTP/1.1\r\nHost : a\r\n\r\n", 400, "space before colon"),
            ("GET /health HTTP/1.1\r\nHost: a\r\nExpect: teapot\r\n\r\n", 417, "odd Expect"),
            ("GET health HTTP/1.1\r\nHost: a\r\n\r\n", 400, "not origin-form"),
            ("DELETE /health HTTP/1.1\r\nHost: a\r\n\r\n", 405, "405")
        ]
        for (raw, status, name) in cases {
            let response = try exchange(h, raw)
            #expect(response.status == status, "\(name): \(response.status) \(response.text)")
            #expect(response.header("Date") != nil && response.header("Content-Length") != nil, "\(name)")
        }
        let allowed = try exchange(h, "DELETE /health HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(allowed.header("Allow") == "GET, HEAD, OPTIONS")
        #expect(try exchange(h, "GET /health HTTP/1.1\r\nHost: a\r\n\r\n").status == 200)
    }

    @Test("A 10 MB header block is refused with 431 and the connection closed, without buffering it all")
    func hugeHeaders() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let client = try RawClient(port: h.server.port)
        defer { client.close() }
        try client.send("GET /health HTTP/1.1\r\nHost: a\r\n")
        let line = "X-Filler: " + String(repeating: "x", count: 1000) + "\r\n"
        var status: Int?
        for _ in 0..<10_000 {
            do { try client.send(line) } catch { break }  // the server may close mid-send
        }
        status = try? client.readResponse().status
        #expect(status == 431)
    }

    @Test("Chunked bodies are decoded; Content-Length bodies work; Expect: 100-continue gets 100 first")
    func bodies() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let auth = h.auth("alice").map { "\($0.0): \($0.1)\r\n" }.joined()
        let json = #"{"valence":0.25,"labels":["calm"]}"#
        let chunked = try exchange(
            h,
            "POST /api/v1/mood HTTP/1.1\r\nHost: a\r\n\(auth)Content-Type: application/json\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n5\r\n\(json.prefix(5))\r\n\(String(json.count - 5, radix: 16));ext=1\r\n\(json.dropFirst(5))\r\n0\r\nTrailer: x\r\n\r\n"
        )
        #expect(chunked.status == 201, "\(chunked.text)")
        let client = try RawClient(port: h.server.port)
        defer { client.close() }
        try client.send(
            "POST /api/v1/mood HTTP/1.1\r\nHost: a\r\n\(auth)Content-Type: application/json\r\nExpect: 100-continue\r\n"
                + "Content-Length: \(json.utf8.count)\r\n\r\n")
        #expect(try client.readResponse().status == 100)
        try client.send(json)
        #expect(try client.readResponse().status == 201)
    }

    @Test("Keep-alive serves several requests; pipelined requests are answered in order; Connection: close closes")
    func keepAliveAndPipelining() throws {
        let h = try ServerHarness()
        defer { h.stop() }
        let client = try RawClient(port: h.server.port)
        defer { client.close() }
        let auth = h.auth("alice").map { "\($0.0): \($0.1)\r\n" }.joined()
        var pipelined = ""
        for i in 1...5 {
            let json = #"{"valence":0.\#(i),"labels":["calm"],"source":"import","source_id":"p\#(i)"}"#
            pipelined +=
                "POST /api/v1/mood HTTP/1.1\r\nHost: a\r\n\(auth)Content-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n\r\n\(json)"
        }
        pipelined +=
            "GET /api/v1/mood?limit=100&from=2000-01-01 HTTP/1.1\r\nHost: a\r\n\(auth)Connection: close\r\n\r\n"
        try client.send(pipelined)
        for i in 1...5 {
            let response = try client.readResponse()
            #expect(response.status == 201)
            #expect(response.data["source_id"] == .string("p\(i)"), "answered in order")
        }
        let list = try client.readResponse()
        #expect(list.data["total"] == .int(5))
        #expect(list.header("Connection") == "close")
        #expect(client.closedByPeer())
    }

    @Test("A slowloris client is cut off by the header timeout; others are served meanwhile")
    func slowloris() throws {
        let h = try ServerHarness { $0.http.headerTimeout = 0.5 }
        defer { h.stop() }
        let slow = try RawClient(port: h.server.port)
        defer { slow.close() }
        try slow.send("GET /health HTTP/1.1\r\nHost: a\r\n")
        #expect(
            try exchange(h, "GET /health HTTP/1.1\r\nHost: a\r\n\r\n").status == 200,
            "one bad connection affects no other")
        for _ in 0..<4 {
            Thread.sleep(forTimeInterval: 0.2)
            try? slow.send("X-Slow: 1\r\n")
        }
        #expect(try slow.readResponse().status == 408)
        #expect(slow.closedByPeer())
    }

    @Test(
        "At the connection cap the longest-idle connection makes room; with every slot mid-request, a 503 the client can read"
    )
    func connectionCap() throws {
        // Timeouts far beyond the test's own waits: under load no partial request may expire while it sets up.
        let h = try ServerHarness {
            $0.http.maxConnections = 300
            $0.http.headerTimeout = 600
            $0.http.idleTimeout = 600
        }
        defer { h.stop() }
        var idle: [RawClient] = []
        for _ in 0..<300 {
            idle.append(try RawClient(port: h.server.port))
        }
        defer { idle.forEach { $0.close() } }
        // Conditions, not sleeps: every connection accepted; the newcomer's room made; every request begun.
        #expect(waitUntil(seconds: 30) { h.server.openConnections.load(ordering: .relaxed) == 300 })
        #expect(try exchange(h, "GET /health HTTP/1.1\r\nHost: a\r\n\r\n").status == 200, "a new client is served")
        // Each event loop makes room among its own connections: one idle connection was closed for the newcomer.
        #expect(waitUntil(seconds: 30) { idle.contains { $0.closedNow() } })
        let closed = idle.indices.filter { idle[$0].closedNow() }
        #expect(closed.count == 1, "closed: \(closed)")
        // Every slot holds a request in progress: nothing is idle, so a newcomer gets a 503 it can read.
        for index in idle.indices where !closed.contains(index) { try idle[index].send("GET /health HTTP/1.1\r\n") }
        // The newcomer's own connection gone and every partial request read before the last slot is taken: an
        // idle slot the server has not yet seen busy would be closed in the busy one's place.
        #expect(
            waitUntil(seconds: 30) {
                h.server.openConnections.load(ordering: .relaxed) == 299
                    && h.server.requestsUnderway.load(ordering: .relaxed) == 299
            })
        let busy = try RawClient(port: h.server.port)
        try busy.send("GET /health HTTP/1.1\r\n")
        defer { busy.close() }
        #expect(waitUntil(seconds: 30) { h.server.requestsUnderway.load(ordering: .relaxed) == 300 })
        let blocker = try RawClient(port: h.server.port)
        defer { blocker.close() }
        let refused = try blocker.readResponse()
        #expect(refused.status == 503 && refused.header("Retry-After") != nil)
    }

    @Test("Date headers are IMF-fixdate in GMT (RFC 9110's example, the epoch, a leap day, before 1970)")
    func httpDates() {
        #expect(HTTPServer.httpDate(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPServer.httpDate(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPServer.httpDate(1_709_164_800) == "Thu, 29 Feb 2024 00:00:00 GMT")
        #expect(HTTPServer.httpDate(-1) == "Wed, 31 Dec 1969 23:59:59 GMT")
    }
}
