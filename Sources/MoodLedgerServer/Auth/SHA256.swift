/// SHA-256 (FIPS 180-4), written here so the package needs nothing beyond the toolchain. Tested against the
/// standard's vectors.
public struct SHA256: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)
    private var block: [UInt8] = []
    private var length: UInt64 = 0

    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
    ]

    /// A fresh hash.
    public init() { block.reserveCapacity(64) }

    /// The digest of `bytes`.
    public static func hash<S: Sequence>(_ bytes: S) -> [UInt8] where S.Element == UInt8 {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Adds bytes.
    public mutating func update<S: Sequence>(_ bytes: S) where S.Element == UInt8 {
        let array = Array(bytes)
        length &+= UInt64(array.count)
        var start = 0
        if !block.isEmpty {
            let take = min(64 - block.count, array.count)
            block += array[0..<take]
            start = take
            if block.count == 64 {
                block.withUnsafeBytes { compress($0) }
                block.removeAll(keepingCapacity: true)
            }
        }
        array.withUnsafeBytes { all in
            while all.count - start >= 64 {
                compress(UnsafeRawBufferPointer(rebasing: all[start..<(start + 64)]))
                start += 64
            }
        }
        if start < array.count { block += array[start...] }
    }

    /// The 32-byte digest.
    public mutating func finalize() -> [UInt8] {
        let bits = length &* 8
        var tail = block
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            tail.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
        tail.withUnsafeBytes { all in
            for start in stride(from: 0, to: all.count, by: 64) {
                compress(UnsafeRawBufferPointer(rebasing: all[start..<(start + 64)]))
            }
        }
        block.removeAll()
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for word in [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7] {
            digest += [
                UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8),
                UInt8(truncatingIfNeeded: word)
            ]
        }
        return digest
    }

    private mutating func compress(_ chunk: UnsafeRawBufferPointer) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for i in 0..<16 { w[i] = UInt32(bigEndian: chunk.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)) }
            for i in 16..<64 {
                let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
                let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, h) = state
            Self.k.withUnsafeBufferPointer { k in
                for i in 0..<64 {
                    let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                    let ch = (e & f) ^ (~e & g)
                    let t1 = h &+ s1 &+ ch &+ k[i] &+ w[i]
                    let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                    let maj = (a & b) ^ (a & c) ^ (b & c)
                    let t2 = s0 &+ maj
                    (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
                }
            }
            state = (
                state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g,
                state.7 &+ h
            )
        }
    }

    @inline(__always) private func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
}

/// HMAC (RFC 2104) over SHA-256, tested against RFC 4231.
public enum HMACSHA256 {
    /// The 32-byte MAC of `message` under `key`.
    public static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] { Key(key).mac(message) }

    /// A key with its padded inner and outer blocks hashed once: each MAC under it then costs the message's
    /// compressions and two more (PBKDF2's thousands of MACs under one key).
    struct Key {
        private var inner = SHA256()
        private var outer = SHA256()

        init(_ key: [UInt8]) {
            var block = key.count > 64 ? SHA256.hash(key) : key
            block += [UInt8](repeating: 0, count: 64 - block.count)
            inner.update(block.map { $0 ^ 0x36 })
            outer.update(block.map { $0 ^ 0x5c })
        }

        func mac(_ message: [UInt8]) -> [UInt8] {
            var first = inner
            first.update(message)
            var second = outer
            second.update(first.finalize())
            return second.finalize()
        }
    }
}

/// Byte comparisons whose time does not depend on where the inputs differ.
public enum ConstantTime {
    /// Whether `a` and `b` are equal, looking at every byte (the length is not secret).
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<a.count { difference |= a[i] ^ b[i] }
        return difference == 0
    }
}

/// Hex and base64url text for keys and tokens.
public enum ByteText {
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        return String(decoding: out, as: UTF8.self)
    }

    public static func unhex(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: utf8.count, by: 2) {
            guard let high = HTTPRequest.hexValue(utf8[i]), let low = HTTPRequest.hexValue(utf8[i + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Base64url without padding (RFC 4648 §5), as JWTs use.
    public static func base64URL(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var i = 0
        while i + 2 < bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [
                alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]
            ]
            i += 3
        }
        if bytes.count - i == 1 {
            let n = UInt32(bytes[i]) << 16
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)]]
        } else if bytes.count - i == 2 {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)]]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url without padding; `nil` for anything else (padding, other characters, a stray bit).
    public static func unbase64URL(_ text: String) -> [UInt8]? { unbase64URL(utf8: text.utf8) }

    /// Each byte's value in the base64url alphabet; 0xFF for a byte outside it.
    private static let alphabetValues: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { values[Int(byte)] = UInt8(index) }
        return values
    }()

    /// Decodes base64url without padding from UTF-8 bytes; `nil` for anything else. The only encoding of each byte
    /// string is accepted: the bits a short last group leaves over must be zero (what encoding again would give).
    static func unbase64URL<Bytes: Collection<UInt8>>(utf8 text: Bytes) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 3 / 4)
        var group: UInt32 = 0
        var filled = 0
        for byte in text {
            let value = alphabetValues[Int(byte)]
            guard value != 0xFF else { return nil }
            group = group << 6 | UInt32(value)
            filled += 1
            if filled == 4 {
                out += [
                    UInt8(truncatingIfNeeded: group >> 16), UInt8(truncatingIfNeeded: group >> 8),
                    UInt8(truncatingIfNeeded: group)
                ]
                group = 0
                filled = 0
            }
        }
        switch filled {
        case 2:
            guard group & 0xF == 0 else { return nil }
            out.append(UInt8(truncatingIfNeeded: group >> 4))
        case 3:
            guard group & 0x3 == 0 else { return nil }
            out += [UInt8(truncatingIfNeeded: group >> 10), UInt8(truncatingIfNeeded: group >> 2)]
        default: break
        }
        return out
    }
}
