import EventLog
import MoodLedger
import Platform

/// The server's accounts: the token-signing secret and each user's API key, stored as SHA-256 hashes only
/// (`Specs/server.md`, *Accounts*). They live in the accounts log, `DIR/accounts/`; a `DIR/credentials.json` of an
/// older version is read once and carried into a new log. Changes (``addUser(_:io:)``, ``removeUser(_:)``) are kept
/// until ``save(directory:io:)`` appends them, one batch.
public struct Credentials: Sendable {
    /// One user.
    public struct User: Sendable, Equatable {
        /// The user id: also the ledger's folder name under `DIR/users/`.
        public var name: String
        /// SHA-256 of the API key.
        public var keyHash: [UInt8]
    }

    /// The HMAC secret tokens are signed with (32 random bytes).
    public var secret: [UInt8]
    /// The users, in the order they were added.
    public private(set) var users: [User]
    /// Name → key hash: an authentication or a name check is one lookup, not a walk of every account.
    private var keyHashes: [String: [UInt8]]
    /// Changes since the accounts were loaded, appended by ``save(directory:io:)``.
    private var pending: [AccountsLog.Change] = []

    /// Credentials with this secret and these users.
    public init(secret: [UInt8], users: [User]) {
        self.secret = secret
        self.users = users
        keyHashes = Dictionary(users.map { ($0.name, $0.keyHash) }, uniquingKeysWith: { first, _ in first })
    }

    /// Whether there is a user of this name.
    public func has(_ name: String) -> Bool { keyHashes[name] != nil }

    /// The older single-file form's path inside a data directory (read once, for migration).
    public static func path(in directory: String) -> String { directory + "/credentials.json" }

    /// The accounts log's file (`DIR/accounts/events.log`): what a reader watches for changes.
    public static func logPath(in directory: String) -> String {
        AccountsLog.directory(in: directory) + "/" + LogFormat.logFileName
    }

    /// Whether `name` may be a user id: 1–64 of `a-z 0-9 _ -`, starting with a letter or digit — so it can never
    /// name a path outside `DIR/users/`.
    public static func isValidUserName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count) else { return false }
        func allowed(_ byte: UInt8, first: Bool) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): return true
            case UInt8(ascii: "_"), UInt8(ascii: "-"): return !first
            default: return false
            }
        }
        return bytes.enumerated().allSatisfy { allowed($1, first: $0 == 0) }
    }

    /// Loads the accounts log; carries a `credentials.json` of an older version into a new log; or, with `create`,
    /// starts a log with a new secret and no users.
    /// - Throws: ``ServerError`` when there are no accounts (and not `create`) or a record is malformed;
    ///   `EventLogError` when the log cannot be read or written.
    public static func load(directory: String, create: Bool, io: any PlatformIO = SystemIO()) throws -> Credentials {
        if AccountsLog.exists(in: directory, io: io) { return try AccountsLog.load(directory: directory, io: io) }
        let path = path(in: directory)
        guard io.exists(path) else {
            guard create else {
                throw ServerError(
                    "no accounts in \(directory): add a user first (moodledger serve user add NAME --data DIR)")
            }
            let fresh = Credentials(secret: io.randomBytes(32), users: [])
            try AccountsLog.append([.secret(fresh.secret)], directory: directory, io: io)
            return fresh
        }
        let older = try loadFile(path, io: io)
        try AccountsLog.append(
            [.secret(older.secret)] + older.users.map { .added($0.name, keyHash: $0.keyHash) },
            directory: directory, io: io)
        return older
    }

    /// The older single-file form: `{"version": 1, "secret": hex, "users": [{"name", "key_sha256"}]}`.
    private static func loadFile(_ path: String, io: any PlatformIO) throws -> Credentials {
        let bytes = try AtomicFile.read(path, limit: 16 << 20, io: io)
        guard let root = try? JSONParser.parse(String(decoding: bytes, as: UTF8.self)),
            let secret = root["secret"]?.stringValue.flatMap(ByteText.unhex), secret.count == 32
        else {
            throw ServerError("\(path) is not a moodledger credentials file")
        }
        var users: [User] = []
        for item in root["users"]?.arrayValue ?? [] {
            guard let name = item["name"]?.stringValue, isValidUserName(name),
                let hash = item["key_sha256"]?.stringValue.flatMap(ByteText.unhex), hash.count == 32
            else {
                throw ServerError("\(path) holds a malformed user")
            }
            users.append(User(name: name, keyHash: hash))
        }
        return Credentials(secret: secret, users: users)
    }

    /// Appends the changes made since loading to the accounts log, as one durable batch (waiting up to 5 s for
    /// another writer of the log). Nothing is rewritten: the cost does not grow with the number of accounts.
    /// - Throws: `EventLogError` when the log cannot be written (the changes stay pending).
    public mutating func save(directory: String, io: any PlatformIO = SystemIO()) throws {
        try AccountsLog.append(pending, directory: directory, io: io)
        pending.removeAll()
    }

    /// The changes made since loading, handed to a store other than the accounts log (PostgreSQL's), and forgotten.
    mutating func takeChanges() -> [AccountsLog.Change] {
        defer { pending.removeAll() }
        return pending
    }

    /// Puts back an account exactly as it was (its key hash), e.g. when its erasure could not finish.
    public mutating func restoreUser(_ user: User) {
        guard !has(user.name) else { return }
        users.append(user)
        keyHashes[user.name] = user.keyHash
        pending.append(.added(user.name, keyHash: user.keyHash))
    }

    /// Adds a user with a new random API key. - Returns: the key (shown once; only its hash is kept).
    /// - Throws: ``ServerError`` for an invalid or taken name.
    public mutating func addUser(_ name: String, io: any PlatformIO = SystemIO()) throws -> String {
        guard Self.isValidUserName(name) else {
            // The name as typed may be anything (an escape sequence, a whole file on one line): shown escaped, and
            // at most 64 characters of it.
            let shown =
                ConsoleText.escaped(String(name.prefix(64))) + (name.count > 64 ? "… (\(name.utf8.count) bytes)" : "")
            throw ServerError("invalid user name \(shown): 1–64 of a-z, 0-9, _ and -, starting with a letter or digit")
        }
        guard !has(name) else { throw ServerError("user \(name) exists already") }
        let key = "mlk_" + ByteText.hex(io.randomBytes(24))
        let hash = SHA256.hash(Array(key.utf8))
        users.append(User(name: name, keyHash: hash))
        keyHashes[name] = hash
        pending.append(.added(name, keyHash: hash))
        return key
    }

    /// Gives a user a new random API key (the old one stops working). - Returns: the key (shown once).
    /// - Throws: ``ServerError`` when there is no such user.
    public mutating func rotateKey(_ name: String, io: any PlatformIO = SystemIO()) throws -> String {
        guard has(name) else { throw ServerError("no user \(name)") }
        let key = "mlk_" + ByteText.hex(io.randomBytes(24))
        let hash = SHA256.hash(Array(key.utf8))
        if let index = users.firstIndex(where: { $0.name == name }) { users[index].keyHash = hash }
        keyHashes[name] = hash
        pending.append(.added(name, keyHash: hash))
        return key
    }

    /// Removes a user (account erasure); `false` if there was none.
    public mutating func removeUser(_ name: String) -> Bool {
        guard keyHashes.removeValue(forKey: name) != nil else { return false }
        users.removeAll { $0.name == name }
        pending.append(.erased(name))
        return true
    }

    /// The key id of an API key: the first 16 hex digits of HMAC-SHA256(secret, "kid" + the key's hash). A token
    /// carries it as `kid`: rotating the key or erasing and re-adding the account gives a new id, so every token
    /// issued before is refused; the id tells nothing about the key without the server's secret.
    public func keyID(of keyHash: [UInt8]) -> String {
        String(ByteText.hex(HMACSHA256.mac(key: secret, message: Array("kid".utf8) + keyHash)).prefix(16))
    }

    /// A bearer token for `name`'s current key, valid from `now` (seconds) for `ttl` seconds; `nil` for no such
    /// user.
    public func token(for name: String, now: Int64, ttl: Int64) -> String? {
        guard let hash = keyHashes[name] else { return nil }
        return JWT.sign(subject: name, now: now, ttl: ttl, secret: secret, keyID: keyID(of: hash))
    }

    /// The user whose API key this is, comparing hashes in constant time.
    public func user(named name: String, apiKey: String) -> User? {
        guard let stored = keyHashes[name] else { return nil }
        let hash = SHA256.hash(Array(apiKey.utf8))
        return ConstantTime.equal(stored, hash) ? User(name: name, keyHash: stored) : nil
    }
}

/// A server-side failure with a message for the operator (never a secret).
public struct ServerError: Error, Sendable, CustomStringConvertible {
    public var code: String
    public var description: String
    public init(_ description: String, code: String = "server_error") {
        self.description = description
        self.code = code
    }
}
