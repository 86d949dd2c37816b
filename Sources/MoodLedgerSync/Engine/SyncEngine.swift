import Dispatch
import class Foundation.Thread
import MoodLedger
import Synchronization

/// Delivers a ledger's `backend` outbox to a remote and pulls the remote's changes, recording every step as an
/// event (`Specs/sync.md`). One run: push every due item (attempts of a batch appended together, requests sent
/// several at a time, outcomes appended together), re-check the outbox until nothing is due, pull, and push again
/// what the pull re-queued.
// @unchecked Sendable: its stored properties are immutable, Sendable, or guarded by a Mutex (the jitter generator,
// the credentials); the transport is a Sendable protocol.
public final class SyncEngine: @unchecked Sendable {
    /// Tuning; every property documents its default.
    public struct Configuration: Sendable {
        /// Requests in flight at once. Default 8.
        public var concurrency = 8
        /// Items whose attempts are appended as one batch (one fsync) before their requests go out. Default 256.
        public var batchSize = 256
        /// Changes asked for per pull request. Default 500.
        public var pullPageSize = 500
        /// Push passes in one run at most (a pass re-checks the outbox for changes made during the run). Default 100.
        public var maximumPasses = 100
        /// Seed of the backoff jitter; `nil` draws one from the system. Default `nil`.
        public var seed: UInt64?
        /// Send every pending item now, whatever its retry time (`sync --now`). Default `false`.
        public var ignoreBackoff = false
        /// Merges of one entry in one run at most; a conditional send still refused after them is retried later
        /// with backoff. Default 3.
        public var maximumMergesPerRun = 3

        public init() {}
    }

    let ledger: Ledger
    let transport: any SyncTransport
    let credentialSource: @Sendable () throws(SyncError) -> SyncCredentials
    let configuration: Configuration
    /// The remote's codec: replaced once when a run learns the remote's capabilities, before any request is sent.
    let codec: Mutex<SyncDialect>
    var dialect: SyncDialect { codec.withLock { $0 } }
    private let random: Mutex<SplitMix64>
    private let credentials: Mutex<SyncCredentials?> = Mutex(nil)
    /// This ledger's part of its keys: the first 8 bytes of the log's random file id, in hex (``key(for:in:)``).
    let keyTag: String

    /// Creates an engine for the ledger's configured backend.
    /// - Parameters:
    ///   - ledger: an open, writable ledger.
    ///   - transport: how requests travel (``HTTPTransport`` for the configured URL when `nil`).
    ///   - credentials: reads the credentials (called again once after a 401).
    ///   - configuration: tuning.
    /// - Throws: ``SyncError`` `config` when no backend is configured (`moodledger remote set`).
    public init(ledger: Ledger, transport: (any SyncTransport)? = nil,
                credentials: @escaping @Sendable () throws(SyncError) -> SyncCredentials,
                configuration: Configuration = Configuration()) throws(SyncError) {
        guard let remote = ledger.state.outbox.progress(.backend).remote else {
            throw SyncError(.config, "no backend is configured: moodledger remote set URL --dialect mood-api|wellness|progress")
        }
        self.ledger = ledger
        self.codec = Mutex(SyncDialect(remote))
        if let transport {
            self.transport = transport
        } else {
            do { self.transport = HTTPTransport(url: try RemoteURL(remote.url)) } catch {
                throw SyncError(.config, "the configured URL is not usable: \(error.rule)")
            }
        }
        self.credentialSource = credentials
        self.configuration = configuration
        let digits = Array("0123456789abcdef".utf8)
        keyTag = String(decoding: ledger.eventLog.fileID.prefix(8).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] },
                        as: UTF8.self)
        var system = SystemRandomNumberGenerator()
        self.random = Mutex(SplitMix64(seed: configuration.seed ?? system.next()))
    }

    /// One run: push, pull, push what the pull re-queued.
    /// - Parameter once: one push pass and one pull, without re-checking the outbox.
    /// - Returns: what the run did.
    /// - Throws: ``SyncError`` `unauthorized` when the credentials are refused twice (the item's failure is
    ///   recorded first); ``EventLogError`` when the log cannot be written.
    public func run(once: Bool = false) throws -> SyncReport {
        var report = SyncReport()
        try learnCapabilities()
        try push(into: &report, once: once)
        try pull(into: &report)
        if report.requeued > 0 || !once { try push(into: &report, once: once) }
        summarize(into: &report)
        return report
    }

    /// The requests a run would make now, without sending anything or appending anything (`--dry-run`). A remote
    /// whose capabilities are not known yet is planned for as its seed documents it (the run itself asks first).
    public func plannedRequests() -> [SyncRequest] {
        let now = ledger.options.clock()
        let dialect = self.dialect
        return ledger.read { state in dueItems(in: state, now: now, limit: .max).map { item in
            dialect.request(item.operation, entryID: item.entryID, entry: state.entries[item.entryID],
                            remoteID: item.remoteID, key: key(for: item, in: state))
        } }
    }

    /// Asks the remote to erase entries too: `DELETE …/{remote id}?erase=true` (the reference server's extension
    /// for `moodledger erase`), or a plain documented `DELETE` to a remote without extensions. A remote without a
    /// delete route cannot remove its copies.
    /// - Returns: per entry that could not be erased there, why (404 counts as erased: the server never had it, or
    ///   has erased it already).
    public func eraseAtRemote(_ ids: [EntryID]) -> [EntryID: String] {
        var dialect = self.dialect
        if dialect.remote.capabilitySource == .unknown {
            // Asked without recording: a refused erasure appends nothing (the next sync records what it learns).
            guard let learned = try? probe(dialect.dialect) else {
                return Dictionary(uniqueKeysWithValues: ids.map { ($0, "the remote did not say what it can do") })
            }
            dialect = SyncDialect(RemoteConfig(url: dialect.remote.url, dialect: dialect.dialect, capabilities: learned, source: .probed))
        }
        guard dialect.remote.has(.delete) else {
            let reason = dialect.dialect == .progress ? "the progress dialect cannot erase"
                : "the remote has no delete route (\(dialect.dialect.rawValue) as documented)"
            return Dictionary(uniqueKeysWithValues: ids.map { ($0, reason) })
        }
        let remoteIDs = ledger.read { state in
            Dictionary(uniqueKeysWithValues: ids.map { ($0, state.outbox.record(OutboxKey(entryID: $0, destination: .backend))?.remoteID) })
        }
        let query = dialect.remote.has(.extensions) ? "?erase=true" : ""
        var failures: [EntryID: String] = [:]
        for id in ids {
            let remoteID = (remoteIDs[id] ?? nil) ?? id.description
            let request = SyncRequest(method: "DELETE", path: "\(dialect.collection)/\(SyncDialect.escape(remoteID))\(query)")
            let credentials = (try? currentCredentials(refresh: false)) ?? SyncCredentials()
            switch transport.perform(request, credentials: credentials) {
            case .response(let status, _, _) where (200..<300).contains(status) || status == 404: break
            case .response(let status, _, let body):
                failures[id] = "HTTP \(status)" + (SyncPolicy.serverMessage(body).map { ": \($0)" } ?? "")
            case .failure(let kind, let message): failures[id] = "\(kind): \(message)"
            }
        }
        return failures
    }

    // MARK: - Push

    struct Due {
        var entryID: EntryID
        var operation: SyncOperation
        var remoteID: String?
        var attempts: Int
        /// The destination's revision of the entry as known here: the base of a conditional send.
        var revision: UInt64 = 0
    }

    /// An item of a batch: what is due, its key, and the entry as it was at the attempt (what is sent).
    typealias Sending = (item: Due, key: String, entry: MoodEntry?)

    /// Pending, unparked `backend` items whose retry time has come and that the remote can carry, in outbox order.
    func dueItems(in state: LedgerState, now: Int64, limit: Int) -> [Due] {
        var due: [Due] = []
        let dialect = self.dialect
        for item in state.outboxItems(destination: .backend) where item.status == "pending" {
            guard let operation = item.operation, configuration.ignoreBackoff || (item.nextAttemptAt ?? .min) <= now,
                  dialect.held(operation, entry: state.entries[item.entryID]) == nil else { continue }
            due.append(Due(entryID: item.entryID, operation: operation, remoteID: item.remoteID, attempts: item.attempts))
            if due.count >= limit { break }
        }
        return due
    }

    /// The `Idempotency-Key`: the previous attempt's key while the entry is unchanged and no attempt succeeded (after
    /// a crash, a timeout or a dropped connection the server may have applied it: resending the same key gets the
    /// first answer back), else `<entry id>.<ledger tag>.<ledger seq>` — new for every version of the entry. The tag
    /// (``keyTag``) keeps two devices of one account apart: each numbers its own events, and the same entry edited
    /// on both at the same seq would otherwise be two different requests under one key, the second refused for good.
    func key(for item: Due, in state: LedgerState) -> String {
        if let record = state.outbox.record(OutboxKey(entryID: item.entryID, destination: .backend)),
           let key = record.idempotencyKey, !record.changedSinceAttempt {
            return key
        }
        return "\(item.entryID).\(keyTag).\(state.seq)"
    }

    private func push(into report: inout SyncReport, once: Bool) throws {
        var passes = 0
        var merges: [EntryID: Int] = [:]
        // `once`: one pass, and another only for what a merge left to send.
        var merged = true
        while passes < configuration.maximumPasses && (!once || passes == 0 || merged) {
            passes += 1
            merged = false
            // The pass's candidates, read once; each batch re-checks its items against the state it appends to.
            let now = ledger.options.clock()
            var candidates = ledger.read { dueItems(in: $0, now: now, limit: .max) }[...]
            if candidates.isEmpty { break }
            while !candidates.isEmpty {
                // Attempts: chosen and appended against the current state, as one batch. Each request is built from
                // the entry as it is here, so a success's version is known exactly (the base of the next merge).
                var batch: [Sending] = []
                _ = try ledger.execute { state, now in
                    batch = []
                    var events: [MoodEvent] = []
                    while let candidate = candidates.first, batch.count < self.configuration.batchSize {
                        candidates.removeFirst()
                        guard let item = self.stillDue(candidate.entryID, in: state, now: now),
                              self.dialect.held(item.operation, entry: state.entries[item.entryID]) == nil else { continue }
                        let key = self.key(for: item, in: state)
                        events.append(.syncAttempted(item.entryID, .backend, item.operation, key: key))
                        batch.append((item, key, state.entries[item.entryID]))
                    }
                    return (events, .none, false)
                }
                if batch.isEmpty { continue }
                let outcomes = send(batch)
                // A merge needs each entry's base: one pass over the log for the batch's stale items.
                let stale = Set(zip(batch, outcomes).compactMap { sending, verdict -> EntryID? in
                    switch verdict {
                    case .stale, .recreated: return sending.item.entryID
                    default: return nil
                    }
                })
                let bases = try ledger.syncBases(of: stale)
                var unauthorized: String?
                var mergedHere = 0
                var conflicts = 0
                _ = try ledger.execute { state, now in
                    var events: [MoodEvent] = []
                    mergedHere = 0
                    conflicts = 0
                    for (sending, verdict) in zip(batch, outcomes) {
                        let id = sending.item.entryID
                        switch verdict {
                        case .stale(let theirs, let revision, let remoteID) where merges[id, default: 0] < self.configuration.maximumMergesPerRun:
                            let merge = Self.merge(id, here: state.entries[id], theirs: theirs, revision: revision,
                                                   remoteID: remoteID, base: bases[id])
                            events.append(.syncMerged(merge))
                            mergedHere += 1
                            if !merge.conflicts.isEmpty { conflicts += 1 }
                        case .recreated(let remoteID, let revision):
                            let here = state.entries[id]
                            events.append(.syncMerged(SyncMerge(entryID: id, remoteID: remoteID, serverRevision: 0,
                                                                baseRevision: bases[id]?.revision ?? 0, base: bases[id]?.entry,
                                                                here: here, theirs: nil, merged: here)))
                            events.append(.syncSucceeded(id, .backend, remoteID: remoteID, revision: revision))
                        default:
                            events.append(self.event(for: sending.item, verdict, in: state, now: now, unauthorized: &unauthorized))
                        }
                    }
                    return (events, .none, false)
                }
                for (sending, verdict) in zip(batch, outcomes) {
                    if case .stale = verdict { merges[sending.item.entryID, default: 0] += 1 }
                    tally(sending.item, verdict, into: &report)
                }
                if mergedHere > 0 { merged = true }
                report.conflicts += conflicts
                report.sent += batch.count
                if let unauthorized {
                    throw SyncError(.unauthorized, "the server refused the credentials (\(unauthorized)); "
                        + "check MOODLEDGER_API_KEY and MOODLEDGER_TOKEN or --credentials FILE")
                }
            }
            // Re-check: changes written during the pass, and merged versions, are due now and go out in the same run.
        }
    }

    /// The merge of an entry with the destination's current version (`Specs/sync.md`, *Merging*): here against the
    /// base, field by field; a deletion here stays a deletion (it reaches the server last); a deletion there is undone
    /// by a change here.
    static func merge(_ id: EntryID, here: MoodEntry?, theirs: MoodEntry?, revision: UInt64, remoteID: String?,
                      base: SyncBase?) -> SyncMerge {
        let merged: MoodEntry?
        if let here, let theirs {
            merged = ThreeWayMerge.merge(base: base?.entry, here: here, theirs: theirs)
        } else {
            merged = here
        }
        return SyncMerge(entryID: id, remoteID: remoteID, serverRevision: revision, baseRevision: base?.revision ?? 0,
                         base: base?.entry, here: here, theirs: theirs, merged: merged)
    }

    /// The item of `id` if it is still pending, unparked and due in `state`.
    func stillDue(_ id: EntryID, in state: LedgerState, now: Int64) -> Due? {
        let record = state.outbox.record(OutboxKey(entryID: id, destination: .backend))
        if let record {
            guard let operation = record.operation, !record.parked,
                  configuration.ignoreBackoff || (record.nextAttemptAt ?? .min) <= now else { return nil }
            return Due(entryID: id, operation: operation, remoteID: record.remoteID, attempts: record.attempts,
                       revision: record.revision)
        }
        guard let entry = state.entries[id], OutboxState.isEligible(entry.source, for: .backend) else { return nil }
        return Due(entryID: id, operation: .create, remoteID: nil, attempts: 0)
    }

    /// The outcome event of one item.
    private func event(for item: Due, _ verdict: SyncVerdict, in state: LedgerState, now: Int64,
                       unauthorized: inout String?) -> MoodEvent {
        let attempts = (state.outbox.record(OutboxKey(entryID: item.entryID, destination: .backend))?.attempts ?? item.attempts + 1)
        switch verdict {
        case .delivered(let remoteID, let revision):
            return .syncSucceeded(item.entryID, .backend, remoteID: remoteID, revision: revision)
        case .retry(let status, let error, let retryAfter):
            if attempts >= SyncPolicy.maximumAttempts {
                return .syncFailed(item.entryID, .backend, SyncFailure(
                    status: status, error: "gave up after \(attempts) attempts: \(error)", retryable: false))
            }
            let next = random.withLock { SyncPolicy.nextAttempt(now: now, attempts: attempts, retryAfter: retryAfter, using: &$0) }
            return .syncFailed(item.entryID, .backend, SyncFailure(status: status, error: error, retryable: true, nextAttemptAt: next))
        case .park(let status, let error):
            return .syncFailed(item.entryID, .backend, SyncFailure(status: status, error: error, retryable: false))
        case .unauthorized(let error):
            unauthorized = error
            // Not the item's fault: retryable now, once the credentials are fixed.
            return .syncFailed(item.entryID, .backend, SyncFailure(status: 401, error: error, retryable: true, nextAttemptAt: now))
        case .stale, .recreated:
            // Merged as often as a run allows and still refused: the server's version moves under us; later.
            let error = "HTTP 412: the entry changed on the server again after \(configuration.maximumMergesPerRun) merges in this run"
            let next = random.withLock { SyncPolicy.nextAttempt(now: now, attempts: attempts, retryAfter: nil, using: &$0) }
            return .syncFailed(item.entryID, .backend, SyncFailure(status: 412, error: error, retryable: true, nextAttemptAt: next))
        }
    }

    private func tally(_ item: Due, _ verdict: SyncVerdict, into report: inout SyncReport) {
        switch verdict {
        case .delivered: report.delivered += 1
        case .retry(_, let error, _):
            report.retrying += 1
            report.failures.append(.init(entryID: item.entryID, error: error, parked: false))
        case .park(_, let error):
            report.parked += 1
            report.failures.append(.init(entryID: item.entryID, error: error, parked: true))
        case .unauthorized(let error):
            report.failures.append(.init(entryID: item.entryID, error: error, parked: false))
        case .stale:
            report.merged += 1
        case .recreated:
            report.delivered += 1
            report.merged += 1
        }
    }

    /// Sends a batch, `concurrency` at a time; each request is built from the entry as it was at its attempt.
    private func send(_ batch: [Sending]) -> [SyncVerdict] {
        let results = Mutex<[SyncVerdict?]>(Array(repeating: nil, count: batch.count))
        let next = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let workers = min(configuration.concurrency, batch.count)
        let group = DispatchGroup()
        for _ in 0..<workers {
            group.enter()
            let thread = Thread { [self] in
                while true {
                    let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard index < batch.count else { break }
                    let verdict: SyncVerdict
                    if stop.load(ordering: .relaxed) {
                        verdict = .retry(status: nil, error: "not sent: the run stopped (credentials refused)", retryAfter: nil)
                    } else {
                        verdict = deliver(batch[index].item, key: batch[index].key, entry: batch[index].entry)
                        if case .unauthorized = verdict { stop.store(true, ordering: .relaxed) }
                    }
                    results.withLock { $0[index] = verdict }
                }
                group.leave()
            }
            thread.start()
        }
        group.wait()
        return results.withLock { $0.map { $0! } }
    }

    /// One item: its request (conditional on the base revision where the remote has revisions), a 401 answered once
    /// with refreshed credentials, a 412 answered by reading the server's version (the merge is appended with the
    /// outcomes), an update the server lacks sent as a create, a create the server already had followed by an update.
    func deliver(_ item: Due, key: String, entry: MoodEntry?) -> SyncVerdict {
        if item.operation != .delete && entry == nil {
            // Deleted before the attempt was made: nothing to send; the outbox already records the delete.
            return .retry(status: nil, error: "not sent: the entry was deleted during the run", retryAfter: nil)
        }
        var verdict = exchange(item.operation, item: item, entry: entry, key: key)
        if case .park(404?, _) = verdict, item.operation == .update, dialect.remote.has(.update) {
            // The remote has the route, so 404 is about the entry: it lacks it (deleted on another device, lost, or
            // never had it). The change here reached the server last: create it again, and say so. (A 405 is about
            // the route: never re-sent as a create.)
            verdict = exchange(.create, item: item, entry: entry, key: key)
            if case .delivered(let remoteID, let revision) = verdict { return .recreated(remoteID: remoteID, revision: revision) }
        }
        if case .retry(412?, _, _) = verdict, item.operation != .create, dialect.remote.has(.revisions) {
            return fetchCurrent(item, fallback: verdict)
        }
        return verdict
    }

    /// After a 412: the server's current version of the entry and its revision (`ETag`), or the 412 to retry later.
    private func fetchCurrent(_ item: Due, fallback: SyncVerdict) -> SyncVerdict {
        let remoteID = item.remoteID ?? item.entryID.description
        let request = SyncRequest(method: "GET", path: dialect.itemPath(remoteID: remoteID))
        guard let credentials = try? currentCredentials(refresh: false) else { return fallback }
        switch transport.perform(request, credentials: credentials) {
        case .response(404, _, _):
            return .stale(theirs: nil, revision: 0, remoteID: remoteID)
        case .response(200, let headers, let body):
            guard let json = try? JSONParser.parse(String(decoding: body, as: UTF8.self)), let data = json["data"],
                  let theirs = try? RemoteEntry.parse(data, id: item.entryID) else {
                return .retry(status: 412, error: "HTTP 412: the server's current version could not be read", retryAfter: nil)
            }
            return .stale(theirs: theirs, revision: SyncPolicy.revision(headers), remoteID: remoteID)
        default:
            return fallback
        }
    }

    private func exchange(_ operation: SyncOperation, item: Due, entry: MoodEntry?, key: String) -> SyncVerdict {
        let request = dialect.request(operation, entryID: item.entryID, entry: entry, remoteID: item.remoteID, key: key,
                                      baseRevision: item.revision)
        let (verdict, alreadyThere) = perform(request, operation: operation, entryID: item.entryID)
        if alreadyThere, case .delivered(let remoteID, _) = verdict, let entry, remoteID == item.entryID.description,
           dialect.dialect != .progress, dialect.remote.has(.update) {
            // 200, not 201, and not a replay: the server already had this id (it lost our later changes, or was
            // restored). Bring its copy up to date.
            let update = dialect.request(.update, entryID: item.entryID, entry: entry, remoteID: remoteID, key: key + ".u")
            return perform(update, operation: .update, entryID: item.entryID).verdict
        }
        return verdict
    }

    /// Sends one request (a 401 once more with re-read credentials); `alreadyThere` for a create answered 200
    /// without `Idempotent-Replayed`.
    private func perform(_ request: SyncRequest, operation: SyncOperation, entryID: EntryID)
        -> (verdict: SyncVerdict, alreadyThere: Bool) {
        var refreshed = false
        while true {
            let credentials: SyncCredentials
            do { credentials = try currentCredentials(refresh: refreshed) } catch {
                return (.unauthorized(error: error.message), false)
            }
            switch transport.perform(request, credentials: credentials) {
            case .failure(let kind, let message):
                return (.retry(status: nil, error: "\(kind): \(message)", retryAfter: nil), false)
            case .response(let status, let headers, let body):
                let verdict = SyncPolicy.classify(operation, status: status, headers: headers, body: body,
                                                  entryID: entryID, now: ledger.options.clock())
                if case .unauthorized = verdict, !refreshed {
                    refreshed = true
                    continue
                }
                let replayed = headers.contains { $0.name.lowercased() == "idempotent-replayed" }
                return (verdict, operation == .create && status == 200 && !replayed)
            }
        }
    }

    func currentCredentials(refresh: Bool) throws(SyncError) -> SyncCredentials {
        if !refresh, let cached = credentials.withLock({ $0 }) { return cached }
        let loaded = try credentialSource()
        credentials.withLock { $0 = loaded }
        return loaded
    }

    private func summarize(into report: inout SyncReport) {
        let dialect = self.dialect
        let (items, held) = ledger.read { state in
            let items = state.outboxItems(destination: .backend)
            let held = Set(items.filter { item in
                item.status == "pending" && item.operation.map { dialect.held($0, entry: state.entries[item.entryID]) != nil } == true
            }.map(\.entryID))
            return (items, held)
        }
        report.heldAfter = held.count
        for item in items where !held.contains(item.entryID) {
            if item.status == "pending" {
                report.pendingAfter += 1
                if let next = item.nextAttemptAt { report.nextAttemptAt = min(report.nextAttemptAt ?? next, next) }
            } else if item.status == "failed" {
                report.parkedAfter += 1
            }
        }
    }
}
