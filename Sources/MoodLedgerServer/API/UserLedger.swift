import Foundation
import MoodLedger
import Synchronization

/// One user's open ledger on the server, with what the API keeps beside it: group commit, each entry's revision,
/// and idempotency keys. The ledger is the only storage: everything here is rebuilt from it on open.
final class UserLedger: Sendable {
    let name: String
    let ledger: Ledger

    /// How long an idempotency key is remembered (keys older than this are not loaded on open).
    static let idempotencyWindowMilliseconds: Int64 = 24 * 3600 * 1000
    /// Most idempotency keys one user's ledger remembers; past it the oldest are forgotten first. Above what the
    /// default write budget lets a user make in a day (a burst of 10,000 and 100 an hour), so at the defaults every
    /// key lives its 24 hours; about 0.3 KB each.
    static let idempotencyKeysPerUser = 20_000
    /// First answers kept in memory per user (the most recent keys'); an older key's replay rebuilds its first
    /// answer from the log as of its revision, the same bytes.
    static let rememberedAnswersPerUser = 64

    /// A stored idempotency key.
    struct Idempotent: Sendable {
        var fingerprint: String
        var status: Int
        var entryID: EntryID?
        /// The revision (ledger seq) the first response was made at.
        var seq: UInt64
        /// The first response's body, when this process made or rebuilt it (kept for the most recent keys only).
        var body: [UInt8]?
        /// When the key was recorded (ms since 1970): it is forgotten 24 hours later.
        var at: Int64 = 0
    }

    private struct State {
        var durable: UInt64
        /// A sync job for this ledger is queued or running.
        var syncing = false
        var failure: Error?
        /// Answers waiting for their seq to be durable, in the order they were written.
        var waiting: [(seq: UInt64, then: @Sendable (Error?) -> Void)] = []
        /// entry id → the revision of its last change; built by one log walk on first need.
        var revisions: [EntryID: UInt64]?
        var keys: [String: Idempotent] = [:]
        /// The keys in the order they were recorded (with when), oldest first from `keysHead`: what expires next.
        var keyOrder: [(key: String, at: Int64)] = []
        var keysHead = 0
        /// The keys whose first answer is held, oldest first from `answersHead`.
        var answered: [String] = []
        var answersHead = 0
        var inFlight: Set<String> = []
        /// entry id → the last change that said it replaced a concurrent edit: that change's revision, and what it
        /// replaced; built by one walk on first need, like the revisions.
        var replaced: [EntryID: Replacement]?
    }

    /// What a change said it replaced: another device's revision of the entry, and the fields that were in conflict.
    struct Replacement: Sendable, Equatable {
        /// The revision of the change that replaced it.
        var seq: UInt64
        /// The revision whose values it replaced.
        var revision: UInt64
        var fields: [String]
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

    /// Runs one write (precondition, append, revision) while no other API write to this ledger runs.
    func writing<T>(_ body: () throws -> T) rethrows -> T {
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

    /// - Parameter loadingKeys: load the idempotency keys of the last day (a ledger that is only read needs none).
    /// The account's identity, sent as `MoodLedger-Account`: the user's log's file id in hex. An account erased and
    /// added again under the same name has a new ledger, so a new identity (`Specs/server.md`, *The account*).
    let account: String

    init(name: String, ledger: Ledger, syncers: WorkerPool, now: Int64, loadingKeys: Bool = true) throws {
        self.name = name
        self.ledger = ledger
        account = ByteText.hex(ledger.eventLog.fileID)
        self.syncers = syncers
        state = Mutex(State(durable: ledger.lastSeq))
        if loadingKeys { try loadKeys(since: now - Self.idempotencyWindowMilliseconds) }
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
                last = ledger.eventLog.lastSeq
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

    /// The revision of an entry's last change (0 if the ledger never held it).
    /// The revision of `id` from the revisions already built (``prepareRevisions()`` ran): never touches the ledger,
    /// so it may be called from inside the ledger's `execute` closure (a call into the ledger there would be
    /// reentrant).
    func preparedRevision(of id: EntryID) -> UInt64 {
        state.withLock { state in
            precondition(state.revisions != nil, "the revisions are prepared before a write")
            return state.revisions?[id] ?? 0
        }
    }

    func revision(of id: EntryID) throws -> UInt64 {
        try prepareRevisions()
        return try revisions()[id] ?? 0
    }

    /// Every entry changed after `since`, with its revision, oldest change first.
    func changes(since: UInt64) throws -> [(EntryID, UInt64)] {
        try prepareRevisions()
        return try revisions().filter { $0.value > since }.sorted { $0.value < $1.value }.map { ($0.key, $0.value) }
    }

    /// The replacement note of an entry's current revision, if its last change carried one.
    func replacement(of id: EntryID, at revision: UInt64) throws -> Replacement? {
        if let known = state.withLock({ $0.replaced }) { return known[id].flatMap { $0.seq == revision ? $0 : nil } }
        var built: [EntryID: Replacement] = [:]
        try ledger.forEachAttachment(.replacement, from: 1) { seq, _, payload in
            guard let json = try? JSONParser.parse(String(decoding: payload, as: UTF8.self)),
                let id = json["entry_id"]?.stringValue.flatMap(EntryID.init), let replaced = json["revision"]?.intValue,
                replaced > 0, let fields = json["fields"]?.arrayValue?.compactMap(\.stringValue)
            else { return }
            built[id] = Replacement(seq: seq, revision: UInt64(replaced), fields: fields)
        }
        let known = state.withLock { state in
            if let known = state.replaced { return known }
            state.replaced = built
            return built
        }
        return known[id].flatMap { $0.seq == revision ? $0 : nil }
    }

    /// Notes a change that carried a replacement note (its batch's last seq is the change's revision).
    func noteReplacement(_ id: EntryID, _ replacement: Replacement) {
        state.withLock { state in if state.replaced != nil { state.replaced![id] = replacement } }
    }

    /// The record that stores a replacement note with its change.
    static func replacementRecord(_ id: EntryID, revision: UInt64, fields: [String]) -> Attachment {
        let json = JSONValue.object([
            ("entry_id", .string(id.description)), ("revision", .int(Int64(revision))),
            ("fields", .array(fields.map { .string($0) }))
        ])
        return Attachment(.replacement, payload: Array(json.serialized().utf8))
    }

    /// Notes a change made through the API.
    func noteChange(_ id: EntryID, at seq: UInt64) {
        state.withLock { state in
            if state.revisions != nil { state.revisions![id] = max(state.revisions![id] ?? 0, seq) }
        }
    }

    /// Whether the revision map is built (else the first request that needs it walks the log: not on a loop).
    var revisionsReady: Bool { state.withLock { $0.revisions != nil } }

    /// Builds the revision map if needed. Call outside ``writing(_:)``: the walk holds the write lock, so no API
    /// change can be made (and missed) while it runs.
    func prepareRevisions() throws {
        if state.withLock({ $0.revisions != nil }) { return }
        writer.lock()
        defer { writer.unlock() }
        _ = try revisions()
    }

    private func revisions() throws -> [EntryID: UInt64] {
        if let known = state.withLock({ $0.revisions }) { return known }
        // Every event payload names its entry where the codec says: one walk, no decoding.
        let built = try ledger.lastEventSeqs(through: ledger.lastSeq)
        return state.withLock { state in
            if let known = state.revisions { return known }
            // Changes noted while the walk ran are newer than it saw.
            state.revisions = built
            return built
        }
    }

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

    /// Claims `key` for a request with `fingerprint`, or says why it cannot run.
    func claim(_ key: String, fingerprint: Fingerprint) -> KeyState {
        let now = ledger.options.clock()
        return state.withLock { state in
            Self.expire(&state, now: now)
            if let known = state.keys[key] {
                return fingerprint.matches(known.fingerprint) ? .replay(known) : .mismatch
            }
            if state.inFlight.contains(key) { return .inFlight }
            state.inFlight.insert(key)
            return .new
        }
    }

    /// Whether `key` with `fingerprint` is a request already acknowledged (its answer would be a replay), without
    /// claiming it.
    func isReplay(_ key: String, fingerprint: Fingerprint) -> Bool {
        let now = ledger.options.clock()
        return state.withLock { state in
            guard let known = state.keys[key], known.at >= now - Self.idempotencyWindowMilliseconds else {
                return false
            }
            return fingerprint.matches(known.fingerprint)
        }
    }

    /// Records the outcome of a claimed key (`nil`: the request failed before changing anything; the key is free).
    func finish(_ key: String, _ outcome: Idempotent?) {
        let now = ledger.options.clock()
        state.withLock { state in
            state.inFlight.remove(key)
            guard var outcome else { return }
            let known = state.keys[key]
            if known == nil {
                if outcome.at == 0 { outcome.at = now }
                state.keyOrder.append((key, outcome.at))
            } else {
                outcome.at = known!.at
            }
            if outcome.body != nil, known?.body == nil { state.answered.append(key) }
            state.keys[key] = outcome
            Self.expire(&state, now: now)
        }
    }

    /// How many keys and first answers are held now (for the tests of the bounds).
    var heldKeys: (keys: Int, answers: Int) {
        state.withLock { state in (state.keys.count, state.keys.values.count { $0.body != nil }) }
    }

    /// Forgets keys past their 24 hours or past ``idempotencyKeysPerUser``, and first answers past
    /// ``rememberedAnswersPerUser`` (their keys stay): memory per user is bounded whatever the ledger's uptime.
    private static func expire(_ state: inout State, now: Int64) {
        let oldest = now - idempotencyWindowMilliseconds
        while state.keysHead < state.keyOrder.count {
            let (key, at) = state.keyOrder[state.keysHead]
            guard at < oldest || state.keyOrder.count - state.keysHead > idempotencyKeysPerUser else { break }
            // A key recorded again later (after a rebuild) has one entry here per recording; only its own goes.
            if state.keys[key]?.at == at { state.keys.removeValue(forKey: key) }
            state.keysHead += 1
        }
        while state.answered.count - state.answersHead > rememberedAnswersPerUser {
            state.keys[state.answered[state.answersHead]]?.body = nil
            state.answersHead += 1
        }
        // The queues are compacted once half of them is spent: amortized O(1) per key.
        if state.keysHead > 1024, state.keysHead * 2 > state.keyOrder.count {
            state.keyOrder.removeFirst(state.keysHead)
            state.keysHead = 0
        }
        if state.answersHead > 1024, state.answersHead * 2 > state.answered.count {
            state.answered.removeFirst(state.answersHead)
            state.answersHead = 0
        }
    }

    /// Drops remembered response bodies and the rendered text of an erased entry (they hold its data); the keys
    /// stay, answered again from the ledger, which no longer has it.
    func forgetResponses(of id: EntryID) {
        state.withLock { state in
            for (key, known) in state.keys where known.entryID == id { state.keys[key]?.body = nil }
        }
        rendered.withLock { table in
            for style in [EntryJSONStyle.moodAPI, .wellness, .ledger] {
                table.removeValue(forKey: RenderKey(id: id, style: style))
            }
        }
    }

    /// The record that stores a key with its change.
    static func idempotencyRecord(key: String, fingerprint: String, status: Int, entryID: EntryID?) -> Attachment {
        let json = JSONValue.object([
            ("key", .string(key)), ("fingerprint", .string(fingerprint)),
            ("status", .int(Int64(status))),
            ("entry_id", .optional(entryID) { .string($0.description) })
        ])
        return Attachment(.idempotencyKey, payload: Array(json.serialized().utf8))
    }

    private func loadKeys(since: Int64) throws {
        let first = try ledger.seq(at: .instant(since)) + 1
        var keys: [String: Idempotent] = [:]
        var order: [(key: String, at: Int64)] = []
        try ledger.forEachAttachment(.idempotencyKey, from: first) { seq, recordedAt, payload in
            guard let json = try? JSONParser.parse(String(decoding: payload, as: UTF8.self)),
                let key = json["key"]?.stringValue, let fingerprint = json["fingerprint"]?.stringValue,
                let status = json["status"]?.intValue
            else { return }
            keys[key] = Idempotent(
                fingerprint: fingerprint, status: status,
                entryID: json["entry_id"]?.stringValue.flatMap(EntryID.init), seq: seq, body: nil, at: recordedAt / 1000
            )
            order.append((key, recordedAt / 1000))
        }
        let now = ledger.options.clock()
        state.withLock { state in
            state.keys = keys
            state.keyOrder = order
            state.keysHead = 0
            Self.expire(&state, now: now)
        }
    }
}
