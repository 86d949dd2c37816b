import MoodLedger

/// The storage port: one user's event stream and its fold, as the routes use it (`Specs/server.md`, *Stores*). The
/// data directory's adapter is the user's ``Ledger``; PostgreSQL's is ``PostgresStream``. Either way the routes
/// decide a change against the fold (``LedgerState``) and append its events as one batch, and every answer is read
/// from the fold: revisions, ETags, the changes feed and idempotency keys are the same through both.
protocol UserStream: AnyObject, Sendable {
    /// The options the commands are decided with (the clock, the bounds of `logged_at`, new ids).
    var options: Ledger.Options { get }
    /// Whether the stream puts this node's writes in order itself, deciding each on the fold the one before left
    /// (PostgreSQL's, which commits them in groups); a ledger's are put in order by ``UserLedger/writing(_:)``.
    var ordersItsOwnWrites: Bool { get }
    /// The last sequence number folded.
    var lastSeq: UInt64 { get }
    /// Entries whose erasure is recorded but whose records are not all redacted yet.
    var unfinishedErasures: Set<EntryID> { get }
    /// Runs `body` with the current fold.
    func read<T>(_ body: (LedgerState) throws -> T) rethrows -> T
    /// An entry as it was once the stream's records through `seq` were folded (time travel).
    func entry(_ id: EntryID, asOf seq: UInt64) throws -> MoodEntry?
    /// Decides a command against the current fold and appends its events as one batch (nothing when `decide` throws
    /// or decides nothing). `decide` may be run by another thread (a store that commits several writes at once runs
    /// them all on the thread that leads the group), always before this returns; it may be held a little longer.
    /// - Throws: what `decide` throws; the store's failure (nothing appended).
    func appendCommand(
        _ decide: @escaping (LedgerState, Int64) throws -> (events: [MoodEvent], entryID: EntryID, created: Bool)
    ) throws -> CommandResult
    /// Deletes an entry.
    func delete(_ id: EntryID) throws
    /// Erases entries' personal data (`Specs/erasure.md`).
    @discardableResult
    func erase(
        _ ids: [EntryID], reason: String, requestedBy: String, ignoringDestinations: Bool
    ) throws
        -> EraseReport
    /// Finishes erasures whose redaction failed part way.
    func finishErasures() throws -> EraseReport
    /// Makes everything appended durable. - Returns: the last seq that is.
    func flush() throws -> UInt64
    /// Brings the fold up to the store's last acknowledged write (another node's, another process's).
    func catchUp() throws
    /// Releases what the stream holds (its descriptors, its cached fold).
    func close()
}

extension UserStream {
    /// An entry as the fold has it now.
    func entry(_ id: EntryID) -> MoodEntry? { read { $0.entries[id] } }
}

extension Ledger: UserStream {
    var ordersItsOwnWrites: Bool { false }

    func appendCommand(
        _ decide: @escaping (LedgerState, Int64) throws -> (events: [MoodEvent], entryID: EntryID, created: Bool)
    ) throws -> CommandResult {
        try execute(decide)
    }

    func entry(_ id: EntryID, asOf seq: UInt64) throws -> MoodEntry? {
        try read(at: .seq(seq)) { $0.entries[id] }
    }

    /// A ledger the server opened holds its writer lock: no other process appends to it, so there is nothing to
    /// catch up with.
    func catchUp() {}
}
