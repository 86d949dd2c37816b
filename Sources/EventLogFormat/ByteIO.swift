/// Little-endian helpers for reading and writing fixed-width integers in raw buffers.
extension UnsafeRawBufferPointer {
    @inlinable @inline(__always) package func u16(_ offset: Int) -> UInt16 {
        UInt16(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }
    @inlinable @inline(__always) package func u32(_ offset: Int) -> UInt32 {
        UInt32(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
    @inlinable @inline(__always) package func u64(_ offset: Int) -> UInt64 {
        UInt64(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
    @inlinable @inline(__always) package func i64(_ offset: Int) -> Int64 {
        Int64(littleEndian: loadUnaligned(fromByteOffset: offset, as: Int64.self))
    }
    /// Whether every byte is zero.
    @inlinable package func isAllZero() -> Bool {
        for byte in self where byte != 0 { return false }
        return true
    }
}

extension Array where Element == UInt8 {
    @inline(__always) mutating func appendLE(_ value: UInt16) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
    @inlinable @inline(__always) package mutating func appendLE(_ value: UInt32) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
    @inlinable @inline(__always) package mutating func appendLE(_ value: UInt64) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
    @inline(__always) mutating func storeLE(_ value: UInt32, at offset: Int) {
        Swift.withUnsafeBytes(of: value.littleEndian) { bytes in
            for i in 0..<4 { self[offset + i] = bytes[i] }
        }
    }
}
