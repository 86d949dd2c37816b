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
        extend(state, bytes, hardware: usesHardware)
    }

    /// ``extend(_:_:)`` for a caller that read ``usesHardware`` once: reading it (a lazily set global) costs a
    /// `swift_once` call each time, twice a record for a log's scanner.
    /// - Parameters:
    ///   - state: the state from a previous call, or `0xFFFF_FFFF` to start.
    ///   - bytes: the bytes to add.
    ///   - hardware: ``usesHardware``.
    /// - Returns: the new state.
    @inlinable @inline(__always)
    package static func extend(_ state: UInt32, _ bytes: UnsafeRawBufferPointer, hardware: Bool) -> UInt32 {
        guard hardware, let base = bytes.baseAddress else { return software(state, bytes) }
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
                crc =
                    t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
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

    /// Joins the running state of a first run of bytes with that of a second run computed from zero: the state of
    /// the two runs one after the other (so two threads can check two halves of a long run).
    /// - Parameters:
    ///   - first: the running state after the first run.
    ///   - second: the running state of the second run, started from `0` (not `0xFFFF_FFFF`).
    ///   - length: the second run's length in bytes.
    /// - Returns: the state after both runs, as ``extend(_:_:)`` over all the bytes would give it.
    public static func combine(_ first: UInt32, _ second: UInt32, secondLength length: Int) -> UInt32 {
        // The CRC register is linear: running the second bytes from `first` gives their run from zero plus `first`
        // carried 8 × length bit positions forward, that is multiplied by x^(8·length) modulo the polynomial.
        precondition(length >= 0, "a negative length")
        var factor: UInt32 = 0x8000_0000  // the polynomial 1
        var n = length
        var k = 0
        while n != 0 {
            if n & 1 != 0 { factor = multiplyModP(powers8[k], factor) }
            n >>= 1
            k += 1
        }
        return multiplyModP(factor, first) ^ second
    }

    /// x^(8·2^k) modulo the polynomial, for k = 0…63 (bit-reflected registers).
    private static let powers8: [UInt32] = {
        var result: [UInt32] = [0x0080_0000]  // x^8
        while result.count < 64 { result.append(multiplyModP(result[result.count - 1], result[result.count - 1])) }
        return result
    }()

    /// The product of two polynomials modulo the CRC-32C polynomial, as bit-reflected registers.
    private static func multiplyModP(_ a: UInt32, _ b: UInt32) -> UInt32 {
        var product: UInt32 = 0
        var b = b
        var bit: UInt32 = 0x8000_0000
        while bit != 0 {
            if a & bit != 0 { product ^= b }
            b = b & 1 != 0 ? (b >> 1) ^ 0x82F6_3B78 : b >> 1
            bit >>= 1
        }
        return product
    }

    /// LevelDB's mask: rotate right by 15 and add a constant, for checksums stored beside checksummed data.
    /// - Parameter crc: a plain checksum.
    /// - Returns: the value stored on disk.
    @inlinable
    public static func mask(_ crc: UInt32) -> UInt32 {
        ((crc >> 15) | (crc << 17)) &+ 0xA282_EAD8
    }
}
