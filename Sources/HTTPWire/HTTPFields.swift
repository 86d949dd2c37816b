/// Why a message cannot be read or written: the rule it breaks, in words, and the status a server answers with.
public struct HTTPWireError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What a server answers a request that breaks the rule (400, 413, 431, 501); a client reading an answer only
    /// reports ``reason``.
    public var status: Int
    /// The rule, in words (never the offending bytes: they may hold anything).
    public var reason: String

    /// An error of `status` and `reason`.
    public init(_ status: Int, _ reason: String) {
        self.status = status
        self.reason = reason
    }

    public var description: String { reason }
}

/// The HTTP/1.1 message rules both sides share (RFC 9110, RFC 9112): how a header block is found and split, how a
/// field line is read and written, and the `Host` authority. The server frames requests and the sync client frames
/// answers with these same functions, so a message one side would refuse the other never takes.
public enum HTTPFields {
    /// Where the header block starting at `start` ends (the index of its `CRLF CRLF`), looking no further than
    /// `limit` bytes; `nil` when it has not ended yet.
    public static func blockEnd(_ buffer: UnsafeRawBufferPointer, from start: Int, limit: Int) -> Int? {
        let end = min(buffer.count, start + limit + 4)
        guard end - start >= 4 else { return nil }
        var i = start
        while i + 3 < end {
            if buffer[i] == 13, buffer[i + 1] == 10, buffer[i + 2] == 13, buffer[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    /// The index of the first `CRLF` at or after `start` within `limit` bytes, or `nil`.
    public static func lineEnd(_ buffer: UnsafeRawBufferPointer, from start: Int, limit: Int) -> Int? {
        let end = min(buffer.count, start + limit)
        var i = start
        while i + 1 < end {
            if buffer[i] == 13, buffer[i + 1] == 10 { return i }
            i += 1
        }
        return nil
    }

    /// Whether a bare LF (one not after a CR) occurs in `buffer[start..<end]`: such a line never ends a header block
    /// (RFC 9112 §2.2 lets a recipient refuse what it does not parse).
    public static func hasBareLF(_ buffer: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Bool {
        for i in start..<min(end, buffer.count) where buffer[i] == 10 && (i == start || buffer[i - 1] != 13) {
            return true
        }
        return false
    }

    /// A header block's lines (the block without its final `CRLF CRLF`); a bare CR or LF inside a line stays in
    /// it, where ``field(_:unfold:)`` refuses it as a control character.
    public static func lines(_ block: UnsafeRawBufferPointer) -> [UnsafeRawBufferPointer.SubSequence] {
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

    /// The fields of a header block's lines after its start line, names lowercased, values without the optional
    /// whitespace around them (RFC 9110 §5.5).
    ///
    /// A line that starts with a space or tab continues the one before (obsolete folding, RFC 9112 §5.2): a server
    /// refuses it (`unfold` false); a client replaces the fold with a space (`unfold` true), as a user agent must.
    /// - Throws: ``HTTPWireError`` 400 for an empty line, a name that is not a token (whitespace before the colon
    ///   included), or a value with a control character (CR, LF and NUL among them); 431 past `maximumCount`.
    public static func fields(
        _ lines: ArraySlice<UnsafeRawBufferPointer.SubSequence>, unfold: Bool = false, maximumCount: Int = .max
    ) throws(HTTPWireError) -> [(name: String, value: String)] {
        guard lines.count <= maximumCount else { throw HTTPWireError(431, "too many header fields") }
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(lines.count)
        for raw in lines {
            guard let first = raw.first else { throw HTTPWireError(400, "empty header line") }
            if first == 0x20 || first == 0x09 {
                guard unfold, let last = fields.popLast() else {
                    throw HTTPWireError(400, "obsolete line folding is not accepted")
                }
                let more = try value(UnsafeRawBufferPointer(rebasing: raw))
                fields.append(
                    (last.name, last.value.isEmpty ? more : more.isEmpty ? last.value : last.value + " " + more))
                continue
            }
            fields.append(try field(UnsafeRawBufferPointer(rebasing: raw)))
        }
        return fields
    }

    /// One field line: `token ":" OWS value OWS`, the name lowercased.
    /// - Throws: ``HTTPWireError`` 400 for a name that is not a token or a value with a control character.
    public static func field(_ line: UnsafeRawBufferPointer) throws(HTTPWireError) -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0 else {
            throw HTTPWireError(400, "header field without a name")
        }
        let nameBytes = UnsafeRawBufferPointer(rebasing: line[0..<colon])
        guard nameBytes.allSatisfy(isTokenByte) else {
            throw HTTPWireError(400, "malformed header field name (no whitespace before the colon)")
        }
        // A name is token bytes (ASCII), lowercased byte by byte.
        let name = String(unsafeUninitializedCapacity: nameBytes.count) { name in
            for (index, byte) in nameBytes.enumerated() {
                name[index] = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
            }
            return nameBytes.count
        }
        return (name, try value(UnsafeRawBufferPointer(rebasing: line[(colon + 1)...])))
    }

    /// A field value without its surrounding spaces and tabs; obs-text (0x80–0xFF) read as UTF-8 when it is, else as
    /// ISO-8859-1.
    private static func value(_ raw: UnsafeRawBufferPointer) throws(HTTPWireError) -> String {
        guard raw.allSatisfy(isValueByte) else {
            throw HTTPWireError(400, "header field value holds a control character")
        }
        var bytes = raw
        while let first = bytes.first, first == 0x20 || first == 0x09 {
            bytes = UnsafeRawBufferPointer(rebasing: bytes.dropFirst())
        }
        while let last = bytes.last, last == 0x20 || last == 0x09 {
            bytes = UnsafeRawBufferPointer(rebasing: bytes.dropLast())
        }
        return String(validating: bytes, as: UTF8.self)
            ?? String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }

    /// Appends `name: value CRLF`.
    /// - Throws: ``HTTPWireError`` 500 when the name is not a token or the value holds a control character (a CR or
    ///   LF would end the line and start another field, or a request): nothing is appended then.
    public static func append(name: String, value: String, to bytes: inout [UInt8]) throws(HTTPWireError) {
        guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else {
            throw HTTPWireError(500, "a header field name must be a token")
        }
        guard value.utf8.allSatisfy(isValueByte) else {
            throw HTTPWireError(500, "the \(name) header's value holds a control character")
        }
        bytes += name.utf8
        bytes += ": ".utf8
        bytes += value.utf8
        bytes += "\r\n".utf8
    }

    /// The values of every field named `name` (lowercase), each split at commas and trimmed: a list field as one
    /// list, however many lines carry it (RFC 9110 §5.3).
    public static func list(_ name: String, in fields: [(name: String, value: String)]) -> [Substring] {
        fields.filter { $0.name == name }.flatMap {
            $0.value.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingWhitespace() }
        }
    }

    /// The `Host` value and authority of a URL (RFC 9112 §3.2, RFC 3986 §3.2.2): `host:port`, an IPv6 address in
    /// brackets.
    public static func authority(host: String, port: UInt16) -> String {
        "\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// Whether `byte` may stand in a field value: HTAB, visible ASCII, space and obs-text (no other control byte).
    public static func isValueByte(_ byte: UInt8) -> Bool { byte == 0x09 || (byte >= 0x20 && byte != 0x7F) }

    /// tchar of RFC 9110 §5.6.2.
    public static func isTokenByte(_ byte: UInt8) -> Bool { tokenBytes[Int(byte)] }

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

    /// The value of a hexadecimal digit, or `nil`.
    public static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension Substring {
    /// Without the spaces and tabs at either end.
    func trimmingWhitespace() -> Substring {
        var s = self
        while let first = s.first, first == " " || first == "\t" { s.removeFirst() }
        while let last = s.last, last == " " || last == "\t" { s.removeLast() }
        return s
    }
}
