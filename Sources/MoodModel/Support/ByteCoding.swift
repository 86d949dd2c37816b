/// Appends the codec's primitives (see `Specs/events.md`) to a byte array.
package struct ByteWriter {
    package var bytes: [UInt8] = []

    @inlinable package init(capacity: Int = 128) { bytes.reserveCapacity(capacity) }

    @inlinable @inline(__always) package mutating func u8(_ value: UInt8) { bytes.append(value) }

    /// Unsigned LEB128.
    @inlinable @inline(__always) package mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// ZigZag then LEB128.
    @inlinable @inline(__always) package mutating func signed(_ value: Int64) {
        varint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    package mutating func string(_ value: String) {
        var text = value
        text.withUTF8 { string(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// Bytes: their count as a varint, then the bytes.
    package mutating func bytes(_ value: [UInt8]) {
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A string given as its UTF-8 bytes: the same encoding as ``string(_:)``.
    mutating func string(utf8: UnsafeRawBufferPointer) {
        varint(UInt64(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    @inlinable package mutating func id(_ value: EntryID) {
        withUnsafeBytes(of: value.high.bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: value.low.bigEndian) { bytes.append(contentsOf: $0) }
    }
}

/// Reads the codec's primitives with bounds checks: a malformed payload throws, never traps.
package struct ByteReader {
    @usableFromInline let buffer: UnsafeRawBufferPointer
    package var position = 0

    @inlinable package init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    @inlinable package var isAtEnd: Bool { position == buffer.count }

    package struct Malformed: Error {
        package var what: String
        @inlinable package init(what: String) { self.what = what }
    }

    @inlinable @inline(__always) package mutating func u8() throws(Malformed) -> UInt8 {
        guard position < buffer.count else { throw Malformed(what: "payload ends early") }
        defer { position += 1 }
        return buffer[position]
    }

    @inlinable @inline(__always) package mutating func varint() throws(Malformed) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try u8()
            if byte < 0x80 {
                // The last byte: the tenth carries only bit 63, and a zero after the first is not the shortest form.
                guard shift < 63 || byte <= 1 else { throw Malformed(what: "varint overflows 64 bits") }
                guard byte != 0 || shift == 0 else { throw Malformed(what: "varint not in its shortest form") }
                return result | UInt64(byte) << shift
            }
            guard shift < 63 else { throw Malformed(what: "varint overflows 64 bits") }
            result |= UInt64(byte & 0x7F) << shift
            shift += 7
        }
    }

    @inlinable @inline(__always) package mutating func signed() throws(Malformed) -> Int64 {
        let raw = try varint()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    /// A length-prefixed UTF-8 string; invalid UTF-8 is malformed (never replaced by U+FFFD).
    package mutating func string(_ field: String = "string") throws(Malformed) -> String {
        let bytes = try utf8(field)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Bytes written by ``ByteWriter/bytes(_:)``: a count no larger than what is left, then the bytes (any).
    package mutating func bytes(_ field: String) throws(Malformed) -> [UInt8] {
        let count = try varint()
        guard count <= UInt64(buffer.count - position) else { throw Malformed(what: "\(field): length past the end") }
        let start = position
        position += Int(count)
        return Array(buffer[start..<position])
    }

    /// A string's bytes, checked to be valid UTF-8, without building a `String` (valid while the buffer is).
    mutating func utf8(_ field: String = "string") throws(Malformed) -> UnsafeRawBufferPointer {
        let count = try varint()
        guard count <= UInt64(buffer.count - position) else { throw Malformed(what: "\(field): length past the end") }
        let start = position
        position += Int(count)
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[start..<position])
        // ASCII (most notes, ids and tags) is valid UTF-8 as it stands: checked eight bytes at a time, without the
        // generic validator, which cost ~30 instructions a byte (6 % of a replay's).
        if Self.isASCII(bytes) { return bytes }
        guard String(validating: bytes, as: UTF8.self) != nil else { throw Malformed(what: "\(field): invalid UTF-8") }
        return bytes
    }

    /// Whether every byte is below 0x80.
    @inline(__always)
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        var high: UInt64 = 0
        while index + 8 <= bytes.count {
            high |= bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < bytes.count {
            high |= UInt64(bytes[index])
            index += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    /// A boolean byte: exactly 0 or 1.
    mutating func bool(_ field: String) throws(Malformed) -> Bool {
        switch try u8() {
        case 0: return false
        case 1: return true
        case let other: throw Malformed(what: "\(field): boolean byte \(other) is neither 0 nor 1")
        }
    }

    package mutating func id() throws(Malformed) -> EntryID {
        guard buffer.count - position >= 16 else { throw Malformed(what: "id past the end") }
        let high = UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: position, as: UInt64.self))
        let low = UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: position + 8, as: UInt64.self))
        position += 16
        return EntryID(high: high, low: low)
    }

    /// The next id of a list kept in strictly ascending id order, never the zero id; `previous` is the one read
    /// before it (nil at the list's start), and becomes this one. `list` names the list in the error.
    package mutating func ascendingID(after previous: inout EntryID?, in list: String) throws(Malformed) -> EntryID {
        let id = try id()
        guard id != .none, previous.map({ $0 < id }) ?? true else {
            throw Malformed(what: "\(list): ids not ascending")
        }
        previous = id
        return id
    }

    /// A count that must be plausible for the bytes left (each element takes at least one byte).
    package mutating func count() throws(Malformed) -> Int {
        let count = try varint()
        guard count <= UInt64(buffer.count - position) else { throw Malformed(what: "count past the end") }
        return Int(count)
    }
}
