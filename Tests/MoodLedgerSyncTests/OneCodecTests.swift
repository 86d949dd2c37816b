import Foundation
import HTTPWire
import Platform
import TestSupport
import Testing

@testable import MoodLedgerServer
@testable import MoodLedgerSync

/// The server frames requests and the sync client frames answers with one codec: the same field lines and framing
/// are taken, or refused, alike on both sides, and a chunked body read in any number of pieces is the body read whole.
@Suite("One HTTP/1.1 codec for the server and the client")
struct OneCodecTests {
    /// Field lines after the start line and what both sides must make of them: the body, or a refusal.
    static let cases: [(fields: String, body: String, expected: String?)] = [
        ("Content-Length: 5\r\n", "hello", "hello"),
        ("Content-Length: 5, 5\r\n", "hello", "hello"),
        ("Content-Length: 5\r\nContent-Length: 5\r\n", "hello", "hello"),
        ("Content-Length: 5\r\nContent-Length: 4\r\n", "hello", nil),
        ("Content-Length: 5, 4\r\n", "hello", nil),
        ("Content-Length: +5\r\n", "hello", nil),
        ("Content-Length: 0x5\r\n", "hello", nil),
        ("Content-Length : 5\r\n", "hello", nil),
        ("X-Value: a\u{0}b\r\nContent-Length: 5\r\n", "hello", nil),
        ("X-Value: a\rb\r\nContent-Length: 5\r\n", "hello", nil),
        ("Transfer-Encoding: chunked\r\n", "5\r\nhello\r\n0\r\n\r\n", "hello"),
        ("Transfer-Encoding: Chunked\r\n", "2\r\nhe\r\n3;x=y\r\nllo\r\n0\r\nT: 1\r\n\r\n", "hello"),
        ("Transfer-Encoding: chunked\r\n", "005 ;ext\r\nhello\r\n0\r\n\r\n", "hello"),
        ("Transfer-Encoding: chunked\r\n", "5 \r\nhello\r\n0\r\n\r\n", nil),
        ("Transfer-Encoding: chunked\r\n", "-5\r\nhello\r\n0\r\n\r\n", nil),
        ("Transfer-Encoding: chunked\r\n", "5\r\nhelloXX0\r\n\r\n", nil),
        ("Transfer-Encoding: gzip, chunked\r\n", "5\r\nhello\r\n0\r\n\r\n", nil),
        ("Transfer-Encoding: chunked, identity\r\n", "5\r\nhello\r\n0\r\n\r\n", nil),
        ("Transfer-Encoding: identity\r\n", "5\r\nhello\r\n0\r\n\r\n", nil)
    ]

    /// What the server's parser makes of a request with these fields: the body, or `nil` for a refusal.
    static func serverReads(_ fields: String, _ body: String) -> String?? {
        let bytes = Array("POST /x HTTP/1.1\r\nHost: h\r\n\(fields)\r\n\(body)".utf8)
        let parser = HTTPParser(limits: HTTPParser.Limits())
        switch bytes.withUnsafeBytes({ parser.parse($0) }) {
        case .request(let request, _): return .some(String(decoding: request.body, as: UTF8.self))
        case .failure: return .some(nil)
        case .needMore: return .none
        }
    }

    /// What the client makes of an answer with these fields, the connection closed after it.
    static func clientReads(_ fields: String, _ body: String) async throws -> String? {
        let bytes = Array("HTTP/1.1 200 OK\r\n\(fields)\r\n\(body)".utf8)
        do {
            let response = try await ResponseParserFuzzTests.parse(bytes, limits: HTTPConnection.Limits())
            return String(decoding: response.body, as: UTF8.self)
        } catch is HTTPConnection.Failure {
            return nil
        }
    }

    @Test("Field lines, lengths and codings: each framed, or refused, alike by the server and the client")
    func sidesAgree() async throws {
        for (fields, body, expected) in Self.cases {
            let shown = fields.debugDescription
            #expect(Self.serverReads(fields, body) == .some(expected), "server, \(shown)")
            let client = try await Self.clientReads(fields, body)
            #expect(client == expected, "client, \(shown)")
        }
        // The one difference the RFC makes: both framings on an answer is chunked (and the connection is not reused),
        // on a request it is refused (RFC 9112 §6.3).
        let both = "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"
        #expect(Self.serverReads(both, "5\r\nhello\r\n0\r\n\r\n") == .some(nil))
        let client = try await Self.clientReads(both, "5\r\nhello\r\n0\r\n\r\n")
        #expect(client == "hello")
    }

    @Test("A chunked body fed in seeded pieces decodes to the body fed whole, ending at the same byte")
    func chunkedInPieces() throws {
        var random = SeededRandom()
        for round in 0..<200 {
            let body = (0..<Int.random(in: 0...2_000, using: &random)).map { _ in
                UInt8.random(in: 0...255, using: &random)
            }
            var wire: [UInt8] = []
            var rest = body[...]
            while !rest.isEmpty {
                let size = min(rest.count, Int.random(in: 1...300, using: &random))
                let ext = Bool.random(using: &random) ? " ;n=v" : ""
                wire += Array("\(String(size, radix: 16))\(ext)\r\n".utf8) + rest.prefix(size) + Array("\r\n".utf8)
                rest = rest.dropFirst(size)
            }
            wire += Array("0\r\nTrailer: x\r\n\r\nNEXT".utf8)
            var whole = HTTPChunkedDecoder(from: 0, maximumBody: 1 << 20)
            #expect(try wire.withUnsafeBytes { try whole.advance($0) }, "seed \(random.seed), round \(round)")
            #expect(whole.body == body && whole.position == wire.count - 4, "seed \(random.seed), round \(round)")
            var pieces = HTTPChunkedDecoder(from: 0, maximumBody: 1 << 20)
            var fed = 0
            var done = false
            while !done {
                fed = min(wire.count, fed + Int.random(in: 1...64, using: &random))
                done = try wire[0..<fed].withUnsafeBytes { try pieces.advance($0) }
                #expect(done || fed < wire.count, "seed \(random.seed), round \(round)")
            }
            #expect(pieces.body == body && pieces.position == whole.position, "seed \(random.seed), round \(round)")
        }
    }

    @Test("A field value that could end its line is refused by the writer; an IPv6 authority is bracketed")
    func writer() throws {
        var bytes: [UInt8] = []
        for value in ["a\r\nX-Injected: 1", "a\nb", "a\rb", "a\u{0}b", "a\u{7F}b"] {
            #expect(throws: HTTPWireError.self) { try HTTPFields.append(name: "X-Value", value: value, to: &bytes) }
        }
        #expect(throws: HTTPWireError.self) { try HTTPFields.append(name: "X Value", value: "v", to: &bytes) }
        #expect(bytes.isEmpty)
        try HTTPFields.append(name: "X-Value", value: "caf\u{E9}\tok", to: &bytes)
        #expect(bytes == Array("X-Value: caf\u{E9}\tok\r\n".utf8))
        #expect(HTTPFields.authority(host: "::1", port: 8080) == "[::1]:8080")
        #expect(HTTPFields.authority(host: "example.org", port: 80) == "example.org:80")
    }
}
