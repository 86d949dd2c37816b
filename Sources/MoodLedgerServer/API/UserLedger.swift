import EventLog
import Foundation
import MoodLedger
import Synchronization

/// One user's open ledger on the server, with what the API keeps beside it: group commit, each entry's revision,
/// and idempotency keys. The ledger is the only storage: everything here is rebuilt from it on open.
final class UserLedger: Sendable {
    let name: String
    let ledger: Ledger

    /// The record type of an idempotency key stored with the change it made (*safe to ignore*: folds skip it).
    static let idempotencyRecordType: UInt16 = 0x8001
    /// How long an idempotency key is remembered (keys older than this are not loaded on open).
    static let idempotencyWindowMilliseconds: Int64 = 24 * 3600 * 1000

    /// A stored idempotency key.
    struct Idempotent: Sendable {
        var fingerprint: String
        var status: Int
        var entryID: EntryID?
        /// The revision (ledger seq) the first response was made at.
        var seq: UInt64
        /// The first response's body, when this process made or rebuilt it.
        var body: [UInt8]?
    }

    private struct State {
        var durable: UInt64
        var syncing = false
        var failure: Error?
        /// entry id → the revision of its last change; built by one log walk on first need.
        var revisions: [EntryID: UInt64]?
        var keys: [String: Idempotent] = [:]
        var inFlight: Set<String> = []
    }
    private let state: Mutex<State>
    private let synced = NSCondition()
    private let writer = NSLock()

    /// Runs one write (precondition, append, revision) while no other API write to this ledger runs.
    func writing<T>(_ body: () throws -> T) rethrows -> T {
        writer.lock()
        defer { writer.unlock() }
        return try body()
    }

    init(name: String, ledger: Ledger, now: Int64) throws {
        self.name = name
        self.ledger = ledger
        state = Mutex(State(durable: ledger.lastSeq))
        try loadKeys(since: now - Self.idempotencyWindowMilliseconds)
    }

    // MARK: - Group commit

    /// Returns once everything through `seq` is durable. Callers that arrive while a sync runs wait for the next
    /// one, which covers all of them: one `fdatasync` per group, not per request.
    /// - Throws: the sync's error (the ledger then refuses writes until reopened).
    func waitDurable(_ seq: UInt64) throws {
        synced.lock()
        defer { synced.unlock() }
        while true {
            let (durable, syncing, failure) = state.withLock { ($0.durable, $0.syncing, $0.failure) }
            if let failure { throw failure }
            if durable >= seq { return }
            if syncing {
                synced.wait()
                continue
            }
            state.withLock { $0.syncing = true }
            synced.unlock()
            let result = Result { try ledger.sync() }
            synced.lock()
            state.withLock { state in
                state.syncing = false
                switch result {
                case .success(let durable): state.durable = max(state.durable, durable)
                case .failure(let error): state.failure = error
                }
            }
            synced.broadcast()
        }
    }

    /// Whether a sync failed (the server then drops this ledger and reopens it from disk).
    var failed: Bool { state.withLock { $0.failure != nil } }

    // MARK: - Revisions

    /// The revision of an entry's last change (0 if the ledger never held it).
    func revision(of id: EntryID) throws -> UInt64 {
        try prepareRevisions()
        return try revisions()[id] ?? 0
    }

    /// Every entry changed after `since`, with its revision, oldest change first.
    func changes(since: UInt64) throws -> [(EntryID, UInt64)] {
        try prepareRevisions()
        return try revisions().filter { $0.value > since }.sorted { $0.value < $1.value }.map { ($0.key, $0.value) }
    }

    /// Notes a change made through the API.
    func noteChange(_ id: EntryID, at seq: UInt64) {
        state.withLock { state in
            if state.revisions != nil { state.revisions![id] = max(state.revisions![id] ?? 0, seq) }
        }
    }

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
        // Every event payload names its entry at bytes 17..<33: one walk, no decoding.
        var built: [EntryID: UInt64] = [:]
        let through = ledger.lastSeq
        try ledger.eventLog.forEach(through: through) { view in
            if view.type & LogFormat.safeToIgnoreBit == 0, view.payload.count >= 33 {
                let high = UInt64(bigEndian: view.payload.loadUnaligned(fromByteOffset: 17, as: UInt64.self))
                let low = UInt64(bigEndian: view.payload.loadUnaligned(fromByteOffset: 25, as: UInt64.self))
                built[EntryID(high: high, low: low)] = view.seq
            }
            return true
        }
        return state.withLock { state in
            if let known = state.revisions { return known }
            // Changes noted while the walk ran are newer than it saw.
            state.revisions = built
            return built
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
    func claim(_ key: String, fingerprint: String) -> KeyState {
        state.withLock { state in
            if let known = state.keys[key] { return known.fingerprint == fingerprint ? .replay(known) : .mismatch }
            if state.inFlight.contains(key) { return .inFlight }
            state.inFlight.insert(key)
            return .new
        }
    }

    /// Records the outcome of a claimed key (`nil`: the request failed before changing anything; the key is free).
    func finish(_ key: String, _ outcome: Idempotent?) {
        state.withLock { state in
            state.inFlight.remove(key)
            if let outcome { state.keys[key] = outcome }
        }
    }

    /// Drops remembered response bodies about an erased entry (they hold its data); the keys stay, answered again
    /// from the ledger, which no longer has it.
    func forgetResponses(of id: EntryID) {
        state.withLock { state in
            for (key, known) in state.keys where known.entryID == id { state.keys[key]?.body = nil }
        }
    }

    /// The record that stores a key with its change.
    static func idempotencyRecord(key: String, fingerprint: String, status: Int, entryID: EntryID?) -> PendingRecord {
        let json = JSONValue.object([("key", .string(key)), ("fingerprint", .string(fingerprint)),
                                     ("status", .int(Int64(status))),
                                     ("entry_id", .optional(entryID) { .string($0.description) })])
        return PendingRecord(type: idempotencyRecordType, payload: Array(json.serialized().utf8))
    }

    private func loadKeys(since: Int64) throws {
        let first = try ledger.eventLog.lastSeq(atOrBefore: since * 1000) + 1
        var keys: [String: Idempotent] = [:]
        try ledger.forEachAttachment(type: Self.idempotencyRecordType, from: first) { seq, _, payload in
            guard let json = try? JSONParser.parse(String(decoding: payload, as: UTF8.self)),
                  let key = json["key"]?.stringValue, let fingerprint = json["fingerprint"]?.stringValue,
                  let status = json["status"]?.intValue else { return }
            keys[key] = Idempotent(fingerprint: fingerprint, status: status,
                                   entryID: json["entry_id"]?.stringValue.flatMap(EntryID.init), seq: seq, body: nil)
        }
        state.withLock { $0.keys = keys }
    }
}
