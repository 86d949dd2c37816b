/// A 128-bit identifier (a UUID) for entries and commands, hashed and compared as two integers.
public struct EntryID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The first 8 bytes, big-endian.
    public var high: UInt64
    /// The last 8 bytes, big-endian.
    public var low: UInt64

    /// Creates an identifier from its two halves.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Parses the canonical `8-4-4-4-12` text form (any case); `nil` for anything else.
    /// - Parameter text: the UUID text.
    public init?(_ text: String) {
        let utf8 = Array(text.utf8)
        guard utf8.count == 36 else { return nil }
        var value: (UInt64, UInt64) = (0, 0)
        var digits = 0
        for (index, byte) in utf8.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            if digits < 16 { value.0 = value.0 << 4 | UInt64(nibble) } else { value.1 = value.1 << 4 | UInt64(nibble) }
            digits += 1
        }
        self.init(high: value.0, low: value.1)
    }

    /// The all-zero id: what events that concern no entry (`sync.pulled`, `remote.configured`) carry.
    public static let none = EntryID(high: 0, low: 0)

    /// A version-4-shaped identifier drawn from a seeded generator (deterministic demos and imports).
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> EntryID {
        let high = (generator.next() & ~0xF000) | 0x4000
        let low = (generator.next() & ~(0xC000_0000_0000_0000)) | 0x8000_0000_0000_0000
        return EntryID(high: high, low: low)
    }

    /// Lower-case canonical text, e.g. `3f2504e0-4f89-41d3-9a0c-0305e82c3301`.
    public var description: String {
        var text: [UInt8] = []
        text.reserveCapacity(36)
        write(into: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// ``description`` appended as UTF-8 bytes.
    public func write(into text: inout [UInt8]) {
        var scratch: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)  // 40 bytes on the stack
        withUnsafeMutableBytes(of: &scratch) { buffer in
            var at = 0
            for index in 0..<32 {
                if index == 8 || index == 12 || index == 16 || index == 20 {
                    buffer[at] = UInt8(ascii: "-")
                    at += 1
                }
                let word = index < 16 ? high : low
                let nibble = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * (index % 16)) & 0xF)
                buffer[at] = nibble < 10 ? 48 + nibble : 87 + nibble
                at += 1
            }
            text += UnsafeRawBufferPointer(rebasing: buffer[0..<36])
        }
    }

    public static func < (a: EntryID, b: EntryID) -> Bool { (a.high, a.low) < (b.high, b.low) }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(high ^ (low &* 0x9E37_79B9_7F4A_7C15))
    }
}

extension UnsafeRawBufferPointer {
    /// A 16-byte entry id (UUID order: two big-endian halves) at a byte offset (the caller has checked it).
    @inlinable @inline(__always)
    package func entryID(_ offset: Int) -> EntryID {
        EntryID(
            high: UInt64(bigEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
            low: UInt64(bigEndian: loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)))
    }
}
