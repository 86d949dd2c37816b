import EventLog
import EventLogFormat
import MoodLedger
import Platform

extension PostgresStore {
    /// Copies a data directory into the database (`Specs/server.md`, *Moving between stores*): the schema made if
    /// missing, the token secret and every account's key hash (keys and tokens keep working), then each user's log,
    /// record for record, in one transaction per user. Idempotent: a user whose rows already match the log (same
    /// last seq, same count) is left alone; one whose rows differ is refused, naming it. The counts are checked after.
    /// - Returns: a line per user.
    /// - Throws: ``ServerError``; ``PostgresError``; `EventLogError` for a log that cannot be read.
    public func migrate(from directory: String) throws -> [String] {
        try initialize()
        let credentials = try Credentials.load(directory: directory, create: false)
        let (book, _) = try accounts(after: 0, applyingTo: AccountBook())
        var changes: [AccountsLog.Change] = []
        if book.secret != credentials.secret { changes.append(.secret(credentials.secret)) }
        let present = book.credentials
        for user in credentials.users where present.users.first(where: { $0.name == user.name }) != user {
            changes.append(.added(user.name, keyHash: user.keyHash))
        }
        try append(changes)
        var lines: [String] = []
        for user in credentials.users {
            let path = MoodServer.userDirectory(user.name, in: directory)
            guard Ledger.exists(at: path) else {
                lines.append("\(user.name): no events")
                continue
            }
            lines.append(try migrateLog(of: user.name, at: path))
        }
        return lines
    }

    private func migrateLog(of name: String, at path: String) throws -> String {
        var configuration = EventLog.Configuration()
        configuration.access = .readOnly
        configuration.createIfMissing = false
        let log = try EventLog.open(directory: path, configuration: configuration)
        defer { log.close() }
        let last = log.lastSeq
        let (rows, maximum) = try pool.withConnection { connection in
            let row = try connection.query(
                "SELECT count(*), coalesce(max(seq), 0) FROM events WHERE user_name = $1", [.text(name)]
            ).rows[0]
            return (try row.int(0), try row.int(1))
        }
        if rows > 0 {
            guard maximum == Int64(last), rows == Int64(last) else {
                throw ServerError(
                    "\(name): the database holds \(rows) events through seq \(maximum), the directory \(last): they "
                        + "have diverged; nothing was copied for this user", code: "diverged")
            }
            return "\(name): already in the database (\(last) events)"
        }
        var batch: [(String, [PostgresValue])] = [
            (
                // The ledger's identity, also over the one an account added here before its events came was given.
                "INSERT INTO streams (user_name, account) VALUES ($1, $2) "
                    + "ON CONFLICT (user_name) DO UPDATE SET account = excluded.account",
                [.text(name), .bytes(log.fileID)]
            )
        ]
        var copied: UInt64 = 0
        try pool.withConnection { connection in
            try connection.execute(script: "BEGIN")
            do {
                try log.forEach(from: 1, through: last) { view in
                    guard !view.isLost, view.seq == copied + 1 else {
                        throw ServerError(
                            "\(name): record \(view.seq) is a lost record left by repair; the database keeps "
                                + "contiguous seqs only", code: "not_contiguous")
                    }
                    copied = view.seq
                    batch.append(
                        EventRow(
                            seq: view.seq, type: view.type, continuesBatch: view.continuesBatch,
                            recordedAt: view.recordedAt, payload: Array(view.payload)
                        ).insert(for: name))
                    if batch.count >= Self.pipelineLimit {
                        _ = try connection.pipeline(batch)
                        batch.removeAll(keepingCapacity: true)
                    }
                    return true
                }
                if !batch.isEmpty { _ = try connection.pipeline(batch) }
                let count = try connection.query(
                    "SELECT count(*) FROM events WHERE user_name = $1", [.text(name)]
                ).rows[0].int(0)
                guard count == Int64(last) else {
                    throw ServerError("\(name): \(count) rows after copying \(last) events", code: "count_mismatch")
                }
                try connection.execute(script: "COMMIT")
            } catch {
                try? connection.execute(script: "ROLLBACK")
                throw error
            }
        }
        return "\(name): \(last) events copied"
    }

    /// Writes every account's events back into a data directory (`Specs/server.md`, *Moving between stores*): one
    /// ledger a user, its records the rows' bytes with their seqs and batches, and the accounts with their key
    /// hashes (keys keep working; the directory has its own token secret, so tokens are issued again). A user whose
    /// ledger exists already is refused, naming it.
    /// - Returns: a line per user.
    public func export(to directory: String) throws -> [String] {
        try checkSchema()
        let credentials = try self.credentials()
        try AtomicFile.makeDirectory(directory)
        try AtomicFile.makeDirectory(directory + "/users")
        var local = try Credentials.load(directory: directory, create: true)
        var lines: [String] = []
        for user in credentials.users {
            let path = MoodServer.userDirectory(user.name, in: directory)
            guard !Ledger.exists(at: path) else {
                throw ServerError("\(user.name): \(path) holds a ledger already; nothing was written for this user")
            }
            try AtomicFile.makeDirectory(path)
            let log = try EventLog.open(directory: path)
            defer { log.close() }
            var batch: [PendingRecord] = []
            var count = 0
            var after: Int64 = 0
            while true {
                let rows = try pool.withConnection { connection in
                    try connection.query(
                        "SELECT \(EventRow.columns) FROM events WHERE user_name = $1 AND seq > $2 ORDER BY seq LIMIT 10000",
                        [.text(user.name), .int64(after)]
                    ).rows
                }
                guard !rows.isEmpty else { break }
                for row in try rows.map(EventRow.init) {
                    after = Int64(row.seq)
                    batch.append(PendingRecord(type: row.type, payload: row.payload, recordedAt: row.recordedAt))
                    if !row.continuesBatch {
                        let seqs = try log.append(batch)
                        guard seqs.upperBound == row.seq else {
                            throw ServerError("\(user.name): the rows' seqs are not contiguous at \(row.seq)")
                        }
                        count += batch.count
                        batch.removeAll(keepingCapacity: true)
                    }
                }
            }
            _ = try log.sync()
            local.restoreUser(user)
            lines.append("\(user.name): \(count) events written to \(path)")
        }
        try local.save(directory: directory)
        return lines
    }
}
