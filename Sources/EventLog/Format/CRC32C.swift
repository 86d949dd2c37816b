import CPlatform

/// CRC-32C (Castagnoli) with LevelDB's masking for stored checksums: the CPU's instruction where there is one
/// (SSE 4.2, ARMv8 CRC), else slicing-by-8 in Swift. Both give the same values (tested on random inputs).
public enum CRC32C {
    /// Whether ``extend(_:_:)`` uses the CPU's CRC-32C instruction.
    public static let usesHardware = cplatform_crc32c_hardware() == 1
    private static let tables: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var crc = UInt32(i)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            table[i] = crc
        }
        for i in 0..<256 {
            for slice in 1..<8 {
                let previous = table[(slice - 1) * 256 + i]
                table[slice * 256 + i] = (previous >> 8) ^ table[Int(previous & 0xFF)]
            }
        }
        return table
    }()

    /// Extends a running (unfinalised) CRC state with more bytes.
    /// - Parameters:
    ///   - state: the state from a previous call, or `0xFFFF_FFFF` to start.
    ///   - bytes: the bytes to add.
    /// - Returns: the new state; ``finish(_:)`` turns it into the checksum.
    @inlinable
    public static func extend(_ state: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        _extend(state, bytes)
    }

    @usableFromInline
    static func _extend(_ state: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard usesHardware, let base = bytes.baseAddress else { return software(state, bytes) }
        return cplatform_crc32c_extend(state, base, bytes.count)
    }

    /// Extends a running state in portable Swift (slicing-by-8): what ``extend(_:_:)`` falls back to.
    /// - Parameters:
    ///   - state: the state from a previous call, or `0xFFFF_FFFF` to start.
    ///   - bytes: the bytes to add.
    /// - Returns: the new state.
    public static func software(_ state: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc = state
        var index = 0
        let count = bytes.count
        guard count > 0, let base = bytes.baseAddress else { return crc }
        tables.withUnsafeBufferPointer { t in
            while index + 8 <= count {
                let word = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let low = UInt32(truncatingIfNeeded: word) ^ crc
                let high = UInt32(truncatingIfNeeded: word >> 32)
                crc = t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = (crc >> 8) ^ t[Int((crc ^ UInt32(base.load(fromByteOffset: index, as: UInt8.self))) & 0xFF)]
                index += 1
            }
        }
        return crc
    }

    /// Finalises a running state into the CRC-32C value.
    @inlinable
    public static func finish(_ state: UInt32) -> UInt32 { state ^ 0xFFFF_FFFF }

    /// The CRC-32C of `bytes`.
    /// - Parameter bytes: the data.
    /// - Returns: the plain (unmasked) checksum.
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        finish(extend(0xFFFF_FFFF, bytes))
    }

    /// The CRC-32C of a byte array.
    /// - Parameter bytes: the data.
    /// - Returns: the plain (unmasked) checksum.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    /// LevelDB's mask: rotate right by 15 and add a constant, for checksums stored beside checksummed data.
    /// - Parameter crc: a plain checksum.
    /// - Returns: the value stored on disk.
    @inlinable
    public static func mask(_ crc: UInt32) -> UInt32 {
        ((crc >> 15) | (crc << 17)) &+ 0xA282_EAD8
    }
}
