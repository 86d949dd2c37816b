import Foundation

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

    /// Creates an identifier from a Foundation UUID.
    public init(_ uuid: UUID) {
        let t = uuid.uuid
        high = [t.0, t.1, t.2, t.3, t.4, t.5, t.6, t.7].reduce(0) { $0 << 8 | UInt64($1) }
        low = [t.8, t.9, t.10, t.11, t.12, t.13, t.14, t.15].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// Parses the canonical `8-4-4-4-12` text form (any case).
    /// - Parameter text: the UUID text.
    public init?(_ text: String) {
        guard let uuid = UUID(uuidString: text) else { return nil }
        self.init(uuid)
    }

    /// A new random (version 4) identifier.
    public static func random() -> EntryID { EntryID(UUID()) }

    /// A version-4-shaped identifier drawn from a seeded generator (deterministic demos and imports).
    public static func random<G: RandomNumberGenerator>(using generator: inout G) -> EntryID {
        let high = (generator.next() & ~0xF000) | 0x4000
        let low = (generator.next() & ~(0xC000_0000_0000_0000)) | 0x8000_0000_0000_0000
        return EntryID(high: high, low: low)
    }

    /// The Foundation UUID.
    public var uuid: UUID {
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            bytes[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(i)))
            bytes[8 + i] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(i)))
        }
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// Lower-case canonical text, e.g. `3f2504e0-4f89-41d3-9a0c-0305e82c3301`.
    public var description: String { uuid.uuidString.lowercased() }

    public static func < (a: EntryID, b: EntryID) -> Bool { (a.high, a.low) < (b.high, b.low) }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(high ^ (low &* 0x9E37_79B9_7F4A_7C15))
    }
}
