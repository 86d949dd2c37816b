import EventLog
import Platform

/// The server's accounts as an append-only log, `DIR/accounts/` (the project's own `EventLog`, 0700/0600;
/// `Specs/server.md`, *Accounts*): the token secret and every account change are records, replayed into a table on
/// load. Adding an account is one append, whatever the number of accounts.
enum AccountsLog {
    /// Record types.
    static let secretSet: UInt16 = 1
    static let accountAdded: UInt16 = 2
    static let accountErased: UInt16 = 3

    /// The log's directory inside a data directory.
    static func directory(in data: String) -> String { data + "/accounts" }

    /// Whether a data directory has an accounts log.
    static func exists(in data: String, io: any PlatformIO) -> Bool {
        io.exists(directory(in: data) + "/" + LogFormat.logFileName)
    }

    /// One change.
    enum Change: Sendable, Equatable {
        case secret([UInt8])
        case added(String, keyHash: [UInt8])
        case erased(String)
    }

    /// A record's payload: `version u8 (1) · [secret 32] | [name length u8 (1…64) · name · [key hash 32]]`.
    static func record(_ change: Change) -> PendingRecord {
        switch change {
        case .secret(let secret): return PendingRecord(type: secretSet, payload: [1] + secret)
        case .added(let name, let hash):
            return PendingRecord(type: accountAdded, payload: [1, UInt8(name.utf8.count)] + Array(name.utf8) + hash)
        case .erased(let name):
            return PendingRecord(type: accountErased, payload: [1, UInt8(name.utf8.count)] + Array(name.utf8))
        }
    }

    /// The payload an erased account's records are rewritten to: the name and key hash are gone.
    static let redacted: [UInt8] = [0xFF]

    /// Decodes a record, checking every length and the name's rules; `nil` for a redacted record.
    static func change(_ view: RecordView) throws -> Change? {
        let bytes = Array(view.payload)
        if bytes == redacted { return nil }
        func bad(_ why: String) -> ServerError { ServerError("accounts log record \(view.seq) is malformed: \(why)") }
        guard bytes.first == 1 else { throw bad("unknown version") }
        if view.type == secretSet {
            guard bytes.count == 33 else { throw bad("a secret is 32 bytes") }
            return .secret(Array(bytes[1...]))
        }
        guard bytes.count >= 2, (1...64).contains(Int(bytes[1])), bytes.count >= 2 + Int(bytes[1]) else {
            throw bad("name length")
        }
        let name = String(decoding: bytes[2..<(2 + Int(bytes[1]))], as: UTF8.self)
        guard Credentials.isValidUserName(name) else { throw bad("not a user name") }
        let rest = bytes.count - 2 - Int(bytes[1])
        switch view.type {
        case accountAdded:
            guard rest == 32 else { throw bad("a key hash is 32 bytes") }
            return .added(name, keyHash: Array(bytes[(bytes.count - 32)...]))
        case accountErased:
            guard rest == 0 else { throw bad("trailing bytes") }
            return .erased(name)
        default:
            guard view.type & LogFormat.safeToIgnoreBit == 0 else { throw bad("skip") }
            throw bad("unknown record type \(view.type): written by a newer version")
        }
    }

    /// Replays the log into credentials (read-only; no lock taken).
    /// - Returns: the credentials, and where the log ended (to read only what comes after).
    static func load(directory data: String, io: any PlatformIO) throws -> Credentials {
        var configuration = EventLog.Configuration()
        configuration.access = .readOnly
        configuration.createIfMissing = false
        configuration.io = io
        var secret: [UInt8]?
        var users: [Credentials.User] = []
        var index: [String: Int] = [:]
        let log = try EventLog.open(directory: directory(in: data), configuration: configuration)
        defer { log.close() }
        try log.forEach { view in
            if view.type & LogFormat.safeToIgnoreBit != 0 { return true }
            switch try change(view) {
            case nil: break
            case .secret(let value)?: secret = value
            case .added(let name, let hash)?:
                if let at = index[name] {
                    users[at].keyHash = hash
                } else {
                    index[name] = users.count
                    users.append(Credentials.User(name: name, keyHash: hash))
                }
            case .erased(let name)?:
                if let at = index.removeValue(forKey: name) {
                    users.remove(at: at)
                    for (other, position) in index where position > at { index[other] = position - 1 }
                }
            }
            return true
        }
        guard let secret else { throw ServerError("\(directory(in: data)) holds no token secret") }
        return Credentials(secret: secret, users: users)
    }

    /// Appends changes as one durable batch under the log's writer lock (waiting up to 5 s for another writer). An
    /// erasure is not appended: every record of the account is rewritten as redacted instead (the log is rewritten
    /// beside itself and renamed over, `Specs/log-format.md`, *Rewriting*), so its name and key hash are nowhere.
    static func append(_ changes: [Change], directory data: String, io: any PlatformIO) throws {
        guard !changes.isEmpty else { return }
        var configuration = EventLog.Configuration()
        configuration.io = io
        configuration.lockWaitMilliseconds = 5_000
        let log = try EventLog.open(directory: directory(in: data), configuration: configuration)
        defer { log.close() }
        var batch: [PendingRecord] = []
        for change in changes {
            guard case .erased(let name) = change else {
                batch.append(record(change))
                continue
            }
            if !batch.isEmpty { _ = try log.append(batch) }
            batch = []
            _ = try log.rewritePayloads { view in
                guard view.type == accountAdded || view.type == accountErased, let found = try? Self.change(view) else {
                    return nil
                }
                switch found {
                case .added(name, _), .erased(name): return redacted
                default: return nil
                }
            }
        }
        if !batch.isEmpty { _ = try log.append(batch) }
    }
}
