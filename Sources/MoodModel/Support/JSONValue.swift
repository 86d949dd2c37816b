/// A JSON value with ordered object keys, so output is stable (golden files, diffs) and parsing keeps order.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y
        case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return Double(x) == y
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// The value for `key` in an object (first occurrence), else `nil`.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let pairs) = self else { return nil }
        return pairs.first { $0.0 == key }?.1
    }

    /// The string, if this is one.
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    /// The number as a Double, if this is a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }
    /// The number as an integer, if it is a whole number.
    public var intValue: Int? {
        switch self {
        case .int(let i): return Int(exactly: i)
        case .double(let d): return d.rounded() == d && abs(d) < 1e15 ? Int(d) : nil
        default: return nil
        }
    }
    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    /// Whether this is `null`.
    public var isNull: Bool { self == .null }

    /// An optional value, or `null`.
    public static func optional<T>(_ value: T?, _ transform: (T) -> JSONValue) -> JSONValue {
        value.map(transform) ?? .null
    }

    /// Compact JSON text (no spaces), or indented with two spaces when `pretty`.
    public func serialized(pretty: Bool = false) -> String {
        String(decoding: serializedBytes(pretty: pretty), as: UTF8.self)
    }

    /// ``serialized(pretty:)`` as UTF-8 bytes (what a server writes), built without intermediate strings.
    public func serializedBytes(pretty: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out, pretty: pretty, indent: 0)
        return out
    }

    /// Appends ``serialized(pretty:)``'s bytes as they read `indent` levels deep in a pretty document (an element
    /// streamed into a larger one: its own lines indented, its first line not).
    package func write(to out: inout [UInt8], prettyAt indent: Int) { write(to: &out, pretty: true, indent: indent) }

    private func write(to out: inout [UInt8], pretty: Bool, indent: Int) {
        switch self {
        case .null: out += "null".utf8
        case .bool(let b): out += (b ? "true" : "false").utf8
        case .int(let i): out += String(i).utf8
        case .double(let d): out += JSONValue.format(d).utf8
        case .string(let s): JSONValue.quote(s, into: &out)
        case .array(let items):
            if items.isEmpty { out += "[]".utf8; return }
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                if pretty { Self.newline(&out, indent + 1) }
                item.write(to: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { Self.newline(&out, indent) }
            out.append(UInt8(ascii: "]"))
        case .object(let pairs):
            if pairs.isEmpty { out += "{}".utf8; return }
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in pairs.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                if pretty { Self.newline(&out, indent + 1) }
                JSONValue.quote(key, into: &out)
                out += (pretty ? ": " : ":").utf8
                value.write(to: &out, pretty: pretty, indent: indent + 1)
            }
            if pretty { Self.newline(&out, indent) }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func newline(_ out: inout [UInt8], _ indent: Int) {
        out.append(10)
        for _ in 0..<(indent * 2) { out.append(32) }
    }

    /// Shortest round-tripping decimal; integers without a fraction; non-finite as null.
    static func format(_ d: Double) -> String {
        guard d.isFinite else { return "null" }
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) + ".0" }
        return "\(d)"
    }

    /// A JSON string: `"` and `\\` escaped, `\n` `\r` `\t` by name, other controls below U+0020 as `\u00xx`
    /// (lowercase hex); everything else, U+007F and non-ASCII included, as its UTF-8 bytes.
    static func quote(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = s
        text.withUTF8 { bytes in
            var runStart = 0
            for (i, byte) in bytes.enumerated()
            where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                out += UnsafeBufferPointer(rebasing: bytes[runStart..<i])
                runStart = i + 1
                switch byte {
                case UInt8(ascii: "\""): out += "\\\"".utf8
                case UInt8(ascii: "\\"): out += "\\\\".utf8
                case 10: out += "\\n".utf8
                case 13: out += "\\r".utf8
                case 9: out += "\\t".utf8
                default:
                    let digits = Array("0123456789abcdef".utf8)
                    out += "\\u00".utf8
                    out.append(digits[Int(byte >> 4)])
                    out.append(digits[Int(byte & 15)])
                }
            }
            out += UnsafeBufferPointer(rebasing: bytes[runStart...])
        }
        out.append(UInt8(ascii: "\""))
    }
}
