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

    /// Folds the rows past the fold's seq; a fold that meets a row it cannot decode is left as it was.
    /// - Throws: ``PostgresError``; ``MoodError`` `corrupt_event`.
    ///
    /// A database whose last seq is behind the fold (a failover to a standby that had not received rows this node
    /// had read from the old primary before their commit was confirmed) is folded again from its first row: the
    /// fold never holds what the database does not.
    func catchUp() throws { _ = try catchUp(reading: nil) }

    /// ``catchUp()`` with one more query about this user (`$1` is the user's name) in the same round trip.
    /// - Returns: that query's rows.
    func catchUp(reading extra: String?) throws -> [PostgresRow] {
        let current = state.withLock { $0 }
        let (rows, last, extraRows) = try store.pool.withConnection { connection in
            let results = try connection.pipeline(
                [
                    (
                        "SELECT \(EventRow.columns) FROM events WHERE user_name = $1 AND seq > $2 ORDER BY seq",
                        [.text(name), .int64(Int64(current.seq))]
                    ), ("SELECT coalesce(max(seq), 0) FROM events WHERE user_name = $1", [.text(name)])
                ] + (extra.map { [($0, [.text(name)])] } ?? []))
            return (
                try results[0].rows.map(EventRow.init), UInt64(try results[1].rows[0].int(0)),
                results.count > 2 ? results[2].rows : []
            )
        }
        if last < current.seq {
            var fresh = LedgerState()
            try Self.fold(try self.rows(after: 0), into: &fresh)
            state.withLock { $0 = fresh }
            return extraRows
        }
        guard !rows.isEmpty else { return extraRows }
        var next = current
        try Self.fold(rows, into: &next)
        state.withLock { published in
            // Another thread may have caught up meanwhile: keep whichever fold is further.
            if next.seq > published.seq { published = next }
        }
        return extraRows
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
    /// `@unchecked Sendable`: `decide` is its caller's closure, run by whichever thread leads while the caller waits
    /// on `done`; `error` is written by the leader before `done` is signalled and read by the caller after.
    private final class Job: @unchecked Sendable {
        let decide: (LedgerState, Int64) throws -> Decision<Void>
        /// Runs alone in its transaction (an erasure: it reads the committed rows it redacts).
        let exclusive: Bool
        var error: Error?
        let done = DispatchSemaphore(value: 0)

        init(exclusive: Bool, decide: @escaping (LedgerState, Int64) throws -> Decision<Void>) {
            self.exclusive = exclusive
            self.decide = decide
        }
    }

    /// Commands waiting, and whether a thread is leading (deciding and committing them).
    private let queue = Mutex<(jobs: [Job], leading: Bool)>(([], false))
    /// Most commands in one transaction.
    static let groupLimit = 64

    /// One command's write, in turn with this node's other writes of this user: queued; the first writer to find no
    /// leader leads — it catches up, decides every waiting command in order against the fold as the ones before it
    /// leave it, inserts all their events at the next seqs in one transaction, folds them and answers each. Writes
    /// that arrive during a commit go into the next group: one `COMMIT` (one WAL flush) per group, not per request.
    /// Another node taking those seqs first (a unique violation) has the whole group decided again on the caught-up
    /// fold.
    private func writing<T>(
        exclusive: Bool = false, _ decide: @escaping (LedgerState, Int64) throws -> Decision<T>
    ) throws -> T {
        // Set by the leader before `done` is signalled, read after; the closure may outlive this call in the
        // leader's hands (it is escaping for that reason), never its use.
        nonisolated(unsafe) var output: T?
        let job = Job(exclusive: exclusive) { state, now in
            let (records, extra, result) = try decide(state, now)
            return (records, extra, { output = result($0) })
        }
        let leads = queue.withLock { queue -> Bool in
            queue.jobs.append(job)
            if queue.leading { return false }
            queue.leading = true
            return true
        }
        if leads { lead() }
        job.done.wait()
        if let error = job.error { throw error }
        return output!
    }

    /// Commits groups until none waits.
    private func lead() {
        while true {
            let group = queue.withLock { queue -> [Job] in
                guard let first = queue.jobs.first else {
                    queue.leading = false
                    return []
                }
                if first.exclusive {
                    queue.jobs.removeFirst()
                    return [first]
                }
                let end = min(queue.jobs.firstIndex(where: \.exclusive) ?? queue.jobs.count, Self.groupLimit)
                defer { queue.jobs.removeFirst(end) }
                return Array(queue.jobs[..<end])
            }
            guard !group.isEmpty else { return }
            commit(group)
            for job in group { job.done.signal() }
        }
    }

    /// Decides and commits one group; each job ends with its result made or its error set.
    private func commit(_ group: [Job]) {
        do { try catchUp() } catch {
            for job in group { job.error = error }
            return
        }
        for _ in 0..<Self.attempts {
            let current = state.withLock { $0 }
            let now = options.clock()
            var next = current
            var statements: [(String, [PostgresValue])] = []
            var decided: [(job: Job, finish: (LedgerState) -> Void, state: LedgerState, wrote: Bool)] = []
            for job in group {
                job.error = nil
                do {
                    let (records, extra, finish) = try job.decide(next, now)
                    statements += extra
                    let rows = records.enumerated().map { index, record in
                        EventRow(record, seq: next.seq + UInt64(index) + 1, last: index == records.count - 1, now: now)
                    }
                    statements += rows.map { $0.insert(for: name) }
                    try Self.fold(rows, into: &next)
                    decided.append((job, finish, next, !records.isEmpty || !extra.isEmpty))
                } catch {
                    job.error = error
                }
            }
            if !statements.isEmpty {
                do {
                    _ = try store.pool.withConnection { try $0.pipeline(statements) }
                } catch let error as PostgresError where error.isUniqueViolation {
                    if (try? catchUp()) == nil { break }
                    continue
                } catch {
                    var failure = error
                    if var lost = error as? PostgresError, lost.kind == .unavailable {
                        // The transaction was sent: the server may have committed it before the connection was lost.
                        lost.outcomeUnknown = true
                        failure = lost
                    }
                    for entry in decided where entry.wrote { entry.job.error = failure }
                    for entry in decided where !entry.wrote { entry.finish(entry.state) }
                    return
                }
                state.withLock { published in if next.seq > published.seq { published = next } }
            }
            for entry in decided { entry.finish(entry.state) }
            return
        }
        for job in group where job.error == nil {
            job.error = PostgresError(.unavailable, "other nodes kept writing this user's events first; try again")
        }
    }
}
