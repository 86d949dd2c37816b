import HTTPWire

/// Frames HTTP/1.1 requests out of a connection's bytes, strictly (RFC 9112; rules in `Specs/server.md`): the request
/// line here, the fields, framing and chunking by the codec the sync client reads answers with (``HTTPFields``,
/// ``HTTPFraming``, ``HTTPChunkedDecoder``).
///
/// Stateless: each call parses from the start of the buffer (the caps bound the work), so a request split across
/// any number of reads frames the same way.
struct HTTPParser {
    /// Size limits and what breaking them answers.
    struct Limits: Sendable {
        /// Longest request line (414 beyond).
        var requestLine = 8 * 1024
        /// Largest header block, request line included (431 beyond).
        var headerBlock = 16 * 1024
        /// Most header fields (431 beyond).
        var headerCount = 100
        /// Largest body (413 beyond).
        var body = 1 << 20
    }

    enum Result {
        /// More bytes are needed; `expectsContinue` when the client waits for `100 Continue` before its body.
        case needMore(expectsContinue: Bool)
        /// A whole request, and how many buffer bytes it took.
        case request(HTTPRequest, consumed: Int)
        /// The bytes cannot be a valid request: answer this and close.
        case failure(HTTPResponse)
    }

    let limits: Limits

    /// The methods HTTP defines (RFC 9110 §9, RFC 5789, and QUERY): a route that does not take one answers 405
    /// with `Allow`; any other method is not recognised at all (501).
    static let knownMethods: Set<String> = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "QUERY"
    ]

    func parse(_ buffer: UnsafeRawBufferPointer) -> Result {
        var start = 0
        // A server SHOULD ignore at least one empty line before a request line (RFC 9112 §2.2).
        while buffer.count - start >= 2, buffer[start] == 13, buffer[start + 1] == 10, start < 4 { start += 2 }
        guard let headEnd = HTTPFields.blockEnd(buffer, from: start, limit: limits.headerBlock) else {
            // A line ended by a bare LF never completes a CRLF header block: say so now instead of waiting for a
            // timeout (RFC 9112 §2.2 lets a server refuse what it does not parse).
            if HTTPFields.hasBareLF(buffer, from: start, to: start + limits.headerBlock) {
                return .failure(.plain(400, "a line ends with a bare LF: HTTP lines end with CRLF"))
            }
            if let lineEnd = HTTPFields.lineEnd(buffer, from: start, limit: limits.requestLine + 2) {
                if lineEnd - start > limits.requestLine { return .failure(.plain(414, "request line too long")) }
            } else if buffer.count - start > limits.requestLine {
                return .failure(.plain(414, "request line too long"))
            }
            if buffer.count - start > limits.headerBlock { return .failure(.plain(431, "header block too large")) }
            return .needMore(expectsContinue: false)
        }
        let lines = HTTPFields.lines(UnsafeRawBufferPointer(rebasing: buffer[start..<headEnd]))
        guard let requestLine = lines.first else { return .failure(.plain(400, "empty request")) }
        if requestLine.count > limits.requestLine { return .failure(.plain(414, "request line too long")) }
        guard String(validating: requestLine, as: UTF8.self) != nil else {
            return .failure(.plain(400, "request line is not UTF-8"))
        }
        // Split at the space bytes (the line is UTF-8, so each part is too).
        let parts = requestLine.split(separator: 0x20, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            return .failure(.plain(400, "malformed request line"))
        }
        let method = String(parts[0])
        guard method.utf8.allSatisfy(HTTPFields.isTokenByte) else { return .failure(.plain(400, "malformed method")) }
        let minor: Int
        switch parts[2] {
        case "HTTP/1.1": minor = 1
        case "HTTP/1.0": minor = 0
        default:
            if parts[2].hasPrefix("HTTP/"), parts[2].count == 8 {
                return .failure(.plain(505, "only HTTP/1.0 and 1.1"))
            }
            return .failure(.plain(400, "malformed HTTP version"))
        }
        var target = parts[1]
        guard target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(.plain(400, "request target holds a character that must be percent-encoded"))
        }
        // absolute-form (`http://host/path`), which a server MUST accept (RFC 9112 §3.2.2): the path and query are
        // what is asked for; the authority stands in for Host.
        if target.utf8.first != UInt8(ascii: "/"),
            let scheme = ["http://", "https://"].first(where: { target.lowercased().hasPrefix($0) })
        {
            let rest = target.dropFirst(scheme.count)
            guard let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else {
                target = "/"
                guard !rest.isEmpty else { return .failure(.plain(400, "absolute-form target without a host")) }
                return parsed(
                    method: method, minor: minor, target: target, lines: lines, headEnd: headEnd, buffer: buffer)
            }
            guard authorityEnd > rest.startIndex else {
                return .failure(.plain(400, "absolute-form target without a host"))
            }
            target = rest[authorityEnd] == "/" ? String(rest[authorityEnd...]) : "/" + rest[authorityEnd...]
        }
        guard target.hasPrefix("/") else {
            return .failure(.plain(400, "request target must be a path (origin-form) or an absolute URI"))
        }
        // A fragment is the client's own business (never part of a request target): it does not reach the query.
        if let hash = target.utf8.firstIndex(of: UInt8(ascii: "#")) { target = String(target[..<hash]) }
        return parsed(method: method, minor: minor, target: target, lines: lines, headEnd: headEnd, buffer: buffer)
    }

    /// The rest of ``parse(_:)`` once the request line is read: header fields, framing and body.
    private func parsed(
        method: String, minor: Int, target: String, lines: [UnsafeRawBufferPointer.SubSequence],
        headEnd: Int, buffer: UnsafeRawBufferPointer
    ) -> Result {
        let headers: [(name: String, value: String)]
        let framing: HTTPFraming
        do {
            headers = try HTTPFields.fields(lines.dropFirst(), maximumCount: limits.headerCount)
            let hosts = headers.filter { $0.name == "host" }.count
            if minor == 1, hosts != 1 { return .failure(.plain(400, "an HTTP/1.1 request needs exactly one Host")) }
            if hosts > 1 { return .failure(.plain(400, "more than one Host")) }
            framing = try HTTPFraming.request(headers, minor: minor)
        } catch {
            return .failure(.plain(error.status, error.reason))
        }
        let bodyStart = headEnd + 4
        let path: String
        let query: String
        if let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            path = String(target[..<mark])
            query = String(target[target.index(after: mark)...])
        } else {
            path = target
            query = ""
        }
        var request = HTTPRequest(
            method: method, path: path, query: query, minorVersion: minor, headers: headers, body: [])
        let expectation = headers.first { $0.name == "expect" }?.value.lowercased()
        if let expectation, expectation != "100-continue" { return .failure(.plain(417, "only Expect: 100-continue")) }
        switch framing {
        case .chunked:
            var decoder = HTTPChunkedDecoder(
                from: bodyStart, maximumBody: limits.body, maximumTrailers: limits.headerBlock)
            do {
                guard try decoder.advance(buffer) else { return .needMore(expectsContinue: expectation != nil) }
            } catch {
                return .failure(.plain(error.status, error.reason))
            }
            request.body = decoder.body
            return .request(request, consumed: decoder.position)
        case .length(let length):
            if length > limits.body { return .failure(.plain(413, "body larger than \(limits.body) bytes")) }
            guard buffer.count - bodyStart >= length else { return .needMore(expectsContinue: expectation != nil) }
            request.body = Array(UnsafeRawBufferPointer(rebasing: buffer[bodyStart..<(bodyStart + length)]))
            return .request(request, consumed: bodyStart + length)
        case .none, .untilClose:
            return .request(request, consumed: bodyStart)
        }
    }
}
