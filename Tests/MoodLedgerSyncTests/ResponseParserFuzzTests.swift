import Foundation
import MoodLedger
import Platform
import TestSupport
import Testing

@testable import MoodLedgerSync

/// The client's response parser against seeded random answers (status lines, header sets, chunk sizes, interim
/// answers, truncations, flipped bytes) and a corpus of hostile ones: it never crashes, never reads past its budget,
/// never takes a truncated answer as whole, and reads every well-formed one exactly — blocking and awaiting alike.
@Suite("The sync client's response parser, fuzzed")
struct ResponseParserFuzzTests {
    /// `bytes` sent on a fresh loopback connection, then closed; the parser's answer under `limits`, read by the
    /// blocking reader or (`awaiting`) the one that awaits the socket.
    static func parse(
        _ bytes: [UInt8], limits: HTTPConnection.Limits, awaiting: Bool = false
    ) async throws -> HTTPConnection.Response {
        let listener = try Socket.listen(host: "127.0.0.1", port: 0)
        defer { Socket.close(listener.fd) }
        let connection =
            awaiting
            ? try await HTTPConnection.connect(host: "127.0.0.1", port: listener.port, timeout: 5)
            : try connectBlocking(listener.port)
        defer { connection.close() }
        var watch = [Socket.Watch(fd: listener.fd, interest: .readable)]
        try Socket.poll(&watch, timeoutMilliseconds: 5_000)
        guard let server = try Socket.accept(listener.fd) else { throw HTTPConnection.Failure(what: "no accept") }
        let sender = Thread {
            var offset = 0
            while offset < bytes.count {
                guard let sent = try? bytes[offset...].withUnsafeBytes({ try Socket.send(server, $0) }) else { break }
                if sent == 0 {
                    var writable = [Socket.Watch(fd: server, interest: .writable)]
                    _ = try? Socket.poll(&writable, timeoutMilliseconds: 1_000)
                }
                offset += sent
            }
            Socket.shutdown(server)
            Socket.close(server)
        }
        sender.start()
        return awaiting ? try await connection.readResponse(limits: limits) : try readBlocking(connection, limits)
    }

    private static func connectBlocking(_ port: UInt16) throws -> HTTPConnection {
        try HTTPConnection(port: port, timeout: 5)
    }

    private static func readBlocking(
        _ connection: HTTPConnection, _ limits: HTTPConnection.Limits
    ) throws -> HTTPConnection.Response {
        try connection.readResponse(limits: limits)
    }

    /// A well-formed answer and what it must parse to.
    static func answer(_ random: inout SeededRandom) -> (bytes: [UInt8], status: Int, body: [UInt8]) {
        var text = ""
        for _ in 0..<Int.random(in: 0...2, using: &random) {
            text += "HTTP/1.1 1\(Int.random(in: 0...3, using: &random) == 1 ? "00" : "03") Interim\r\nX-I: 1\r\n\r\n"
        }
        let status = [200, 201, 204, 404, 412, 422, 500, 503].randomElement(using: &random)!
        let body: [UInt8] =
            status == 204
            ? []
            : (0..<Int.random(in: 0...3000, using: &random)).map { _ in UInt8.random(in: 32...126, using: &random) }
        text += "HTTP/1.1 \(status) Reason words\r\n"
        for index in 0..<Int.random(in: 0...6, using: &random) { text += "X-Header-\(index): value \(index)\r\n" }
        var bytes = Array(text.utf8)
        switch (status == 204, Int.random(in: 0...2, using: &random)) {
        case (true, _):
            bytes += Array("\r\n".utf8)
        case (false, 0):
            bytes += Array("Content-Length: \(body.count)\r\n\r\n".utf8) + body
        case (false, 1):
            bytes += Array("Transfer-Encoding: chunked\r\n\r\n".utf8)
            var rest = body[...]
            while !rest.isEmpty {
                let size = min(rest.count, Int.random(in: 1...700, using: &random))
                bytes += Array("\(String(size, radix: 16))\r\n".utf8) + rest.prefix(size) + Array("\r\n".utf8)
                rest = rest.dropFirst(size)
            }
            bytes += Array("0\r\n\r\n".utf8)
        default:
            bytes += Array("Connection: close\r\n\r\n".utf8) + body
        }
        return (bytes, status, body)
    }

    @Test(
        "Seeded answers: well-formed ones read exactly, truncated ones refused, damaged ones never past the budget",
        arguments: [false, true])
    func seeded(awaiting: Bool) async throws {
        var random = SeededRandom()
        let limits = HTTPConnection.Limits(maximumBytes: 16 << 10)
        for round in 0..<300 {
            let (bytes, status, body) = Self.answer(&random)
            let context = "seed \(random.seed), round \(round), awaiting \(awaiting)"
            switch Int.random(in: 0...2, using: &random) {
            case 0:
                let response = try await Self.parse(bytes, limits: limits, awaiting: awaiting)
                #expect(response.status == status && response.body == body, "\(context)")
            case 1:
                // Cut before the end of a framed answer: never taken as whole.
                let framed = !String(decoding: bytes, as: UTF8.self).contains("Connection: close")
                let cut = Int.random(in: 0..<bytes.count, using: &random)
                let result = try? await Self.parse(Array(bytes[..<cut]), limits: limits, awaiting: awaiting)
                if framed, let response = result, response.status >= 200 {
                    Issue.record("a truncated answer was taken: \(response.status), \(context)")
                }
            default:
                var damaged = bytes
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    damaged[Int.random(in: 0..<damaged.count, using: &random)] = UInt8.random(
                        in: 0...255, using: &random)
                }
                if let response = try? await Self.parse(damaged, limits: limits, awaiting: awaiting) {
                    #expect(
                        (100..<1000).contains(response.status) && response.body.count <= limits.maximumBytes,
                        "\(context)")
                }
            }
        }
    }

    @Test(
        "The corpus of hostile answers (Tests/Fuzz/Seeds/http-response) parses or fails cleanly, as recorded",
        arguments: [false, true])
    func corpus(awaiting: Bool) async throws {
        let directory = Repository.root + "/Tests/Fuzz/Seeds/http-response"
        let expected: [String: Int?] = [
            "interim-then-created": 201, "chunked": 200, "long-status": nil, "huge-chunk": nil,
            "close-delimited": 200
        ]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory).sorted() {
            let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
            let status = try? await Self.parse(
                bytes, limits: HTTPConnection.Limits(maximumBytes: 1 << 20), awaiting: awaiting
            ).status
            #expect(status == expected[name] ?? nil, "\(name)")
        }
    }
}
