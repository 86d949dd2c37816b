import MoodLedger
import Platform
import Synchronization

/// The server's data in PostgreSQL (`Specs/server.md`, *PostgreSQL*): each user's events are rows of one `events`
/// table keyed by (user, seq) — the ledger's own event bytes and types — and the accounts are a log of changes in
/// `accounts_log`, as the data directory's accounts log is. Any node answers any user: a node keeps a user's fold in
/// memory as a cache, brought up to the user's last seq before each request, and appends with optimistic
/// concurrency on (user, seq) inside one transaction.
public final class PostgresStore: Sendable {
    /// The schema this build reads and writes (`moodledger_schema.version`): version 1 and every migration after it.
    public static var schemaVersion: Int64 { migrations.last?.version ?? 1 }
    /// The connections.
    public let pool: PostgresPool
    /// The write transactions, several users' writes in each.
    let commits: PostgresCommits

    /// A store over the database `url` names (libpq's URI or keyword form), with at most `connections` connections.
    /// Nothing is connected until first use.
    /// - Throws: ``PostgresError`` `postgres_configuration`.
    public init(url: String, environment: [String: String] = [:], connections: Int = 16) throws {
        pool = PostgresPool(settings: try PostgresSettings.parse(url, environment: environment), capacity: connections)
        commits = PostgresCommits(pool: pool)
    }

    /// Where the store is, for log lines (the hosts, never the password).
    public var label: String {
        pool.settings.hosts.map(\.label).joined(separator: ",") + "/" + pool.settings.database
    }

    // MARK: - Schema

    /// The schema, version 1 (`Specs/server.md`, *PostgreSQL*, *Schema*).
    static let schema = """
        CREATE TABLE moodledger_schema (version bigint NOT NULL);
        CREATE TABLE accounts_log (
            seq bigint PRIMARY KEY,
            kind smallint NOT NULL CHECK (kind IN (1, 2, 3)),
            name text,
            bytes bytea
        );
        CREATE TABLE streams (
            user_name text PRIMARY KEY,
            account bytea NOT NULL
        );
        CREATE TABLE events (
            user_name text NOT NULL REFERENCES streams (user_name) ON DELETE CASCADE,
            seq bigint NOT NULL CHECK (seq > 0),
            type integer NOT NULL,
            continues_batch boolean NOT NULL,
            recorded_at bigint NOT NULL,
            entry_id bytea,
            payload bytea NOT NULL,
            PRIMARY KEY (user_name, seq)
        );
        CREATE INDEX events_by_entry ON events (user_name, entry_id) WHERE entry_id IS NOT NULL;
        INSERT INTO moodledger_schema (version) VALUES (1);
        """

    /// The schema's versions after 1, in order: each takes a database from the version before (`Specs/server.md`,
    /// *Schema*, *Migrations*). A migration keeps what nodes of the version before read and write working, so nodes
    /// are upgraded one at a time once `init` has run.
    static let migrations: [(version: Int64, script: String)] = [
        // 2: every account in force has its `streams` row (its identity), so a user's first visit to a node reads
        // it and writes nothing. Accounts are made with theirs; this makes the rows accounts lacked.
        (
            2,
            """
            INSERT INTO streams (user_name, account)
            SELECT name, uuid_send(gen_random_uuid()) FROM (
                SELECT DISTINCT ON (name) name, kind FROM accounts_log WHERE name IS NOT NULL ORDER BY name, seq DESC
            ) latest
            WHERE kind = 2
            ON CONFLICT (user_name) DO NOTHING;
            INSERT INTO moodledger_schema (version) VALUES (2);
            """
        )
    ]

    /// Creates the schema in an empty database, or migrates an older one to this build's version, or leaves one of
    /// this version as it is; one transaction, under an advisory lock, so two nodes initialising at once make or
    /// migrate it once. A token secret is made with a new schema.
    /// - Returns: the version the database had before (0: none).
    /// - Throws: ``PostgresError``; ``ServerError`` `schema_newer` for a schema a newer version made.
    @discardableResult
    public func initialize() throws -> Int64 { try initialize(upTo: Self.schemaVersion) }

    /// ``initialize()`` to `target` (an older version: the migration tests).
    @discardableResult
    func initialize(upTo target: Int64) throws -> Int64 {
        try pool.withConnection { connection in
            try connection.execute(script: "BEGIN; SELECT pg_advisory_xact_lock(7244501)")
            do {
                let exists = try connection.query("SELECT to_regclass('moodledger_schema') IS NOT NULL").rows[0]
                var version: Int64 = 0
                if try exists.int(0) == 0 {
                    try connection.execute(script: Self.schema)
                    try connection.query(
                        "INSERT INTO accounts_log (seq, kind, bytes) VALUES (1, 1, $1)",
                        [.bytes(SystemIO().randomBytes(32))])
                } else {
                    version = try checkVersion(connection)
                }
                for migration in Self.migrations
                where migration.version > max(version, 1) && migration.version <= target {
                    try connection.execute(script: migration.script)
                }
                try connection.execute(script: "COMMIT")
                return version
            } catch {
                try? connection.execute(script: "ROLLBACK")
                throw error
            }
        }
    }

    /// Refuses a database without the schema, or with another version than this build's.
    /// - Throws: ``ServerError`` `schema_missing`, `schema_older` or `schema_newer`; ``PostgresError``.
    public func checkSchema() throws {
        try pool.withConnection { connection in
            let exists = try connection.query("SELECT to_regclass('moodledger_schema') IS NOT NULL").rows[0]
            guard try exists.int(0) == 1 else {
                throw ServerError(
                    "the database \(label) has no MoodLedger schema: run `moodledger serve --store URL init` first",
                    code: "schema_missing")
            }
            let version = try checkVersion(connection)
            guard version == Self.schemaVersion else {
                throw ServerError(
                    "the database's MoodLedger schema is version \(version), older than this build's "
                        + "\(Self.schemaVersion): run `moodledger serve --store URL init` to migrate it",
                    code: "schema_older")
            }
        }
    }

    /// The database's schema version, refused when newer than this build's.
    private func checkVersion(_ connection: PostgresConnection) throws -> Int64 {
        let version = try connection.query("SELECT max(version) FROM moodledger_schema").rows[0].int(0)
        guard version <= Self.schemaVersion else {
            throw ServerError(
                "the database's MoodLedger schema is version \(version), newer than this build's "
                    + "\(Self.schemaVersion): run a newer moodledger", code: "schema_newer")
        }
        return version
    }

    /// Whether the database answers and takes writes (a primary, not a standby): `/health`.
    public func health() -> (reachable: Bool, writable: Bool) {
        do {
            return try pool.withConnection { connection in
                let readOnly = try connection.query("SELECT pg_is_in_recovery()").rows[0].int(0) == 1
                return (true, !readOnly)
            }
        } catch {
            return (false, false)
        }
    }

    // MARK: - Accounts

    /// Most statements sent in one pipeline: the answers are read once all are sent, so a longer one could fill both
    /// sockets' buffers and stall (512 answers are about 15 KB).
    static let pipelineLimit = 512

    /// The accounts as the log's changes after `seq` leave `accounts` (nil: from the beginning), and the log's last
    /// seq.
    /// - Throws: ``PostgresError``; ``ServerError`` for a malformed row.
    func accounts(after seq: Int64, applyingTo accounts: AccountBook) throws -> (AccountBook, Int64) {
        var book = accounts
        var last = seq
        let rows = try pool.withConnection { connection in
            try connection.query(
                "SELECT seq, kind, name, bytes FROM accounts_log WHERE seq > $1 ORDER BY seq", [.int64(seq)]
            ).rows
        }
        for row in rows {
            last = try row.int(0)
            switch try row.int(1) {
            case 1: book.secret = try row.bytes(3)
            case 2:
                let name = try row.text(2)
                let hash = try row.bytes(3)
                guard Credentials.isValidUserName(name), hash.count == 32 else {
                    throw ServerError("accounts_log row \(last) is malformed")
                }
                book.add(name, keyHash: hash)
            default: book.remove(try row.text(2))
            }
        }
        return (book, last)
    }

    /// The accounts in force now.
    public func credentials() throws -> Credentials { try accounts(after: 0, applyingTo: AccountBook()).0.credentials }

    /// Appends account changes as one transaction, after every earlier one (appends take one advisory lock in turn:
    /// seqs are given in commit order, so a node reading `seq > last` misses none).
    func append(_ changes: [AccountsLog.Change], alsoRunning extra: [(String, [PostgresValue])] = []) throws {
        guard !changes.isEmpty else { return }
        try pool.withConnection { connection in
            var statements: [(String, [PostgresValue])] = [("SELECT pg_advisory_xact_lock(7244502)", [])]
            for change in changes {
                let insert =
                    "INSERT INTO accounts_log (seq, kind, name, bytes) "
                    + "SELECT coalesce(max(seq), 0) + 1, $1, $2, $3 FROM accounts_log"
                switch change {
                case .secret(let secret): statements.append((insert, [.int32(1), .null, .bytes(secret)]))
                case .added(let name, let hash): statements.append((insert, [.int32(2), .text(name), .bytes(hash)]))
                case .erased(let name): statements.append((insert, [.int32(3), .text(name), .null]))
                }
            }
            statements += extra
            if statements.count <= Self.pipelineLimit {
                _ = try connection.pipeline(statements)
                return
            }
            // Many accounts at once: one explicit transaction, sent a bounded pipeline at a time.
            try connection.execute(script: "BEGIN")
            do {
                var rest = statements[...]
                while !rest.isEmpty {
                    _ = try connection.pipeline(Array(rest.prefix(Self.pipelineLimit)))
                    rest = rest.dropFirst(Self.pipelineLimit)
                }
                try connection.execute(script: "COMMIT")
            } catch {
                try? connection.execute(script: "ROLLBACK")
                throw error
            }
        }
    }

    /// Adds an account with a new random API key. - Returns: the key (shown once).
    /// - Throws: ``ServerError`` for an invalid or taken name; ``PostgresError``.
    public func addUser(_ name: String) throws -> String {
        try addUsers([name])[0]
    }

    /// Adds accounts with new random API keys, all in one transaction or none (a bad or taken name refuses them
    /// all). - Returns: the keys, in the names' order (shown once).
    /// - Throws: ``ServerError`` for an invalid or taken name; ``PostgresError``.
    public func addUsers(_ names: [String]) throws -> [String] {
        var credentials = try credentials()
        let keys = try names.map { try credentials.addUser($0) }
        try append(credentials.takeChanges(), alsoRunning: names.map(Self.streamRow))
        return keys
    }

    /// Gives an account a new random API key. - Returns: the key (shown once).
    public func rotateKey(_ name: String) throws -> String {
        var credentials = try credentials()
        let key = try credentials.rotateKey(name)
        try append(credentials.takeChanges())
        return key
    }

    /// Erases an account: its key revoked and every row of its events deleted, in one transaction.
    /// - Throws: ``ServerError`` when there is no such account; ``PostgresError``.
    public func eraseUser(_ name: String) throws {
        var credentials = try credentials()
        guard credentials.removeUser(name) else { throw ServerError("no user \(name)") }
        try append(
            credentials.takeChanges(), alsoRunning: [("DELETE FROM streams WHERE user_name = $1", [.text(name)])])
    }

    // MARK: - Streams

    /// The statement that makes a user's stream row (its identity, 16 random bytes) unless it has one.
    static func streamRow(_ name: String) -> (String, [PostgresValue]) {
        (
            "INSERT INTO streams (user_name, account) VALUES ($1, $2) ON CONFLICT (user_name) DO NOTHING",
            [.text(name), .bytes(SystemIO().randomBytes(16))]
        )
    }

    /// Opens a user's stream: its identity read and its rows folded in one statement. The identity is made with the
    /// account (``addUsers(_:)``), so a first read writes nothing; a stream row found missing is made here.
    func openStream(_ name: String, options: Ledger.Options) throws -> (stream: PostgresStream, account: String) {
        let stream = PostgresStream(name: name, store: self, options: options)
        let account: [UInt8]
        if let known = try stream.catchUp(alsoSelecting: "SELECT account FROM streams WHERE user_name = $1") {
            account = known
        } else {
            account = try pool.withConnection { connection in
                let results = try connection.pipeline([
                    Self.streamRow(name), ("SELECT account FROM streams WHERE user_name = $1", [.text(name)])
                ])
                return try results[1].rows[0].bytes(0)
            }
        }
        return (stream, ByteText.hex(account))
    }
}

/// The accounts as a log of changes leaves them, in the order they were added.
struct AccountBook: Sendable {
    var secret: [UInt8] = []
    private var order: [String] = []
    private var hashes: [String: [UInt8]] = [:]

    mutating func add(_ name: String, keyHash: [UInt8]) {
        if hashes.updateValue(keyHash, forKey: name) == nil { order.append(name) }
    }

    mutating func remove(_ name: String) {
        guard hashes.removeValue(forKey: name) != nil else { return }
        order.removeAll { $0 == name }
    }

    var credentials: Credentials {
        Credentials(secret: secret, users: order.map { Credentials.User(name: $0, keyHash: hashes[$0]!) })
    }
}
