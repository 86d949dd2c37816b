/// Where a message's body ends (RFC 9112 §6): the one decision both sides make the same way, because a request or an
/// answer whose end two readers see differently is how one message is smuggled inside another.
public enum HTTPFraming: Equatable, Sendable {
    /// No body.
    case none
    /// Exactly this many bytes.
    case length(Int)
    /// Chunked (``HTTPChunkedDecoder``).
    case chunked
    /// Until the connection closes (an answer with neither a length nor chunking).
    case untilClose

    /// A request's framing.
    /// - Throws: ``HTTPWireError``: 400 for `Content-Length` with `Transfer-Encoding`, `Transfer-Encoding` in an
    ///   HTTP/1.0 request, a last coding that is not `chunked`, or a bad length list; 501 for another coding.
    public static func request(
        _ fields: [(name: String, value: String)], minor: Int
    ) throws(HTTPWireError)
        -> HTTPFraming
    {
        let codings = HTTPFields.list("transfer-encoding", in: fields)
        if !codings.isEmpty {
            if fields.contains(where: { $0.name == "content-length" }) {
                throw HTTPWireError(400, "Content-Length together with Transfer-Encoding is not accepted")
            }
            if minor == 0 { throw HTTPWireError(400, "Transfer-Encoding in an HTTP/1.0 request") }
            try onlyChunked(codings)
            return .chunked
        }
        return try contentLength(fields).map { .length($0) } ?? .none
    }

    /// An answer's framing, and whether the connection must close after it.
    ///
    /// No body for an answer to HEAD, a 1xx, 204 or 304. `Transfer-Encoding` must be exactly `chunked` (no coding
    /// was asked for); with a `Content-Length` beside it chunking wins and the connection is not reused (RFC 9112
    /// §6.3). Neither: the body runs to the connection's close.
    /// - Throws: ``HTTPWireError`` for another transfer coding or a bad length list.
    public static func response(
        _ fields: [(name: String, value: String)], status: Int, minor: Int, toHead: Bool
    ) throws(HTTPWireError) -> (framing: HTTPFraming, close: Bool) {
        if toHead || status < 200 || status == 204 || status == 304 { return (.none, false) }
        let codings = HTTPFields.list("transfer-encoding", in: fields)
        if !codings.isEmpty {
            try onlyChunked(codings)
            return (.chunked, fields.contains { $0.name == "content-length" })
        }
        guard let length = try contentLength(fields) else { return (.untilClose, true) }
        return (.length(length), false)
    }

    /// The `Content-Length`, `nil` when there is none. A list of equal values (over any number of lines) is that
    /// value; values that differ make the framing unknowable (RFC 9112 §6.3).
    /// - Throws: ``HTTPWireError`` 400 for a value that is not 1–18 digits, or values that differ.
    public static func contentLength(_ fields: [(name: String, value: String)]) throws(HTTPWireError) -> Int? {
        let values = HTTPFields.list("content-length", in: fields)
        guard let first = values.first else { return nil }
        for value in values {
            guard !value.isEmpty, value.utf8.count <= 18, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                throw HTTPWireError(400, "Content-Length must be digits")
            }
            guard value == first else {
                throw HTTPWireError(
                    400, "differing Content-Length values (\(values.prefix(4).joined(separator: ", ")))")
            }
        }
        return Int(first)
    }

    /// The transfer codings must end in, and be only, `chunked`: nothing else is asked for or decoded.
    private static func onlyChunked(_ codings: [Substring]) throws(HTTPWireError) {
        let lowered = codings.map { $0.lowercased() }
        guard lowered.last == "chunked" else {
            if lowered.contains(where: { $0 != "chunked" && !["gzip", "deflate", "compress", "x-gzip"].contains($0) }) {
                throw HTTPWireError(501, "unsupported transfer coding")
            }
            throw HTTPWireError(lowered.contains("chunked") ? 400 : 501, "the last transfer coding must be chunked")
        }
        guard lowered == ["chunked"] else { throw HTTPWireError(501, "only the chunked transfer coding") }
    }

    /// A status line: `HTTP/1.x SP DIGIT DIGIT DIGIT` and then a space or the line's end. The status (100–999) and
    /// the minor version, or `nil`.
    public static func statusLine(_ line: UnsafeRawBufferPointer) -> (status: Int, minor: Int)? {
        guard line.count >= 12, line.starts(with: "HTTP/1.".utf8), line[7] >= 0x30, line[7] <= 0x39, line[8] == 0x20
        else { return nil }
        let digits = line[9..<12]
        guard digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), line.count == 12 || line[12] == 0x20 else { return nil }
        let status = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        guard status >= 100 else { return nil }
        return (status, Int(line[7] - 0x30))
    }

    /// Whether the connection stays open after this message: HTTP/1.1 unless a `Connection` token says `close`;
    /// HTTP/1.0 only with `keep-alive`.
    public static func persistent(_ fields: [(name: String, value: String)], minor: Int) -> Bool {
        let tokens = HTTPFields.list("connection", in: fields).map { $0.lowercased() }
        if tokens.contains("close") { return false }
        return minor >= 1 || tokens.contains("keep-alive")
    }
}
