import EventLog
import Foundation
import MoodLedger
import Platform
import Synchronization

/// One user's events in PostgreSQL, with the fold a node keeps of them (`Specs/server.md`, *PostgreSQL*): the rows
/// are the truth; the fold is a cache brought up to the user's last seq (``catchUp()``) before a request is answered.
/// A command is decided against the caught-up fold and its events inserted at the next seqs in one transaction; a
/// unique violation on (user, seq) means another node wrote first: the fold catches up and the command is decided
/// again (an `If-Match` that no longer holds then fails, so no update is lost). The answer is made only after the
/// transaction's commit returned.
final class PostgresStream: UserStream, Sendable {
    let name: String
    let store: PostgresStore
    let options: Ledger.Options
    private let state: Mutex<LedgerState>
    /// How many times a command is decided again after losing a race before the request is answered 503.
    static let attempts = 8

    init(name: String, store: PostgresStore, options: Ledger.Options) {
        self.name = name
        self.store = store
        self.options = options
        state = Mutex(LedgerState())
    }

    var lastSeq: UInt64 { state.withLock { $0.seq } }

    /// Commands are decided one after another by the group's leader (``writing(exclusive:_:)``).
    var ordersItsOwnWrites: Bool { true }

    var unfinishedErasures: Set<EntryID> { Set(state.withLock { $0.pendingErasures.keys }) }

    func read<T>(_ body: (LedgerState) throws -> T) rethrows -> T {
        let current = state.withLock { $0 }
        return try body(current)
    }

    /// Folds the rows past the fold's seq.
    /// - Throws: ``PostgresError``; ``MoodError`` `corrupt_event`.
    ///
    /// A database whose last seq is behind the fold (a failover to a standby that had not received rows this node
    /// had read from the old primary before their commit was confirmed) is folded again from its first row: the
    /// fold never holds what the database does not.
    func catchUp() throws { _ = try catchUp(alsoSelecting: nil) }

    /// ``catchUp()`` with one more value about this user selected by the same statement: `expression` is a scalar
    /// SQL expression in which `$1` is the user's name.
    /// - Returns: that value's bytes (nil for NULL).
    ///
    /// One statement, one round trip: the rows past the fold's seq, each beside the user's last seq (one row of NULLs
    /// and the last seq when there are none), so a held user's catch-up costs the database one statement.
    func catchUp(alsoSelecting expression: String?) throws -> [UInt8]? {
        let read = try readPast(alsoSelecting: expression)
        guard try fold(read) else { return try catchUp(alsoSelecting: expression) }
        return read.extra
    }

    /// What a catch-up read: the rows past `seq` (the fold's when it was read), the user's last seq, and the extra
    /// value.
    struct CatchUpRead {
        var seq: UInt64
        var rows: [EventRow]
        var last: UInt64
        var extra: [UInt8]?
    }

    /// A catch-up's statement: the rows past the fold's seq, each beside the user's last seq.
    func readPast(alsoSelecting expression: String? = nil) throws -> CatchUpRead {
        // Only the seq is kept: a reference to the fold held until it is folded into would make it a copy.
        let seq = state.withLock { $0.seq }
        let statement =
            "SELECT \(EventRow.columns(of: "e")), m.last\(expression.map { ", (\($0))" } ?? "") "
            + "FROM (SELECT coalesce(max(seq), 0) AS last FROM events WHERE user_name = $1) m "
            + "LEFT JOIN events e ON e.user_name = $1 AND e.seq > $2 ORDER BY e.seq"
        let selected = try store.pool.withConnection { connection in
            try connection.query(statement, [.text(name), .int64(Int64(seq))]).rows
        }
        guard let first = selected.first else {
            throw PostgresError(.protocolViolation, "the catch-up returned no row")
        }
        let last = UInt64(try first.int(EventRow.width))
        let extra = expression == nil || first.isNull(EventRow.width + 1) ? nil : try first.bytes(EventRow.width + 1)
        let rows = first.isNull(0) ? [] : try selected.map(EventRow.init)
        return CatchUpRead(seq: seq, rows: rows, last: last, extra: extra)
    }

    /// Folds what a catch-up read into the published fold.
    /// - Returns: false when the fold was set back since the read (folded again from the first row): read again.
    ///
    /// Another thread's catch-up may have folded some of these rows meanwhile (it read the same history, perhaps
    /// less of it): only the rows past the published fold are folded, so the fold ends at least where this read did.
    func fold(_ read: CatchUpRead) throws -> Bool {
        if read.last < read.seq {
            // The database is behind the fold (a failover): folded again from its first row.
            var fresh = LedgerState()
            try Self.fold(try rows(after: 0), into: &fresh)
            state.withLock { $0 = fresh }
            return true
        }
        guard !read.rows.isEmpty else { return true }
        if read.rows.count <= Ledger.foldInPlaceLimit {
            // In place, in one step: nothing is copied while no reader holds the fold, and readers see the rows
            // whole. A fold that cannot take them is dropped (the next catch-up folds the rows again from the first,
            // and fails the same way).
            return try state.withLock { published -> Bool in
                guard published.seq >= read.seq else { return false }
                do { try Self.fold(read.rows.filter { $0.seq > published.seq }, into: &published) } catch {
                    published = LedgerState()
                    throw error
                }
                return true
            }
        }
        // Many rows: folded into a copy, then published, so readers never wait for the fold.
        var next = state.withLock { $0 }
        guard next.seq >= read.seq else { return false }
        try Self.fold(read.rows.filter { $0.seq > next.seq }, into: &next)
        state.withLock { published in
            // Another thread may have caught up meanwhile: keep whichever fold is further.
            if next.seq > published.seq { published = next }
        }
        return true
    }

    private func rows(after seq: UInt64, through last: UInt64 = UInt64(Int64.max)) throws -> [EventRow] {
        try store.pool.withConnection { connection in
            try connection.query(
                "SELECT \(EventRow.columns) FROM events WHERE user_name = $1 AND seq > $2 AND seq <= $3 ORDER BY seq",
                [.text(name), .int64(Int64(seq)), .int64(Int64(last))]
            ).rows.map(EventRow.init)
        }
    }

    /// Folds rows in order; they must continue the state's seqs.
    private static func fold(_ rows: [EventRow], into state: inout LedgerState) throws {
        for row in rows {
            guard row.seq == state.seq + 1 else {
                throw PostgresError(.protocolViolation, "the events' seqs skip from \(state.seq) to \(row.seq)")
            }
            try row.withView { try state.fold($0) }
        }
    }

    func entry(_ id: EntryID, asOf seq: UInt64) throws -> MoodEntry? {
        var past = LedgerState()
        try Self.fold(try rows(after: 0, through: seq), into: &past)
        return past.entries[id]
    }

    // MARK: - Writes

    func appendCommand(
        _ decide: @escaping (LedgerState, Int64) throws -> (events: [MoodEvent], entryID: EntryID, created: Bool)
    ) throws -> CommandResult {
        try writing { [self] current, now in
            let (events, id, created) = try decide(current, now)
            let command = options.newID()
            let records = events.map { Ledger.record($0, command: command, nowMilliseconds: now) }
            return (
                records, [],
                { state in
                    CommandResult(
                        entry: state.entries[id], created: created, appendedEvents: events.count, lastSeq: state.seq)
                }
            )
        }
    }

    func delete(_ id: EntryID) throws {
        _ = try appendCommand { state, _ in (try Ledger.events(deleting: id, in: state), id, false) }
    }

    /// Erasure in one transaction: `entry.erased` appended, already complete, and every earlier row about the entries
    /// rewritten as redacted (`Specs/erasure.md`): nothing is ever left half done, so nothing is left to finish.
    @discardableResult
    func erase(
        _ ids: [EntryID], reason: String, requestedBy: String, ignoringDestinations: Bool
    ) throws
        -> EraseReport
    {
        var redacted = 0
        try writing(exclusive: true) { [self] current, now in
            // An id the fold holds, or one the rows name that no `entry.erased` has erased yet (a deleted entry).
            let erasable = try store.pool.withConnection { connection in
                try ids.filter { id in
                    if current.entries[id] != nil { return true }
                    let row = try connection.query(
                        "SELECT count(*), count(*) FILTER (WHERE type = $3) FROM events "
                            + "WHERE user_name = $1 AND entry_id = $2",
                        [.text(name), .bytes(EventRow.bytes(of: id)), .int32(Int32(EventType.entryErased.rawValue))]
                    ).rows[0]
                    return try row.int(0) > 0 && row.int(1) == 0
                }
            }
            for id in ids where !erasable.contains(id) {
                throw MoodError(
                    code: .notFound, field: "entry_id",
                    rule: "no entry \(id) to erase (never logged, or already erased)")
            }
            let command = options.newID()
            let records = ids.map {
                Ledger.record(
                    .entryErased($0, Erasure(reason: reason, requestedBy: requestedBy, complete: true)),
                    command: command, nowMilliseconds: now)
            }
            var updates: [(String, [PostgresValue])] = []
            let pending = Dictionary(uniqueKeysWithValues: ids.map { ($0, current.seq + 1) })
            let earlier = try store.pool.withConnection { connection in
                try connection.query(
                    "SELECT \(EventRow.columns) FROM events WHERE user_name = $1 AND entry_id = ANY($2) ORDER BY seq",
                    [.text(name), .byteaArray(ids.map(EventRow.bytes(of:)))]
                ).rows.map(EventRow.init)
            }
            for row in earlier {
                let replacement = try row.withView { view in
                    try Ledger.redaction(of: view, pending: pending, everything: nil, current: current.entries)
                }
                guard let replacement else { continue }
                updates.append(
                    (
                        "UPDATE events SET payload = $3 WHERE user_name = $1 AND seq = $2",
                        [.text(name), .int64(Int64(row.seq)), .bytes(replacement)]
                    ))
            }
            redacted = updates.count
            return (records, updates, { _ in () })
        }
        return EraseReport(erased: ids, recordsRedacted: redacted, bytesWritten: 0, backups: [])
    }

    func finishErasures() throws -> EraseReport {
        EraseReport(erased: [], recordsRedacted: 0, bytesWritten: 0, backups: [])
    }

    /// Rows are committed before they are answered: nothing is ever waiting for a sync here.
    func flush() throws -> UInt64 { lastSeq }

    func close() {}

    /// What a command decides: its records, statements to run in its transaction, and how to make its result from
    /// the fold once its records are in it.
    typealias Decision<T> = (records: [PendingRecord], extra: [(String, [PostgresValue])], result: (LedgerState) -> T)

    /// A command waiting for a leader to decide and commit it.
    ///
    /// `@unchecked Sendable`: `decide` is its caller's closure, run by whichever thread leads the round while the
    /// caller waits; `error` is written by that round before the caller is woken, and read by the caller after.
    private final class Job: @unchecked Sendable {
        let decide: (LedgerState, Int64) throws -> Decision<Void>
        /// Runs alone in its transaction (an erasure: it reads the committed rows it redacts).
        let exclusive: Bool
        var error: Error?

        init(exclusive: Bool, decide: @escaping (LedgerState, Int64) throws -> Decision<Void>) {
            self.exclusive = exclusive
            self.decide = decide
        }
    }

    /// This node's commands for this user, committed a group at a time.
    private let turns = Turns<Job>()
    /// Most commands in one transaction.
    static let groupLimit = 64

    /// One command's write, in turn with this node's other writes of this user (``Turns``): the writer that leads a
    /// round decides every command it holds in order against the fold as the ones before it leave it, inserts all
    /// their events at the next seqs in one transaction, folds them and answers each. Writes that arrive during a
    /// commit go into the next group: one `COMMIT` (one WAL flush) per group, not per request. Another node taking
    /// those seqs first has the whole group decided again on the caught-up fold.
    private func writing<T>(
        exclusive: Bool = false, _ decide: @escaping (LedgerState, Int64) throws -> Decision<T>
    ) throws -> T {
        // Set by the round's leader before this thread is woken, read after; the closure may outlive this call in
        // the leader's hands (it is escaping for that reason), never its use.
        nonisolated(unsafe) var output: T?
        let job = Job(exclusive: exclusive) { state, now in
            let (records, extra, result) = try decide(state, now)
            return (records, extra, { output = result($0) })
        }
        turns.submit(job, take: Self.group, run: commit)
        if let error = job.error { throw error }
        return output!
    }

    /// How many of the waiting commands, oldest first, one group holds: an erasure alone, else the commands before
    /// the next erasure, at most ``groupLimit``.
    private static func group(_ waiting: [Job]) -> Int {
        if waiting[0].exclusive { return 1 }
        return min(waiting.firstIndex(where: \.exclusive) ?? waiting.count, groupLimit)
    }

    /// The first statement of every write's transaction: it fails the transaction (division by zero, SQLSTATE
    /// 22012) unless the user's last seq in the database is `$2`, the seq of the fold the group was decided on. A
    /// fold behind the database (another node wrote) or ahead of it (a failover to a standby that lacks rows this node
    /// had read) never has its decisions committed: the fold catches up, and the group is decided again.
    static let expectLastSeq = "SELECT 1 / (coalesce(max(seq), 0) = $2)::int FROM events WHERE user_name = $1"

    /// Whether a write's transaction failed because the fold it was decided on was not the database's: the guard
    /// (``expectLastSeq``) or a unique violation on (user, seq) when another node's rows landed meanwhile.
    static func lostRace(_ error: PostgresError) -> Bool {
        error.isUniqueViolation || (error.kind == .server && error.sqlState == "22012")
    }

    /// Decides and commits one group; each job ends with its result made or its error set. The fold was caught up
    /// by the request that leads (its lease); the guard in the transaction makes sure it still is.
    private func commit(_ group: [Job]) {
        for _ in 0..<Self.attempts {
            let now = options.clock()
            // The fold the group is decided on, each command on the fold the ones before it leave, its result made
            // there. A group of one is decided on the published fold itself and its rows folded into that in place
            // once committed: `base` is optional so that it can let go of it then (a fold held by nothing else is not
            // copied). A longer group folds into one copy of its own, `next`.
            var base: LedgerState? = state.withLock { $0 }
            let baseSeq = base!.seq
            let alone = group.count == 1
            var next: LedgerState?
            var rows: [EventRow] = []
            var statements: [(String, [PostgresValue])] = [
                (Self.expectLastSeq, [.text(name), .int64(Int64(baseSeq))])
            ]
            var writers: [Job] = []
            var finishes: [(job: Job, finish: (LedgerState) -> Void)] = []
            for job in group {
                job.error = nil
                do {
                    let (records, extra, finish) = try job.decide(next ?? base!, now)
                    let seq = baseSeq + UInt64(rows.count)
                    let mine = records.enumerated().map { index, record in
                        EventRow(record, seq: seq + UInt64(index) + 1, last: index == records.count - 1, now: now)
                    }
                    if alone {
                        finishes.append((job, finish))
                    } else {
                        if next == nil { next = base }
                        try Self.fold(mine, into: &next!)
                        finish(next!)
                    }
                    statements += extra + mine.map { $0.insert(for: name) }
                    rows += mine
                    if !records.isEmpty || !extra.isEmpty { writers.append(job) }
                } catch {
                    job.error = error
                }
            }
            if statements.count > 1 {
                do {
                    try store.commits.commit(user: name, statements)
                } catch let error as PostgresError where Self.lostRace(error) {
                    do { try catchUp() } catch {
                        for job in group { job.error = error }
                        return
                    }
                    continue
                } catch {
                    var failure = error
                    if var lost = error as? PostgresError, lost.kind == .unavailable {
                        // The transaction was sent: the server may have committed it before the connection was lost.
                        lost.outcomeUnknown = true
                        failure = lost
                    }
                    for job in writers { job.error = failure }
                    for (job, finish) in finishes where !writers.contains(where: { $0 === job }) { finish(base!) }
                    return
                }
            }
            guard alone else {
                if let next { state.withLock { if next.seq > $0.seq { $0 = next } } }
                return
            }
            var failed: Error?
            let published = state.withLock { published -> LedgerState? in
                guard published.seq == baseSeq else { return nil }
                base = nil
                do { try Self.fold(rows, into: &published) } catch {
                    // Committed, but not foldable: the fold is dropped (the next catch-up reads the rows again).
                    published = LedgerState()
                    failed = error
                    return nil
                }
                return published
            }
            if let failed {
                for job in writers { job.error = failed }
                return
            }
            // A catch-up moved the published fold meanwhile (it read these rows): the result is made from a fold of
            // its own, published too if the published fold is behind it.
            let made =
                published
                ?? {
                    var exact = base!
                    try? Self.fold(rows, into: &exact)
                    state.withLock { if exact.seq > $0.seq { $0 = exact } }
                    return exact
                }()
            for (_, finish) in finishes { finish(made) }
            return
        }
        for job in group where job.error == nil {
            job.error = PostgresError(.unavailable, "other nodes kept writing this user's events first; try again")
        }
    }
}
