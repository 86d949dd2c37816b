import MoodLedger

/// HS256 JSON Web Tokens (RFC 7519) with `sub`, `iat` and `exp`: the bearer tokens the seed API asks for.
public enum JWT {
    /// Why a token was refused (the text goes into `WWW-Authenticate`'s `error_description`).
    public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// A signed token for `subject`, valid from `now` for `ttl` seconds.
    /// - Parameters:
    ///   - subject: the user (`sub`).
    ///   - now: seconds since 1970 (`iat`).
    ///   - ttl: seconds it is valid for (`exp` = `now + ttl`).
    ///   - secret: the HMAC key.
    ///   - keyID: the `kid` claim: which API key of the user the token belongs to (``Credentials/keyID(of:)``);
    ///     the server refuses a token whose `kid` is not the user's current key's.
    public static func sign(subject: String, now: Int64, ttl: Int64, secret: [UInt8], keyID: String? = nil) -> String {
        let header = ByteText.base64URL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        var fields: [(String, JSONValue)] = [("sub", .string(subject)), ("iat", .int(now)), ("exp", .int(now + ttl))]
        if let keyID { fields.append(("kid", .string(keyID))) }
        let claims = JSONValue.object(fields)
        let payload = ByteText.base64URL(Array(claims.serialized().utf8))
        let signature = HMACSHA256.mac(key: secret, message: Array("\(header).\(payload)".utf8))
        return "\(header).\(payload).\(ByteText.base64URL(signature))"
    }

    /// What a verified token says: whose it is and until when it is valid.
    public struct Claims: Sendable, Equatable {
        /// The `sub` claim: the user.
        public var subject: String
        /// The `exp` claim: seconds since 1970.
        public var expiry: Int64
        /// The `kid` claim: the API key the token was issued for, when it names one.
        public var keyID: String? = nil
    }

    /// Checks a token's form, algorithm (HS256 only; `none` never), signature (constant time) and expiry.
    /// - Returns: the subject.
    /// - Throws: ``Invalid``.
    public static func verify(_ token: String, now: Int64, secret: [UInt8]) throws(Invalid) -> String {
        try claims(of: token, now: now, secret: secret).subject
    }

    /// Checks a token as ``verify(_:now:secret:)`` does.
    /// - Parameters:
    ///   - token: the compact serialization, `header.payload.signature`.
    ///   - now: seconds since 1970, for `exp` and `nbf`.
    ///   - secret: the HMAC key.
    /// - Returns: its subject and expiry.
    /// - Throws: ``Invalid``.
    public static func claims(of token: String, now: Int64, secret: [UInt8]) throws(Invalid) -> Claims {
        let bytes = token.utf8
        let dot = UInt8(ascii: ".")
        guard bytes.count <= 4096, let first = bytes.firstIndex(of: dot),
            let second = bytes[bytes.index(after: first)...].firstIndex(of: dot),
            !bytes[bytes.index(after: second)...].contains(dot),
            let headerBytes = ByteText.unbase64URL(utf8: bytes[..<first]),
            let payloadBytes = ByteText.unbase64URL(utf8: bytes[bytes.index(after: first)..<second]),
            let signature = ByteText.unbase64URL(utf8: bytes[bytes.index(after: second)...])
        else {
            throw Invalid(reason: "malformed token")
        }
        guard let header = try? JSONParser.parse(String(decoding: headerBytes, as: UTF8.self)),
            header["alg"] == .string("HS256")
        else {
            throw Invalid(reason: "the token's algorithm must be HS256")
        }
        let expected = HMACSHA256.mac(key: secret, message: Array(bytes[..<second]))
        guard ConstantTime.equal(signature, expected) else { throw Invalid(reason: "bad signature") }
        guard let claims = try? JSONParser.parse(String(decoding: payloadBytes, as: UTF8.self)),
            let subject = claims["sub"]?.stringValue, let expiry = claims["exp"]?.intValue
        else {
            throw Invalid(reason: "the token needs sub and exp")
        }
        guard Int64(expiry) > now else { throw Invalid(reason: "the token has expired") }
        if let notBefore = claims["nbf"]?.intValue, Int64(notBefore) > now {
            throw Invalid(reason: "the token is not valid yet")
        }
        return Claims(subject: subject, expiry: Int64(expiry), keyID: claims["kid"]?.stringValue)
    }
}
