/// Compact JSON written straight into bytes: the same text ``JSONValue/serialized(pretty:)`` makes, without building
/// a tree first. For hot paths (a server's list answers); the caller writes keys and values in order.
package struct JSONBytes: Sendable {
    /// The text so far, UTF-8.
    package private(set) var bytes: [UInt8] = []
    /// Whether the next value is the first of its container (or follows a key): no comma before it.
    private var first = true

    /// An empty text with room for `capacity` bytes.
    package init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    private mutating func separate() {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
    }

    /// `{`: members follow as ``key(_:)`` and a value each.
    package mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        first = true
    }

    /// `}`.
    package mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        first = false
    }

    /// `[`: elements follow.
    package mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        first = true
    }

    /// `]`.
    package mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        first = false
    }

    /// A member's key, known at compile time (so it needs no escaping (ASCII letters, digits and `_` only: checked in debug); its value comes next.
    package mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { buffer in
            assert(
                buffer.allSatisfy {
                    $0 == UInt8(ascii: "_") || (48...57).contains($0) || (97...122).contains($0)
                        || (65...90).contains($0)
                })
            bytes += buffer
        }
        bytes += "\":".utf8
        first = true
    }

    /// An entry id as a JSON string.
    package mutating func id(_ id: EntryID) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        id.write(into: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// A value already serialized (a cached fragment, a vocabulary word's quoted name): appended as is.
    package mutating func fragment(_ text: [UInt8]) {
        separate()
        bytes += text
    }

    /// A string, escaped as ``JSONValue`` escapes it.
    package mutating func string(_ value: String) {
        separate()
        JSONValue.quote(value, into: &bytes)
    }

    /// A string, or `null`.
    package mutating func string(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    /// An integer.
    package mutating func int(_ value: Int64) {
        separate()
        bytes += String(value).utf8
    }

    /// An integer, or `null`.
    package mutating func int(_ value: Int?) {
        if let value { int(Int64(value)) } else { null() }
    }

    /// A number as ``JSONValue`` formats doubles.
    package mutating func double(_ value: Double) {
        separate()
        bytes += JSONValue.format(value).utf8
    }

    /// `true` or `false`.
    package mutating func bool(_ value: Bool) {
        separate()
        bytes += (value ? "true" : "false").utf8
    }

    /// `null`.
    package mutating func null() {
        separate()
        bytes += "null".utf8
    }

    /// An instant as a JSON string (``ISO8601/format(milliseconds:offsetMinutes:)``).
    package mutating func instant(milliseconds: Int64, offsetMinutes: Int) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        ISO8601.write(milliseconds: milliseconds, offsetMinutes: offsetMinutes, into: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// A whole value from a tree.
    package mutating func value(_ value: JSONValue) {
        separate()
        bytes += value.serializedBytes()
    }
}
