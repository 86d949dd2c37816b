/// Frames HTTP/1.1 requests out of a connection's bytes, strictly (RFC 9112; rules in `Specs/server.md`).
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
        guard let headEnd = find(crlfcrlf: buffer, from: start, limit: limits.headerBlock) else {
            // A line ended by a bare LF never completes a CRLF header block: say so now instead of waiting for a
            // timeout (RFC 9112 §2.2 lets a server refuse what it does not parse).
            let scanned = min(buffer.count, start + limits.headerBlock)
            for i in start..<scanned where buffer[i] == 10 && (i == start || buffer[i - 1] != 13) {
                return .failure(.plain(400, "a line ends with a bare LF: HTTP lines end with CRLF"))
            }
            if let lineEnd = findCRLF(buffer, from: start, limit: limits.requestLine + 2) {
                if lineEnd - start > limits.requestLine { return .failure(.plain(414, "request line too long")) }
            } else if buffer.count - start > limits.requestLine {
                return .failure(.plain(414, "request line too long"))
            }
            if buffer.count - start > limits.headerBlock { return .failure(.plain(431, "header block too large")) }
            return .needMore(expectsContinue: false)
        }
        let lines = split(lines: UnsafeRawBufferPointer(rebasing: buffer[start..<headEnd]))
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
        guard method.utf8.allSatisfy(Self.isTokenByte) else { return .failure(.plain(400, "malformed method")) }
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
    ///
    /// Long because it applies RFC 9112's header and framing rules in the order the RFC gives them, each a guard on the
    /// same few locals (the fields, the length, the chunking) that ends in one answer or the next rule.
    private func parsed(
        method: String, minor: Int, target: String, lines: [UnsafeRawBufferPointer.SubSequence],
        headEnd: Int, buffer: UnsafeRawBufferPointer
    ) -> Result {
        guard lines.count - 1 <= limits.headerCount else { return .failure(.plain(431, "too many header fields")) }
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(lines.count - 1)
        for raw in lines.dropFirst() {
            guard let first = raw.first else { return .failure(.plain(400, "empty header line")) }
            if first == 0x20 || first == 0x09 { return .failure(.plain(400, "obsolete line folding is not accepted")) }
            guard let colon = raw.firstIndex(of: UInt8(ascii: ":")), colon > raw.startIndex else {
                return .failure(.plain(400, "header field without a name"))
            }
            let nameBytes = UnsafeRawBufferPointer(rebasing: raw[raw.startIndex..<colon])
            guard nameBytes.allSatisfy(Self.isTokenByte) else {
                return .failure(.plain(400, "malformed header field name (no whitespace before the colon)"))
            }
            var valueBytes = UnsafeRawBufferPointer(rebasing: raw[(colon + 1)..<raw.endIndex])
            guard valueBytes.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
                return .failure(.plain(400, "header field value holds a control character"))
            }
            // Optional whitespace (spaces and tabs) around the value is not part of it (RFC 9110 §5.5).
            while let first = valueBytes.first, first == 0x20 || first == 0x09 {
                valueBytes = UnsafeRawBufferPointer(rebasing: valueBytes.dropFirst())
            }
            while let last = valueBytes.last, last == 0x20 || last == 0x09 {
                valueBytes = UnsafeRawBufferPointer(rebasing: valueBytes.dropLast())
            }
            // obs-text (0x80–0xFF) is allowed in field values: read as UTF-8 when it is, else as ISO-8859-1.
            let value =
                String(validating: valueBytes, as: UTF8.self)
                ?? String(String.UnicodeScalarView(valueBytes.map { Unicode.Scalar($0) }))
            // A name is token bytes (ASCII), lowercased byte by byte.
            let name = String(unsafeUninitializedCapacity: nameBytes.count) { name in
                for (index, byte) in nameBytes.enumerated() {
                    name[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
                }
                return nameBytes.count
            }
            headers.append((name, value))
        }
        let hosts = headers.filter { $0.name == "host" }
        if minor == 1, hosts.count != 1 { return .failure(.plain(400, "an HTTP/1.1 request needs exactly one Host")) }
        if hosts.count > 1 { return .failure(.plain(400, "more than one Host")) }

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
        let transferEncodings = headers.filter { $0.name == "transfer-encoding" }
        let lengths = headers.filter { $0.name == "content-length" }
        let expectation = headers.first { $0.name == "expect" }?.value.lowercased()
        if let expectation, expectation != "100-continue" { return .failure(.plain(417, "only Expect: 100-continue")) }
        if !transferEncodings.isEmpty {
            if !lengths.isEmpty {
                return .failure(.plain(400, "Content-Length together with Transfer-Encoding is not accepted"))
            }
            if minor == 0 { return .failure(.plain(400, "Transfer-Encoding in an HTTP/1.0 request")) }
            let codings = transferEncodings.flatMap {
                $0.value.lowercased().split(separator: ",").map { $0.trimmingCharacters() }
            }
            guard codings.last == "chunked" else {
                if codings.contains(where: {
                    $0 != "chunked" && !["gzip", "deflate", "compress", "x-gzip"].contains($0)
                }) {
                    return .failure(.plain(501, "unsupported transfer coding"))
                }
                return .failure(
                    .plain(codings.contains("chunked") ? 400 : 501, "the last transfer coding must be chunked"))
            }
            guard codings == ["chunked"] else { return .failure(.plain(501, "only the chunked transfer coding")) }
            switch dechunk(buffer, from: bodyStart) {
            case .needMore: return .needMore(expectsContinue: expectation != nil)
            case .failure(let response): return .failure(response)
            case .body(let body, let end):
                request.body = body
                return .request(request, consumed: end)
            }
        }
        var length = 0
        if !lengths.isEmpty {
            var values: Set<Int> = []
            for field in lengths {
                for item in field.value.split(separator: ",", omittingEmptySubsequences: false) {
                    let digits = item.trimmingCharacters()
                    guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), digits.count <= 12,
                        let value = Int(digits)
                    else {
                        return .failure(.plain(400, "Content-Length must be digits"))
                    }
                    values.insert(value)
                }
            }
            guard values.count == 1 else { return .failure(.plain(400, "differing Content-Length values")) }
            length = values.first!
        }
        if length > limits.body { return .failure(.plain(413, "body larger than \(limits.body) bytes")) }
        guard buffer.count - bodyStart >= length else { return .needMore(expectsContinue: expectation != nil) }
        request.body = Array(UnsafeRawBufferPointer(rebasing: buffer[bodyStart..<(bodyStart + length)]))
        return .request(request, consumed: bodyStart + length)
    }

    private enum Chunked {
        case needMore
        case failure(HTTPResponse)
        case body([UInt8], end: Int)
    }

    /// Decodes a chunked body: `size[;ext] CRLF data CRLF … 0 CRLF [trailers] CRLF`.
    private func dechunk(_ buffer: UnsafeRawBufferPointer, from start: Int) -> Chunked {
        var body: [UInt8] = []
        var position = start
        while true {
            guard let lineEnd = findCRLF(buffer, from: position, limit: 1024) else {
                return buffer.count - position > 1024 ? .failure(.plain(400, "chunk size line too long")) : .needMore
            }
            let line = UnsafeRawBufferPointer(rebasing: buffer[position..<lineEnd])
            let sizeBytes = line.prefix { $0 != UInt8(ascii: ";") }
            guard !sizeBytes.isEmpty, sizeBytes.count <= 8 else { return .failure(.plain(400, "malformed chunk size")) }
            var size = 0
            for byte in sizeBytes {
                guard let digit = HTTPRequest.hexValue(byte) else {
                    return .failure(.plain(400, "malformed chunk size"))
                }
                size = size << 4 | Int(digit)
            }
            position = lineEnd + 2
            if size == 0 {
                // Trailer fields (ignored) until an empty line.
                while true {
                    guard let end = findCRLF(buffer, from: position, limit: limits.headerBlock) else {
                        return buffer.count - position > limits.headerBlock
                            ? .failure(.plain(431, "trailers too large")) : .needMore
                    }
                    if end == position { return .body(body, end: end + 2) }
                    position = end + 2
                }
            }
            if body.count + size > limits.body { return .failure(.plain(413, "body larger than \(limits.body) bytes")) }
            guard buffer.count - position >= size + 2 else { return .needMore }
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[position..<(position + size)]))
            guard buffer[position + size] == 13, buffer[position + size + 1] == 10 else {
                return .failure(.plain(400, "chunk data not followed by CRLF"))
            }
            position += size + 2
        }
    }

    /// tchar of RFC 9110 §5.6.2.
    static func isTokenByte(_ byte: UInt8) -> Bool { tokenBytes[Int(byte)] }

    /// Whether each byte is a tchar: letters, digits and `!#$%&'*+-.^_`|~`.
    private static let tokenBytes: [Bool] = (0...255).map { value in
        let byte = UInt8(value)
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    private func find(crlfcrlf buffer: UnsafeRawBufferPointer, from start: Int, limit: Int) -> Int? {
        let end = min(buffer.count, start + limit + 4)
        guard end - start >= 4 else { return nil }
        var i = start
        while i + 3 < end {
            if buffer[i] == 13, buffer[i + 1] == 10, buffer[i + 2] == 13, buffer[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    private func findCRLF(_ buffer: UnsafeRawBufferPointer, from start: Int, limit: Int) -> Int? {
        let end = min(buffer.count, start + limit)
        var i = start
        while i + 1 < end {
            if buffer[i] == 13, buffer[i + 1] == 10 { return i }
            i += 1
        }
        return nil
    }

    /// The header block's lines; a bare CR or LF inside a line makes it invalid (kept in the line, then refused).
    private func split(lines block: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer.SubSequence] {
        var lines: [UnsafeRawBufferPointer.SubSequence] = []
        var lineStart = 0
        var i = 0
        while i < block.count {
            if block[i] == 13, i + 1 < block.count, block[i + 1] == 10 {
                lines.append(block[lineStart..<i])
                i += 2
                lineStart = i
            } else {
                i += 1
            }
        }
        lines.append(block[lineStart..<block.count])
        return lines
    }
}
