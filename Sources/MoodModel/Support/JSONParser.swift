/// A strict JSON parser (RFC 8259) producing ``JSONValue``; errors give the line and column.
package struct JSONParser {
    /// Why a text is not JSON.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package var line: Int
        package var column: Int
        package var reason: String
        package var description: String { "invalid JSON at line \(line), column \(column): \(reason)" }
    }

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0

    /// Parses a whole text (a UTF-8 BOM is allowed).
    /// - Throws: ``Failure``.
    package static func parse(_ text: String) throws(Failure) -> JSONValue {
        var parser = JSONParser(bytes: Array(text.utf8))
        if parser.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
        let value = try parser.value()
        parser.skipSpace()
        guard parser.index == parser.bytes.count else { throw parser.fail("unexpected text after the value") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func fail(_ reason: String) -> Failure {
        var line = 1
        var column = 1
        for b in bytes[0..<min(index, bytes.count)] {
            if b == 10 { line += 1; column = 1 } else { column += 1 }
        }
        return Failure(line: line, column: column, reason: reason)
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func value() throws(Failure) -> JSONValue {
        skipSpace()
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        default: return try number()
        }
    }

    private mutating func literal(_ word: String, _ value: JSONValue) throws(Failure) -> JSONValue {
        let w = Array(word.utf8)
        guard bytes.count - index >= w.count, Array(bytes[index..<(index + w.count)]) == w else {
            throw fail("unexpected character")
        }
        index += w.count
        return value
    }

    private mutating func nest() throws(Failure) {
        depth += 1
        if depth > 512 { throw fail("nested too deeply") }
    }

    private mutating func object() throws(Failure) -> JSONValue {
        try nest()
        defer { depth -= 1 }
        index += 1
        var pairs: [(String, JSONValue)] = []
        var seen: Set<String>?
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(pairs) }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a key string") }
            let key = try string()
            // A key given twice is refused: parsers disagree on which value wins (the first, the last), so a proxy
            // and this reader could act on different requests.
            // Small objects compare keys in place; a large one keeps a set, so a hostile body of many keys stays linear.
            if seen != nil {
                guard seen!.insert(key).inserted else { throw fail("duplicate key \"\(key.prefix(64))\"") }
            } else {
                if pairs.contains(where: { $0.0 == key }) { throw fail("duplicate key \"\(key.prefix(64))\"") }
                if pairs.count == 16 { seen = Set(pairs.map(\.0) + [key]) }
            }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            pairs.append((key, try value()))
            skipSpace()
            guard index < bytes.count else { throw fail("unterminated object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(pairs) }
            throw fail("expected ',' or '}'")
        }
    }

    private mutating func array() throws(Failure) -> JSONValue {
        try nest()
        defer { depth -= 1 }
        index += 1
        var items: [JSONValue] = []
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
        while true {
            items.append(try value())
            skipSpace()
            guard index < bytes.count else { throw fail("unterminated array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            throw fail("expected ',' or ']'")
        }
    }

    private mutating func string() throws(Failure) -> String {
        index += 1
        // Most strings have no escape: one scan, one String made from the bytes.
        let start = index
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: bytes[start..<(index - 1)], as: UTF8.self)
            }
            if b == UInt8(ascii: "\\") || b < 0x20 { break }
            index += 1
        }
        var text = Array(bytes[start..<index])
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: text, as: UTF8.self)
            }
            if b < 0x20 { throw fail("control character in string") }
            if b == UInt8(ascii: "\\") {
                index += 1
                guard index < bytes.count else { break }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(e)
                case UInt8(ascii: "b"): text.append(0x08)
                case UInt8(ascii: "f"): text.append(0x0C)
                case UInt8(ascii: "n"): text.append(0x0A)
                case UInt8(ascii: "r"): text.append(0x0D)
                case UInt8(ascii: "t"): text.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                        bytes[index + 1] == UInt8(ascii: "u")
                    {
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw fail("bad surrogate pair") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw fail("bad \\u escape") }
                    text.append(contentsOf: UTF8.encode(scalar)!)
                default: throw fail("bad escape")
                }
                continue
            }
            text.append(b)
            index += 1
        }
        throw fail("unterminated string")
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard bytes.count - index >= 4 else { throw fail("short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Character(Unicode.Scalar(bytes[index])).hexDigitValue else { throw fail("bad hex digit") }
            value = value * 16 + UInt32(digit)
            index += 1
        }
        return value
    }

    /// A number in RFC 8259's grammar only: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` — no leading
    /// zeros, no `+` sign, no bare `.5` or `1.`, as every other parser reads them.
    private mutating func number() throws(Failure) -> JSONValue {
        let start = index
        func digit() -> Bool { index < bytes.count && bytes[index] >= 48 && bytes[index] <= 57 }
        func digits() throws(Failure) {
            guard digit() else { throw fail("bad number: a digit must follow") }
            while digit() { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard digit() else {
            throw fail(index == start ? "unexpected character" : "bad number: a digit must follow '-'")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if digit() { throw fail("bad number: no leading zeros") }
        } else {
            try digits()
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            try digits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            try digits()
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let i = Int64(text) { return .int(i) }
        guard let d = Double(text), d.isFinite else { throw fail("bad number") }
        return .double(d)
    }
}
