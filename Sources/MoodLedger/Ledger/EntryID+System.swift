import Platform
import Synchronization

extension EntryID {
    /// A new random (version 4) identifier, from the system's random source.
    public static func random() -> EntryID {
        randomBits.withLock { random(using: &$0) }
    }

    /// The system's random bytes drawn 4 KiB at a time: one system call per 256 identifiers instead of two each.
    private static let randomBits = Mutex(BufferedSystemRandom())
}

/// Random 64-bit words from the system's cryptographically secure source, read a buffer at a time.
struct BufferedSystemRandom: RandomNumberGenerator {
    private var bytes: [UInt8] = []
    private var position = 0

    mutating func next() -> UInt64 {
        if position + 8 > bytes.count {
            bytes = SystemIO().randomBytes(4_096)
            position = 0
        }
        defer { position += 8 }
        return bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: position, as: UInt64.self) }
    }
}
