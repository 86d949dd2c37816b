import Foundation
import MoodLedger
import Synchronization

/// One user's open stream on the server (a ledger in the data directory, or rows in PostgreSQL), with what the API
/// keeps beside it: group commit, keyed requests in flight and the first answers of the most recent keys. The stream
/// is the only storage: revisions, replacement notes and idempotency keys are its fold's
/// (``LedgerState/revision(of:)``); what is here is coordination and a cache.
final class UserLedger: Sendable {
    let name: String
    let ledger: any UserStream

    /// How long an idempotency key is remembered: 24 hours from its recording.
    static let idempotencyWindowMilliseconds = RequestRecords.keyWindowMilliseconds
    /// Most idempotency keys one user's ledger remembers (the fold's bound); past it the oldest are forgotten first.
    static let idempotencyKeysPerUser = RequestRecords.keysKept
    /// First answers kept in memory per user (the most recent keys'); an older key's replay rebuilds its first
    /// answer from the log as of its revision, the same bytes.
    static let rememberedAnswersPerUser = 64

    /// A stored idempotency key, as a request is answered with it.
    struct Idempotent: Sendable {
        var fingerprint: String
        var status: Int
        var entryID: EntryID?
        /// The revision (ledger seq) the first response was made at.
        var seq: UInt64
        /// The first response's body, when this process made or rebuilt it (kept for the most recent keys only).
        var body: [UInt8]?
    }

    private struct State {
        var durable: UInt64
        /// A sync job for this ledger is queued or running.
        var syncing = false
        var failure: Error?
        /// Answers waiting for their seq to be durable, in the order they were written.
        var waiting: [(seq: UInt64, then: @Sendable (Error?) -> Void)] = []
        /// The first answers of the most recent keys, and those keys oldest first from `answersHead`.
        var bodies: [String: [UInt8]] = [:]
        var answered: [String] = []
        var answersHead = 0
        var inFlight: Set<String> = []
    }

    private let state: Mutex<State>
    /// List-form entry texts, reused while the entry is unchanged (see ``writeEntries(_:to:)``).
    private let rendered = Mutex([RenderKey: (entry: MoodEntry, json: [UInt8])]())

    /// A rendered text is an entry in one route's style.
    struct RenderKey: Hashable {
        var id: EntryID
        var style: EntryJSONStyle
    }
    /// Most entry texts kept per user (about 0.5 KB each); the cache is emptied when full.
    static let renderedCapacity = 4096
    private let writer = NSLock()
    /// The threads that run group commits (shared by every ledger of the server; they only ever wait on a sync).
    private let syncers: WorkerPool

    /// Runs one write (precondition, append, revision) while no other API write to this ledger runs — or, for a
    /// stream that puts its writes in order itself (``UserStream/ordersItsOwnWrites``), as it does: each is still
    /// decided on the state the one before it left, and several share a commit.
    func writing<T>(_ body: () throws -> T) rethrows -> T {
        if ledger.ordersItsOwnWrites { return try body() }
        writer.lock()
        defer { writer.unlock() }
        return try body()
    }

    /// Long work holding the ledger (an erasure rewrites the log): while it runs, ``busy`` tells the event loops to
    /// move this user's requests to the workers rather than wait on its locks.
    func writingLong<T>(_ body: () throws -> T) rethrows -> T {
        longWork.add(1, ordering: .sequentiallyConsistent)
        defer { longWork.subtract(1, ordering: .sequentiallyConsistent) }
        return try writing(body)
    }

    /// Whether long work holds this ledger now.
    var busy: Bool { longWork.load(ordering: .sequentiallyConsistent) > 0 }
    private let longWork = Atomic<Int>(0)

    /// The account's identity, sent as `MoodLedger-Account`: the user's log's file id in hex. An account erased and
    /// added again under the same name has a new ledger, so a new identity (`Specs/server.md`, *The account*).
    let account: String

    init(name: String, ledger: any UserStream, account: String, syncers: WorkerPool) {
        self.name = name
        self.ledger = ledger
        self.account = account
        self.syncers = syncers
        state = Mutex(State(durable: ledger.lastSeq))
    }

    // MARK: - Group commit

    /// Calls `then` once everything through `seq` is durable (with `nil`), or with the error of the sync that failed.
    /// At once when it already is. Else, when no sync of this ledger is under way and `inline` is set, the caller runs
    /// one itself (an event loop: no hand-off to another thread on the way to the answer); otherwise `then` is called
    /// from a sync thread after the group's `fdatasync`. Writes that arrive while a sync runs go into the next group:
    /// one `fdatasync` per group, not per request.
    func whenDurable(_ seq: UInt64, inline: Bool = false, then: @escaping @Sendable (Error?) -> Void) {
        enum Now {
            case done(Error?)
            case later(start: Bool)
        }
        let now = state.withLock { state -> Now in
            if let failure = state.failure { return .done(failure) }
            if state.durable >= seq { return .done(nil) }
            state.waiting.append((seq, then))
            if state.syncing { return .later(start: false) }
            state.syncing = true
            return .later(start: true)
        }
        switch now {
        case .done(let error): then(error)
        case .later(start: false): break
        case .later(start: true):
            // One round here at most: writes that came meanwhile are left to the sync threads, so a loop that
            // syncs is never kept from its own connections for more than one `fdatasync`.
            if inline, !commitRound() { return }
            syncers.submit { [self] in while commitRound() {} }
        }
    }

    /// Returns once everything through `seq` is durable (for work already off the event loops).
    /// - Throws: the sync's error (the ledger then refuses writes until reopened).
    func waitDurable(_ seq: UInt64) throws {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Error?>(nil)
        whenDurable(seq) { error in
            outcome.withLock { $0 = error }
            done.signal()
        }
        done.wait()
        if let error = outcome.withLock({ $0 }) { throw error }
    }

    /// One group commit: an `fdatasync` that covers every write made before it, then its waiters are answered.
    /// - Returns: whether answers still wait (they came during the sync: the next group); the caller then owns the
    ///   next round, else the ledger has no sync under way.
    private func commitRound() -> Bool {
        let result = Result { try ledger.flush() }
        // For the check below, read (in debug builds) outside `state`'s lock: a write takes the ledger's lock, then
        // this one, never the other way round. The log's own last record: a commit's records are written before its
        // state is published, so the published seq may still lag what the sync covered.
        var last = UInt64.max
        assert(
            {
                last = (ledger as? Ledger)?.eventLog.lastSeq ?? .max
                return true
            }())
        let (ready, error, more) = state.withLock { state -> ([@Sendable (Error?) -> Void], Error?, Bool) in
            switch result {
            case .success(let durable):
                // What the log calls durable never goes back, and is never past what it was asked to cover.
                assert(durable <= last, "durable past the last record")
                state.durable = max(state.durable, durable)
            case .failure(let error): state.failure = error
            }
            let durable = state.durable
            let failure = state.failure
            var ready: [@Sendable (Error?) -> Void] = []
            var rest: [(seq: UInt64, then: @Sendable (Error?) -> Void)] = []
            for waiter in state.waiting {
                if failure != nil || waiter.seq <= durable { ready.append(waiter.then) } else { rest.append(waiter) }
            }
            // An answer leaves only once its seq is durable (or with the sync's error): none is both sent and kept.
            assert(ready.count + rest.count == state.waiting.count, "every waiter answered or kept")
            state.waiting = rest
            if rest.isEmpty { state.syncing = false }
            return (ready, failure, !rest.isEmpty)
        }
        for then in ready { then(error) }
        return more
    }

    /// Whether a sync failed (the server then drops this ledger and reopens it from disk).
    var failed: Bool { state.withLock { $0.failure != nil } }

    /// Whether nothing waits on this ledger (no answer waiting for a sync, no sync under way, no keyed request in
    /// flight, no long work): it may be closed.
    var isQuiet: Bool {
        !busy && state.withLock { $0.waiting.isEmpty && !$0.syncing && $0.inFlight.isEmpty }
    }

    // MARK: - Revisions

    /// The revision of an entry's last change (0 if the ledger never held it): the fold's, never a walk of the log.
    func revision(of id: EntryID) -> UInt64 { ledger.read { $0.revision(of: id) } }

    // MARK: - Rendered entries

    /// A JSON array of `entries` in list form, reusing the text of an entry rendered before when the entry is
    /// unchanged — checked by comparing the whole entry, so a stale text is never sent.
    /// - Parameter userID: the seed's `user_id` in each entry (seed 002's lists carry it as its single answers do).
    func writeEntries(
        _ entries: [MoodEntry], style: EntryJSONStyle = .moodAPI, userID: String? = nil, to out: inout JSONBytes
    ) {
        let known: [[UInt8]?] = rendered.withLock { table in
            entries.map { entry in
                table[RenderKey(id: entry.id, style: style)].flatMap { $0.entry == entry ? $0.json : nil }
            }
        }
        var fresh: [(MoodEntry, [UInt8])] = []
        out.beginArray()
        for (entry, text) in zip(entries, known) {
            if let text {
                out.fragment(text)
            } else {
                var one = JSONBytes(capacity: 512)
                entry.writeJSON(to: &one, userID: userID, style: style)
                out.fragment(one.bytes)
                fresh.append((entry, one.bytes))
            }
        }
        out.endArray()
        guard !fresh.isEmpty else { return }
        rendered.withLock { table in
            if table.count + fresh.count > Self.renderedCapacity { table.removeAll(keepingCapacity: true) }
            for (entry, text) in fresh { table[RenderKey(id: entry.id, style: style)] = (entry, text) }
        }
    }

    // MARK: - Idempotency

    enum KeyState {
        case new
        case replay(Idempotent)
        case mismatch
        case inFlight
    }

    /// Claims `key` for a request with `fingerprint`, or says why it cannot run. Both looks are under this ledger's
    /// lock, which a request in flight takes to leave the flight, after its key was published with its change: a key
    /// is either known to the fold, or in flight, or free, never missed between the two looks.
    func claim(_ key: String, fingerprint: Fingerprint) -> KeyState {
        let now = ledger.options.clock()
        return state.withLock { state in
            if let known = known(key, now: now, bodies: state.bodies) {
                return fingerprint.matches(known.fingerprint) ? .replay(known) : .mismatch
            }
            if state.inFlight.contains(key) { return .inFlight }
            state.inFlight.insert(key)
            return .new
        }
    }

    /// The key as the ledger's fold holds it (recorded within the last 24 hours), with its first answer if held.
    private func known(_ key: String, now: Int64, bodies: [String: [UInt8]]) -> Idempotent? {
        guard let kept = ledger.read({ $0.requests.key(key, now: now) }) else { return nil }
        return Idempotent(
            fingerprint: kept.request.fingerprint, status: kept.request.status, entryID: kept.request.entryID,
            seq: kept.seq, body: bodies[key])
    }

    /// Whether `key` with `fingerprint` is a request already acknowledged (its answer would be a replay), without
    /// claiming it.
    func isReplay(_ key: String, fingerprint: Fingerprint) -> Bool {
        let now = ledger.options.clock()
        guard let known = known(key, now: now, bodies: [:]) else { return false }
        return fingerprint.matches(known.fingerprint)
    }

    /// Ends a claimed key's flight; `outcome` holds its first answer's body to keep (`nil`: the request failed
    /// before changing anything, and the key is free, or there is nothing to keep).
    func finish(_ key: String, _ outcome: Idempotent?) {
        state.withLock { state in
            state.inFlight.remove(key)
            guard let body = outcome?.body else { return }
            if state.bodies.updateValue(body, forKey: key) == nil { state.answered.append(key) }
            while state.answered.count - state.answersHead > Self.rememberedAnswersPerUser {
                state.bodies.removeValue(forKey: state.answered[state.answersHead])
                state.answersHead += 1
            }
            // The queue is compacted once half of it is spent: amortized O(1) per key.
            if state.answersHead > 1024, state.answersHead * 2 > state.answered.count {
                state.answered.removeFirst(state.answersHead)
                state.answersHead = 0
            }
        }
    }

    /// How many keys are remembered now (recorded within 24 hours) and how many first answers are held (for the
    /// tests of the bounds).
    var heldKeys: (keys: Int, answers: Int) {
        let now = ledger.options.clock()
        let keys = ledger.read { $0.requests.keyCount(now: now) }
        return (keys, state.withLock { $0.bodies.count })
    }

    /// Drops remembered response bodies and the rendered text of an erased entry (they hold its data); the keys
    /// stay, answered again from the ledger, which no longer has it.
    func forgetResponses(of id: EntryID) {
        let keys = ledger.read { state in state.requests.keptKeys.filter { $0.request.entryID == id } }
        state.withLock { state in
            for kept in keys { state.bodies.removeValue(forKey: kept.request.key) }
        }
        rendered.withLock { table in
            for style in [EntryJSONStyle.moodAPI, .wellness, .ledger] {
                table.removeValue(forKey: RenderKey(id: id, style: style))
            }
        }
    }
}
