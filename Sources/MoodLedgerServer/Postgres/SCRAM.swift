import Foundation

/// The client side of SCRAM-SHA-256 (RFC 5802 with RFC 7677's hash), as PostgreSQL asks for it: no channel binding
/// (`n,,`), the user name left empty (the server takes the startup message's), over the project's SHA-256, HMAC and
/// PBKDF2. The password is used as its UTF-8 bytes (SASLprep, RFC 4013, leaves ASCII passwords as they are; a
/// password with characters it would map must be given in its prepared form).
struct SCRAM: Sendable {
    /// The client's nonce (printable, no comma).
    let nonce: String
    let password: String
    /// The user name sent (PostgreSQL ignores it and uses the startup message's: empty by default).
    let user: String
    /// `n=USER,r=NONCE`: kept for the signature.
    var clientFirstBare: String { "n=" + user + ",r=" + nonce }
    /// The client-first message sent in `SASLInitialResponse`.
    var clientFirst: [UInt8] { Array(("n,," + clientFirstBare).utf8) }
    private var serverSignature: [UInt8] = []

    /// A conversation whose nonce is `nonceBytes` in base64 (18 random bytes: 24 characters).
    init(password: String, nonceBytes: [UInt8]) {
        self.init(password: password, nonce: Data(nonceBytes).base64EncodedString())
    }

    /// A conversation with the given nonce and user name (RFC 7677's example uses both).
    init(password: String, nonce: String, user: String = "") {
        self.password = password
        self.nonce = nonce
        self.user = user
    }

    /// The client-final message for the server-first message, and the server signature it must send back.
    /// - Throws: ``PostgresError`` `postgres_authentication` for a server-first message that is not well formed, whose
    ///   nonce does not extend ours, or whose iteration count is out of bounds.
    mutating func clientFinal(serverFirst: [UInt8]) throws(PostgresError) -> [UInt8] {
        guard let text = String(validating: serverFirst, as: UTF8.self) else { throw Self.bad("not UTF-8") }
        var fields: [Character: String] = [:]
        for part in text.split(separator: ",") {
            guard part.count >= 2, part.dropFirst().first == "=" else { throw Self.bad("a field is not X=VALUE") }
            fields[part.first!] = String(part.dropFirst(2))
        }
        guard let combined = fields["r"], combined.hasPrefix(nonce), combined.count > nonce.count else {
            throw Self.bad("its nonce does not extend the client's")
        }
        guard let saltText = fields["s"], let salt = Data(base64Encoded: saltText), !salt.isEmpty else {
            throw Self.bad("its salt is not base64")
        }
        // RFC 7677 asks for at least 4,096; a count far above what a server uses is refused before any work (a
        // hostile server could otherwise hold the node's CPU).
        guard let iterationText = fields["i"], let iterations = Int(iterationText),
            (1...10_000_000).contains(iterations)
        else { throw Self.bad("its iteration count is not 1 to 10,000,000") }
        let salted = Self.pbkdf2(password: Array(password.utf8), salt: Array(salt), iterations: iterations)
        let clientKey = HMACSHA256.mac(key: salted, message: Array("Client Key".utf8))
        let storedKey = SHA256.hash(clientKey)
        let withoutProof = "c=biws,r=" + combined
        let authMessage = Array((clientFirstBare + "," + text + "," + withoutProof).utf8)
        let signature = HMACSHA256.mac(key: storedKey, message: authMessage)
        let proof = zip(clientKey, signature).map { $0 ^ $1 }
        let serverKey = HMACSHA256.mac(key: salted, message: Array("Server Key".utf8))
        serverSignature = HMACSHA256.mac(key: serverKey, message: authMessage)
        return Array((withoutProof + ",p=" + Data(proof).base64EncodedString()).utf8)
    }

    /// Checks the server-final message (`v=SIGNATURE`): the server proved it knows the password's verifier.
    /// - Throws: ``PostgresError`` `postgres_authentication` when it does not match (or is an `e=` error).
    func verify(serverFinal: [UInt8]) throws(PostgresError) {
        let text = String(decoding: serverFinal, as: UTF8.self)
        guard text.hasPrefix("v="), let signature = Data(base64Encoded: String(text.dropFirst(2))),
            ConstantTime.equal(Array(signature), serverSignature)
        else { throw Self.bad("its final signature does not match: this is not the server that holds the password") }
    }

    private static func bad(_ reason: String) -> PostgresError {
        PostgresError(.authentication, "the server's SCRAM-SHA-256 message is refused: \(reason)")
    }

    /// PBKDF2-HMAC-SHA-256 (RFC 8018), one block: the 32-byte key SCRAM's salted password is.
    static func pbkdf2(password: [UInt8], salt: [UInt8], iterations: Int) -> [UInt8] {
        let key = HMACSHA256.Key(password)
        var block = key.mac(salt + [0, 0, 0, 1])
        var result = block
        for _ in 1..<max(1, iterations) {
            block = key.mac(block)
            for index in 0..<32 { result[index] ^= block[index] }
        }
        return result
    }
}
