import Dispatch
import Foundation
import MoodLedger
import Platform
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
        /// Sends of one entry in one run at most, whatever ``ignoreBackoff`` says: the first, and one after each merge.
        /// An entry whose send failed is not sent again in the same run. Default 4.
        public var maximumAttemptsPerRun = 4
        /// A CA certificate (PEM or DER) trusted for an `https` remote besides the system's store (Apple platforms;
        /// `--ca-file`). Default `nil`.
        public var caFile: String?
        /// Items in one request to a remote with the batch route (`batch`). Default 64: a batch of attempts goes out
        /// as four requests, on as many connections.
        public var batchRequestItems = 64
        /// The time since boot, with the boot's identity: what a streak of failures is measured by, so that a clock
        /// jumping hours does not park an item within minutes (`Specs/sync.md`, *Backoff*). Default: the system's
        /// (``SystemIO/bootClock()``); tests give their own.
        public var bootClock: @Sendable () -> BootClock? = { SystemIO.bootClock() }

        public init() {}
    }

    let ledger: Ledger
    let transport: any SyncTransport
    let credentialSource: CredentialProvider
    /// Set when the task awaiting ``run(once:)-swift.method`` is cancelled: no new batch of attempts is begun and no
    /// further page is pulled; what is in flight is answered and recorded first.
    let cancelRequested = Atomic<Bool>(false)
    /// How many of this engine's async runs joined a run of the same ledger already under way.
    package let joinedRuns = Atomic<Int>(0)
    let configuration: Configuration
    /// The remote's codec: replaced once when a run learns the remote's capabilities, before any request is sent.
    let codec: Mutex<SyncDialect>
    var dialect: SyncDialect { codec.withLock { $0 } }
    let random: Mutex<SplitMix64>
    /// Requests in flight at once, at most `concurrency`, across a run's batches.
    let slots: Slots
    /// Where this engine's runs and their requests' tasks run (``RunExecutor``).
    let executor = RunExecutor()
    private let credentials: Mutex<SyncCredentials?> = Mutex(nil)
    /// Whether this engine's remote has answered over a trusted connection (``checkTrust()``).
    let trustChecked = Mutex(false)
    /// The capabilities the remote's answers named in this run, if any did (``adoptHeardCapabilities()``).
    let heard = Mutex<RemoteCapabilities?>(nil)
    /// The accounts the remote's answers named since the ledger last recorded one (``takeHeardAccounts()``).
    let heardAccounts = Mutex(SyncPlanner.HeardAccounts())
    /// This ledger's part of its keys: the first 8 bytes of the log's random file id, in hex
    /// (``SyncPlanner/key(for:in:atSeq:)``).
    let keyTag: String

    /// The decisions, for the remote as this run knows it now.
    var planner: SyncPlanner {
        SyncPlanner(
            dialect: dialect, keyTag: keyTag, ignoreBackoff: configuration.ignoreBackoff,
            maximumMergesPerRun: configuration.maximumMergesPerRun)
    }

    /// Where the credentials come from: a synchronous source (the command line's environment or file), or an app's
    /// asynchronous one (a keychain read, a token refresh).
    enum CredentialProvider: Sendable {
        case now(@Sendable () throws(SyncError) -> SyncCredentials)
        case later(@Sendable () async throws -> SyncCredentials)
    }

    /// Creates an engine for the ledger's configured backend (``Ledger/setRemote(_:dialect:)``), with an app's
    /// credentials provider.
    /// - Parameters:
    ///   - ledger: an open, writable ledger.
    ///   - transport: how requests travel (``HTTPTransport`` for the configured URL when `nil`).
    ///   - credentials: gives the credentials, asynchronously if it must (a keychain read, a token refresh); called
    ///     before a run's first request and again once after a 401. What it throws stops the run as a
    ///     ``SyncError`` `credentials` carrying the error.
    ///   - configuration: tuning.
    /// - Throws: ``SyncError`` `config` when no backend is configured.
    public convenience init(
        ledger: Ledger, transport: (any SyncTransport)? = nil,
        credentials: @escaping @Sendable () async throws -> SyncCredentials,
        configuration: Configuration = Configuration()
    ) throws(SyncError) {
        try self.init(
            ledger: ledger, transport: transport, provider: .later(credentials), configuration: configuration)
    }

    /// Creates an engine for the ledger's configured backend, with a synchronous credentials source.
    /// - Parameters:
    ///   - ledger: an open, writable ledger.
    ///   - transport: how requests travel (``HTTPTransport`` for the configured URL when `nil`).
    ///   - credentials: reads the credentials (called again once after a 401).
    ///   - configuration: tuning.
    /// - Throws: ``SyncError`` `config` when no backend is configured.
    public convenience init(
        ledger: Ledger, transport: (any SyncTransport)? = nil,
        credentials: @escaping @Sendable () throws(SyncError) -> SyncCredentials,
        configuration: Configuration = Configuration()
    ) throws(SyncError) {
        try self.init(ledger: ledger, transport: transport, provider: .now(credentials), configuration: configuration)
    }

    init(
        ledger: Ledger, transport: (any SyncTransport)?, provider credentials: CredentialProvider,
        configuration: Configuration
    ) throws(SyncError) {
        guard let remote = ledger.read({ $0.outbox.progress(.backend).remote }) else {
            throw SyncError(.config, "no backend is configured")
        }
        self.ledger = ledger
        self.codec = Mutex(SyncDialect(remote))
        if let transport {
            self.transport = transport
        } else {
            let url: RemoteURL
            do { url = try RemoteURL(remote.url) } catch {
                throw SyncError(.config, "the configured URL is not usable: \(error.rule)")
            }
            if url.secure {
                self.transport = try URLSessionTransport(url: url, caFile: configuration.caFile)
            } else {
                guard configuration.caFile == nil else {
                    throw SyncError(.config, "--ca-file is for an https remote; this one is \(url)")
                }
                #if canImport(Darwin)
                    // On Apple platforms every remote goes through the system's URLSession: App Transport Security
                    // applies (plain HTTP needs the app's own exception), cellular and VPN On Demand come up, and
                    // connect timeouts hold. The socket client is the Linux transport.
                    self.transport = try URLSessionTransport(url: url)
                #else
                    self.transport = HTTPTransport(url: url)
                #endif
            }
        }
        self.credentialSource = credentials
        self.configuration = configuration
        let digits = Array("0123456789abcdef".utf8)
        keyTag = String(
            decoding: ledger.eventLog.fileID.prefix(8).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] },
            as: UTF8.self)
        var system = SystemRandomNumberGenerator()
        self.random = Mutex(SplitMix64(seed: configuration.seed ?? system.next()))
        slots = Slots(max(1, configuration.concurrency))
    }

    /// One run, blocking the calling thread until it is done (the command line's `sync`): what
    /// ``run(once:)-swift.method`` does, on an executor of the run's own while this thread waits. An app awaits the
    /// asynchronous form instead.
    /// - Parameter once: one push pass and one pull, without re-checking the outbox.
    /// - Returns: what the run did.
    /// - Throws: ``SyncError`` `unauthorized` when the credentials are refused twice (the item's failure is
    ///   recorded first); ``EventLogError`` when the log cannot be written.
    public func run(once: Bool = false) throws -> SyncReport {
        try RunExecutor.blocking(on: executor) { try await self.runSteps(once: once) }
    }

    /// One run: push, pull, push what the pull re-queued.
    func runSteps(once: Bool) async throws -> SyncReport {
        var report = SyncReport()
        var book = RunBook()
        try await learnCapabilities()
        try await checkTrust()
        try await push(into: &report, once: once, book: &book)
        try stopIfCancelled()
        try await pull(into: &report, book: &book)
        try stopIfCancelled()
        if report.requeued > 0 || !once { try await push(into: &report, once: once, book: &book) }
        try stopIfCancelled()
        try adoptHeardCapabilities()
        summarize(into: &report)
        return report
    }

    /// The requests a run would make now, without sending anything or appending anything (`--dry-run`). A remote
    /// whose capabilities are not known yet is planned for as its seed documents it (the run itself asks first).
    ///
    /// The keys are the ones the run would send: a run that first asks the remote what it can do appends that answer
    /// (one event) before its attempts, and each batch's keys name the seq its attempts are appended at — after the
    /// previous batch's attempts and the outcomes of the one before (one event each, as when every answer is a plain
    /// success or failure).
    public func plannedRequests() -> [SyncRequest] {
        let now = ledger.options.clock()
        let planner = self.planner
        let dialect = planner.dialect
        let batchSize = max(1, configuration.batchSize)
        return ledger.read { state in
            let due = planner.dueItems(in: state, now: now, limit: .max)
            var seq = state.seq + (dialect.remote.capabilitySource == .unknown ? 1 : 0)
            var previousCount = 0
            var requests: [SyncRequest] = []
            for start in stride(from: 0, to: due.count, by: batchSize) {
                let batch = due[start..<min(due.count, start + batchSize)]
                for item in batch {
                    requests.append(
                        dialect.request(
                            item.operation, entryID: item.entryID, entry: state.entries[item.entryID],
                            remoteID: item.remoteID, key: planner.key(for: item, in: state, atSeq: seq),
                            baseRevision: item.revision))
                }
                seq += UInt64(batch.count + previousCount)
                previousCount = batch.count
            }
            return requests
        }
    }

    /// Asks the remote to erase entries too: `DELETE …/{remote id}?erase=true` (the reference server's extension
    /// for `moodledger erase`), or a plain documented `DELETE` to a remote without extensions. A remote without a
    /// delete route cannot remove its copies.
    /// - Returns: per entry that could not be erased there, why (404 counts as erased: the server never had it, or
    ///   has erased it already).
    public func eraseAtRemote(_ ids: [EntryID]) -> [EntryID: String] {
        (try? RunExecutor.blocking(on: executor) { await self.eraseAtRemote(ids) }) ?? [:]
    }

    /// Asks the remote to erase entries too, as ``eraseAtRemote(_:)-(([EntryID]))`` does, awaiting its requests.
    /// - Returns: per entry that could not be erased there, why.
    public func eraseAtRemote(_ ids: [EntryID]) async -> [EntryID: String] {
        var dialect = self.dialect
        if dialect.remote.capabilitySource == .unknown {
            // Asked without recording: a refused erasure appends nothing (the next sync records what it learns).
            guard let learned = try? await probe(dialect.dialect) else {
                return Dictionary(uniqueKeysWithValues: ids.map { ($0, "the remote did not say what it can do") })
            }
            dialect = SyncDialect(
                RemoteConfig(url: dialect.remote.url, dialect: dialect.dialect, capabilities: learned, source: .probed))
        }
        guard dialect.remote.has(.delete) else {
            let reason =
                dialect.dialect == .progress
                ? "the progress dialect cannot erase"
                : "the remote has no delete route (\(dialect.dialect.rawValue) as documented)"
            return Dictionary(uniqueKeysWithValues: ids.map { ($0, reason) })
        }
        let remoteIDs = ledger.read { state in
            Dictionary(
                uniqueKeysWithValues: ids.map {
                    ($0, state.outbox.record(OutboxKey(entryID: $0, destination: .backend))?.remoteID)
                })
        }
        let query = dialect.remote.has(.extensions) ? "?erase=true" : ""
        var failures: [EntryID: String] = [:]
        for id in ids {
            let remoteID = (remoteIDs[id] ?? nil) ?? id.description
            let request = SyncRequest(
                method: "DELETE", path: "\(dialect.collection)/\(SyncDialect.escape(remoteID))\(query)")
            let credentials = (try? await currentCredentials(refresh: false)) ?? SyncCredentials()
            switch await ask(request, credentials: credentials) {
            case .response(let status, _, _) where (200..<300).contains(status) || status == 404: break
            case .response(let status, _, let body):
                failures[id] = "HTTP \(status)" + (SyncPolicy.serverMessage(body).map { ": \($0)" } ?? "")
            case .failure(let kind, let message): failures[id] = "\(kind): \(message)"
            }
        }
        return failures
    }

    // MARK: - Push

    typealias Due = SyncPlanner.Due
    typealias Sending = SyncPlanner.Sending

    /// One item: its request (conditional on the base revision where the remote has revisions), a 401 answered once
    /// with refreshed credentials, a 412 answered by reading the server's version (the merge is appended with the
    /// outcomes), an update the server lacks sent as a create, a create the server already had followed by an update.
    /// `answered`: the first exchange's answer when it came in a batch (``deliverBatch(_:)``); the follow-ups (a
    /// create after a 404, a read after a 412, an update after a create the server had) go one by one.
    func deliver(
        _ item: Due, key: String, entry: MoodEntry?, answered: SyncPlanner.Answer? = nil
    ) async -> SyncVerdict {
        if item.operation == .delete, item.remoteID == nil { return await deleteUnacknowledged(item, key: key) }
        if item.operation != .delete && entry == nil {
            // Deleted before the attempt was made: nothing to send; the outbox already records the delete.
            return .retry(status: nil, error: "not sent: the entry was deleted during the run", retryAfter: nil)
        }
        if answered == nil, let entry, let found = await findLostCreate(item, entry: entry, key: key) { return found }
        var verdict = await exchange(item.operation, item: item, entry: entry, key: key, answered: answered)
        if case .park(404?, _) = verdict, item.operation == .update, dialect.remote.has(.update) {
            // The remote has the route, so 404 is about the entry: it lacks it (deleted on another device, lost, or
            // never had it). The change here reached the server last: create it again, and say so. (A 405 is about
            // the route: never re-sent as a create.) Unless the server, asked, still holds the record: then the 404
            // was not about it (another request's answer), and a second record is never made.
            if let doubt = await doubtOfMissing(item) { return doubt }
            verdict = await exchange(.create, item: item, entry: entry, key: key)
            if case .delivered(let remoteID, let revision) = verdict {
                return .recreated(remoteID: remoteID, revision: revision)
            }
        }
        if case .retry(412?, _, _) = verdict, item.operation != .create, dialect.remote.has(.revisions) {
            return await fetchCurrent(item, fallback: verdict)
        }
        return verdict
    }

    /// After an update's 404: a read of the record it was sent to. `nil` when the record is confirmed missing (404) or
    /// the remote has no such read (405, 501): the entry is created again. Otherwise a retryable failure: the record
    /// is there (the 404 was another request's answer), or whether it is could not be told.
    private func doubtOfMissing(_ item: Due) async -> SyncVerdict? {
        guard let remoteID = item.remoteID else { return nil }
        let request = SyncRequest(
            method: "GET", path: dialect.itemPath(remoteID: remoteID),
            maximumResponseBytes: SyncLimits.entryAnswerBytes)
        let credentials: SyncCredentials
        do { credentials = try await currentCredentials(refresh: false) } catch {
            return .unauthorized(error: error.message)
        }
        switch await ask(request, credentials: credentials) {
        case .response(404, _, _), .response(405, _, _), .response(501, _, _):
            return nil
        case .response(200, _, let body)
        where (try? JSONParser.parse(String(decoding: body, as: UTF8.self)))?["data"]?["id"]?.stringValue == remoteID:
            return .retry(
                status: 404,
                error: "HTTP 404 to the update, yet the server holds its record: retried, not created again",
                retryAfter: nil)
        case .response(let status, _, _):
            return .retry(
                status: 404,
                error: "HTTP 404 to the update; whether the record is gone could not be told (HTTP \(status)): retried",
                retryAfter: nil)
        case .failure(let kind, let message):
            return .retry(
                status: 404,
                error: "HTTP 404 to the update; whether the record is gone could not be told (\(kind): \(message))",
                retryAfter: nil)
        }
    }

    /// After a 412: the server's current version of the entry and its revision (`ETag`), or the 412 to retry later.
    private func fetchCurrent(_ item: Due, fallback: SyncVerdict) async -> SyncVerdict {
        let remoteID = item.remoteID ?? item.entryID.description
        // The reference server's full read (instants to the millisecond, typed_score): the seed routes answer in
        // whole seconds and without the typed flag, which a merge would take for changes.
        let path =
            dialect.remote.has(.extensions)
            ? "/api/v1/mood/\(SyncDialect.escape(remoteID))?detail=full" : dialect.itemPath(remoteID: remoteID)
        let request = SyncRequest(method: "GET", path: path)
        guard let credentials = try? await currentCredentials(refresh: false) else { return fallback }
        switch await ask(request, credentials: credentials) {
        case .response(404, _, _):
            return .stale(theirs: nil, revision: 0, remoteID: remoteID)
        case .response(200, let headers, let body):
            guard let json = try? JSONParser.parse(String(decoding: body, as: UTF8.self)), let data = json["data"],
                let theirs = try? RemoteEntry.parse(data, id: item.entryID)
            else {
                return .retry(
                    status: 412, error: "HTTP 412: the server's current version could not be read", retryAfter: nil)
            }
            return .stale(theirs: theirs, revision: SyncPolicy.revision(headers), remoteID: remoteID)
        default:
            return fallback
        }
    }

    func exchange(
        _ operation: SyncOperation, item: Due, entry: MoodEntry?, key: String,
        answered: SyncPlanner.Answer? = nil
    ) async -> SyncVerdict {
        let request = planner.request(for: operation, item: item, entry: entry, key: key)
        let answer: SyncPlanner.Answer
        if let answered {
            answer = answered
        } else {
            answer = await perform(request, operation: operation, entryID: item.entryID)
        }
        let (verdict, alreadyThere) = planner.attributed(
            answer.verdict, alreadyThere: answer.alreadyThere, linked: answer.linked, operation: operation, item: item)
        // A create linked by its source key is taken as it is: the server's record is the same source record (a
        // HealthKit sample, read-only there), under the server's id.
        if alreadyThere, case .delivered(let remoteID, _) = verdict, let entry, remoteID == item.entryID.description,
            dialect.dialect != .progress, dialect.remote.has(.update)
        {
            // 200, not 201, and not a replay: the server already had this id (it lost our later changes, or was
            // restored). Bring its copy up to date.
            let update = dialect.request(
                .update, entryID: item.entryID, entry: entry, remoteID: remoteID, key: key + ".u")
            var updated = item
            updated.remoteID = remoteID
            let answer = await perform(update, operation: .update, entryID: item.entryID)
            return planner.attributed(answer.verdict, alreadyThere: false, operation: .update, item: updated).verdict
        }
        return verdict
    }

    /// Sends one request (a 401 once more with re-read credentials); `alreadyThere` for a create answered 200
    /// without `Idempotent-Replayed`.
    func perform(
        _ request: SyncRequest, operation: SyncOperation, entryID: EntryID
    ) async -> SyncPlanner.Answer {
        await send(request, operation: operation, entryID: entryID).answer
    }

    /// A response as the transport gave it.
    typealias Response = (status: Int, headers: [(name: String, value: String)], body: [UInt8])

    /// Sends `request`, once more with re-read credentials when the answer is a 401: the answer as the planner judges
    /// it (for `operation` on `entryID`), and the answer itself when there was one.
    func send(
        _ request: SyncRequest, operation: SyncOperation, entryID: EntryID
    ) async -> (answer: SyncPlanner.Answer, response: Response?) {
        var refreshed = false
        while true {
            let credentials: SyncCredentials
            do { credentials = try await currentCredentials(refresh: refreshed) } catch {
                return ((.unauthorized(error: error.message), false, false), nil)
            }
            switch await ask(request, credentials: credentials) {
            case .failure(let kind, let message):
                return ((.retry(status: nil, error: "\(kind): \(message)", retryAfter: nil), false, false), nil)
            case .response(let status, let headers, let body):
                let answer = planner.judge(
                    request, operation: operation, entryID: entryID, status: status, headers: headers, body: body,
                    now: ledger.options.clock())
                if case .unauthorized = answer.verdict, !refreshed {
                    refreshed = true
                    continue
                }
                return (answer, (status, headers, body))
            }
        }
    }

    func currentCredentials(refresh: Bool) async throws(SyncError) -> SyncCredentials {
        if !refresh, let cached = credentials.withLock({ $0 }) { return cached }
        // Whatever the provider is (the environment, a file, an app's keychain), a value that could end a header line
        // is refused before any request carries it.
        let given: SyncCredentials
        switch credentialSource {
        case .now(let source): given = try source()
        case .later(let provider): given = try Self.credentials(from: await Self.result(of: provider))
        }
        let loaded = try given.checkedForHeaders(names: ("the API key", "the token"))
        credentials.withLock { $0 = loaded }
        return loaded
    }

    /// The provider's answer, its error wrapped as a ``SyncError`` (`credentials`) unless it is one.
    static func credentials(from result: Result<SyncCredentials, any Error>) throws(SyncError) -> SyncCredentials {
        switch result {
        case .success(let credentials): return credentials
        case .failure(let error as SyncError): throw error
        case .failure(let error):
            let text = (error as? any LocalizedError)?.errorDescription ?? "\(type(of: error))"
            throw SyncError(.credentials, "the credentials provider failed: \(text)", underlying: error)
        }
    }

    private static func result(
        of provider: @Sendable () async throws -> SyncCredentials
    ) async -> Result<SyncCredentials, any Error> {
        do { return .success(try await provider()) } catch { return .failure(error) }
    }

    private func summarize(into report: inout SyncReport) {
        let dialect = self.dialect
        let (items, held) = ledger.read { state in
            let items = state.outboxItems(destination: .backend)
            let held = Set(
                items.filter { item in
                    item.status == "pending"
                        && item.operation.map { dialect.held($0, entry: state.entries[item.entryID]) != nil } == true
                }.map(\.entryID))
            return (items, held)
        }
        report.heldAfter = held.count
        for item in items where !held.contains(item.entryID) {
            if item.status == "pending" {
                report.pendingAfter += 1
                if let next = SyncPolicy.retryTime(item.nextAttemptAt, now: ledger.options.clock()) {
                    report.nextAttemptAt = min(report.nextAttemptAt ?? next, next)
                }
            } else if item.status == "failed" {
                report.parkedAfter += 1
            }
        }
    }
}
