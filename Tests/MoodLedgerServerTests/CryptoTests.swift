import Testing

@testable import MoodLedgerServer

@Suite("SHA-256, HMAC and JWT against their standards' vectors")
struct CryptoTests {
    @Test("FIPS 180-4 example vectors")
    func sha256() {
        #expect(
            ByteText.hex(SHA256.hash(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            ByteText.hex(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            ByteText.hex(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            ByteText.hex(SHA256.hash([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        // Padding edges: 55, 56 and 64 bytes.
        #expect(
            ByteText.hex(SHA256.hash([UInt8](repeating: 0x61, count: 55)))
                == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318")
        #expect(
            ByteText.hex(SHA256.hash([UInt8](repeating: 0x61, count: 56)))
                == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a")
        #expect(
            ByteText.hex(SHA256.hash([UInt8](repeating: 0x61, count: 64)))
                == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
    }

    @Test("RFC 4231 HMAC-SHA-256 test cases 1, 2, 3, 4, 6 and 7")
    func hmac() {
        func mac(_ key: [UInt8], _ data: [UInt8]) -> String { ByteText.hex(HMACSHA256.mac(key: key, message: data)) }
        #expect(
            mac([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8))
                == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(
            mac(Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(
            mac([UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50))
                == "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe")
        #expect(
            mac(Array(1...25), [UInt8](repeating: 0xcd, count: 50))
                == "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b")
        #expect(
            mac(
                [UInt8](repeating: 0xaa, count: 131),
                Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        #expect(
            mac(
                [UInt8](repeating: 0xaa, count: 131),
                Array(
                    ("This is a test using a larger than block-size key and a larger "
                        + "than block-size data. The key needs to be hashed before being used by the HMAC algorithm.")
                        .utf8))
                == "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2")
    }

    @Test("base64url round trips and refuses padding and stray characters")
    func base64() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(ByteText.unbase64URL(ByteText.base64URL(bytes)) == bytes)
        }
        #expect(ByteText.base64URL(Array("any carnal pleas".utf8)) == "YW55IGNhcm5hbCBwbGVhcw")
        #expect(
            ByteText.unbase64URL("YQ==") == nil && ByteText.unbase64URL("Y") == nil
                && ByteText.unbase64URL("a+b/") == nil)
        // Only the one encoding of a byte string: a short last group's leftover bits must be zero.
        #expect(ByteText.unbase64URL("YQ") == [0x61] && ByteText.unbase64URL("YR") == nil)
        #expect(ByteText.unbase64URL("YWE") == [0x61, 0x61] && ByteText.unbase64URL("YWF") == nil)
        #expect(ByteText.unbase64URL("YW\u{e9}") == nil && ByteText.unbase64URL("") == [])
    }

    @Test("JWT: HS256 signed and verified; tampering, expiry, other secrets and alg none are refused")
    func jwt() throws {
        let secret = [UInt8](repeating: 7, count: 32)
        let token = JWT.sign(subject: "alice", now: 1000, ttl: 60, secret: secret)
        #expect(try JWT.verify(token, now: 1059, secret: secret) == "alice")
        #expect(throws: JWT.Invalid.self) { try JWT.verify(token, now: 1060, secret: secret) }
        #expect(throws: JWT.Invalid.self) { try JWT.verify(token, now: 1000, secret: [UInt8](repeating: 8, count: 32)) }
        let parts = token.split(separator: ".").map(String.init)
        let forged = ByteText.base64URL(Array(#"{"sub":"bob","iat":1000,"exp":9999999999}"#.utf8))
        #expect(throws: JWT.Invalid.self) {
            try JWT.verify("\(parts[0]).\(forged).\(parts[2])", now: 1000, secret: secret)
        }
        let none = ByteText.base64URL(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        #expect(throws: JWT.Invalid.self) { try JWT.verify("\(none).\(parts[1]).", now: 1000, secret: secret) }
        #expect(throws: JWT.Invalid.self) { try JWT.verify("garbage", now: 1000, secret: secret) }
        #expect(throws: JWT.Invalid.self) { try JWT.verify(token + ".", now: 1000, secret: secret) }
        #expect(throws: JWT.Invalid.self) { try JWT.verify("\(parts[0]).\(parts[1])", now: 1000, secret: secret) }
        #expect(try JWT.claims(of: token, now: 1000, secret: secret) == JWT.Claims(subject: "alice", expiry: 1060))
    }
}
