import HTTPWire

/// One HTTP/1.1 request, parsed and framed (`Specs/server.md`, RFC 9112).
public struct HTTPRequest: Sendable {
    /// The method, e.g. `GET`.
    public var method: String
    /// The path of the request target, percent-decoding left to the router.
    public var path: String
    /// The raw query (after `?`), or empty.
    public let query: String
    /// The query's parameters, percent-decoded (`+` is a space), in order (parsed once, when the request is made).
    public let queryItems: [(name: String, value: String)]
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var minorVersion: Int
    /// Header fields in order, names lowercased.
    public var headers: [(name: String, value: String)]
    /// The body (decoded from chunks when chunked).
    public var body: [UInt8]

    /// A request as the parser frames it.
    package init(
        method: String, path: String, query: String, minorVersion: Int = 1,
        headers: [(name: String, value: String)], body: [UInt8] = []
    ) {
        self.method = method
        self.path = path
        self.query = query
        queryItems = HTTPRequest.parseQuery(query)
        self.minorVersion = minorVersion
        self.headers = headers
        self.body = body
    }

    /// The value of a header (the first, when repeated).
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// Whether the connection stays open after the response (HTTP/1.1 default; `Connection: close` ends it).
    public var keepAlive: Bool { HTTPFraming.persistent(headers, minor: minorVersion) }

    /// The query's `name=value` pairs split at `&` (empty pairs skipped) and the first `=`, each side
    /// percent-decoded; a side that does not decode is empty. Read as bytes: a request target is ASCII.
    static func parseQuery(_ query: String) -> [(name: String, value: String)] {
        var items: [(name: String, value: String)] = []
        let bytes = query.utf8
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.endIndex
            if end > start {
                let pair = bytes[start..<end]
                if let equals = pair.firstIndex(of: UInt8(ascii: "=")) {
                    items.append(
                        (
                            percentDecode(bytes: pair[..<equals]) ?? "",
                            percentDecode(bytes: pair[bytes.index(after: equals)...]) ?? ""
                        ))
                } else {
                    items.append((percentDecode(bytes: pair) ?? "", ""))
                }
            }
            start = end == bytes.endIndex ? end : bytes.index(after: end)
        }
        return items
    }

    /// Percent-decodes `text` (`+` → space); `nil` for a malformed escape or invalid UTF-8.
    public static func percentDecode(_ text: String) -> String? { percentDecode(bytes: text.utf8) }

    /// Percent-decodes UTF-8 bytes (`+` → space); `nil` for a malformed escape or invalid UTF-8.
    static func percentDecode<Bytes: Collection<UInt8>>(bytes text: Bytes) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count)
        var index = text.startIndex
        while index != text.endIndex {
            let byte = text[index]
            index = text.index(after: index)
            if byte == UInt8(ascii: "%") {
                guard index != text.endIndex, let high = hexValue(text[index]) else { return nil }
                index = text.index(after: index)
                guard index != text.endIndex, let low = hexValue(text[index]) else { return nil }
                index = text.index(after: index)
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? { HTTPFields.hexValue(byte) }
}

/// A response: status, headers and body. `Date`, `Content-Length` and `Connection` are added when it is written.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Close the connection after this response.
    public var close = false

    /// Creates a response.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = [], close: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.close = close
    }

    /// A short plain-text error (for framing errors, before any route runs).
    static func plain(
        _ status: Int, _ text: String, close: Bool = true, headers: [(name: String, value: String)] = []
    )
        -> HTTPResponse
    {
        HTTPResponse(
            status: status, headers: [("Content-Type", "text/plain; charset=utf-8")] + headers,
            body: Array((text + "\n").utf8), close: close)
    }

    /// The bytes on the wire. `head` leaves the body out (a HEAD request) but keeps its Content-Length.
    func serialized(date: String, head: Bool = false) -> [UInt8] {
        var bytes: [UInt8] = []
        append(to: &bytes, date: date, head: head)
        return bytes
    }

    /// ``serialized(date:head:)`` appended to `bytes` (a connection's output buffer), without intermediate strings.
    func append(to bytes: inout [UInt8], date: String, head: Bool = false) {
        let withBody = !head && status != 204 && status != 304
        bytes.reserveCapacity(bytes.count + 160 + (withBody ? body.count : 0))
        bytes += "HTTP/1.1 ".utf8
        bytes += String(status).utf8
        bytes.append(32)
        bytes += HTTPResponse.reason(status).utf8
        bytes += "\r\nDate: ".utf8
        bytes += date.utf8
        bytes += "\r\n".utf8
        for (name, value) in headers {
            // Every field the server writes is its own (ids and tags it validated); one that could not stand on a
            // line of its own is left out rather than allowed to end the line and start another.
            try? HTTPFields.append(name: name, value: value, to: &bytes)
        }
        if status != 204, status != 304, status >= 200 {
            bytes += "Content-Length: ".utf8
            bytes += String(body.count).utf8
            bytes += "\r\n".utf8
        }
        if close { bytes += "Connection: close\r\n".utf8 }
        bytes += "\r\n".utf8
        if withBody { bytes += body }
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 417: return "Expectation Failed"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Status \(status)"
        }
    }
}

extension Substring {
    func trimmingCharacters() -> String {
        var s = self
        while let first = s.first, first == " " || first == "\t" { s.removeFirst() }
        while let last = s.last, last == " " || last == "\t" { s.removeLast() }
        return String(s)
    }
}
