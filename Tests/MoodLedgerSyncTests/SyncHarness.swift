import Foundation
import MoodLedger
import MoodLedgerSync
import Platform
import Synchronization
import TestSupport

@testable import MoodLedgerServer

// What the sync tests hold `Specs/sync.md` to. Against seed-strict backends (`SeedBackend`: only a seed's routes,
// every body validated against the per-seed JSON schemas in `Tests/Seed/schemas`; no feed, no revisions, no
// capabilities header): per dialect, no request outside the documented shapes, what the backend stored equals the
// entry translated, a second run sends nothing, nothing is duplicated, held items are listed, a 405 on an update never
// becomes a create. Against the real server in-process and `FaultProxy` (relays, answers itself, delays past the
// client's timeout, or lets the server commit and drops the connection): two devices converge; a lost answer is
// retried with the same key and leaves one entry; SIGKILL of the built binary between attempt and outcome; 500s with
// the recorded jitter equal under replay; timeouts; 429 with `Retry-After`; 401; a poison item parked while others
// go through; a server restored from an old copy; clocks skewed a day; conflicts; a seeded property test of edits on
// two devices with faults on a third of the requests; and a sync bug reproduced from the log with time travel.

/// The real `moodledger serve` in-process on an ephemeral loopback port, with user `alice`.
final class SyncServer: @unchecked Sendable {
    let dir: String
    let running: InProcessServer
    var backend: MoodServer { running.backend }
    var server: HTTPServer { running.server }
    let key: String

    /// Starts a server over `dir`, adding `alice` unless the directory already has her; with `defaultLimits` the
    /// server's own rate limits apply (otherwise they are off).
    init(dir: String, port: UInt16 = 0, defaultLimits: Bool = false) throws {
        self.dir = dir
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var credentials = try Credentials.load(directory: dir, create: true)
        let keyFile = dir + "/alice.key"
        if let existing = try? String(contentsOfFile: keyFile, encoding: .utf8) {
            key = existing
        } else {
            key = try credentials.addUser("alice")
            try credentials.save(directory: dir)
            try key.write(toFile: keyFile, atomically: true, encoding: .utf8)
        }
        var configuration = MoodServer.Configuration(dataDirectory: dir)
        configuration.http.port = port
        configuration.http.workers = 16
        if !defaultLimits {
            configuration.writesPerHour = 0
            configuration.readsPerHour = 0
            configuration.erasuresPerHour = 0
        }
        configuration.log = { _ in }
        running = try InProcessServer(configuration)
    }

    var port: UInt16 { server.port }
    var url: String { "http://127.0.0.1:\(port)" }

    /// Valid credentials for alice.
    var credentials: SyncCredentials {
        SyncCredentials(
            apiKey: key,
            token: backend.credentials.token(for: "alice", now: Int64(Date().timeIntervalSince1970), ttl: 3600)!)
    }

    private let stopped = Mutex(false)

    /// Stops the server and closes its ledgers (idempotent).
    func stop() {
        guard
            stopped.withLock({
                let was = $0; $0 = true; return !was
            })
        else { return }
        running.stop()
    }

    /// The server's entries for alice, read from her ledger on disk (the server must be stopped, or read-only
    /// access used).
    func entries() throws -> [MoodEntry] {
        var options = Ledger.Options()
        options.readOnly = true
        let ledger = try Ledger.open(at: MoodServer.userDirectory("alice", in: dir), options: options)
        defer { ledger.close() }
        return ledger.state.entries.all
    }
}

/// A device: its own ledger with a settable clock, configured for a remote.
final class Device: @unchecked Sendable {
    let ledger: Ledger
    final class Offset: Sendable { let value = Atomic<Int64>(0) }
    let clockOffset = Offset()
    let path: String

    /// A device whose remote is believed to have `capabilities` (`nil`: not known, the first sync probes). The
    /// reference server has them all; setting them keeps the probe out of tests that count requests, and the default
    /// leaves out `batch` so that each entry is a request of its own (the batch tests ask for it).
    init(
        _ path: String, remote: String, dialect: RemoteDialect = .moodAPI, skewMilliseconds: Int64 = 0,
        capabilities: RemoteCapabilities? = RemoteCapabilities.all.subtracting(.batch)
    ) throws {
        self.path = path
        var options = Ledger.Options()
        options.createIfMissing = true
        options.durability = .batched
        let offset = clockOffset
        offset.value.store(skewMilliseconds, ordering: .relaxed)
        options.clock = { Int64(Date().timeIntervalSince1970 * 1000) + offset.value.load(ordering: .relaxed) }
        ledger = try Ledger.open(at: path, options: options)
        let config = RemoteConfig(
            url: remote, dialect: dialect, capabilities: capabilities ?? [],
            source: capabilities == nil ? .unknown : .set)
        _ = try ledger.execute { state, _ in
            (state.outbox.progress(.backend).remote == config ? [] : [.remoteConfigured(config)], .none, false)
        }
    }

    /// Runs a sync with these credentials through `transport` (plain HTTP to the configured URL by default).
    @discardableResult
    func sync(
        _ credentials: SyncCredentials, transport: (any SyncTransport)? = nil, once: Bool = false,
        seed: UInt64 = 1, concurrency: Int = 8, now: Bool = false, bootClock: (@Sendable () -> BootClock?)? = nil
    ) throws -> SyncReport {
        var configuration = SyncEngine.Configuration()
        configuration.seed = seed
        configuration.concurrency = concurrency
        configuration.ignoreBackoff = now
        // The device's clock is the test's: the boot clock follows it unless the test gives its own.
        let ledger = self.ledger
        configuration.bootClock = bootClock ?? { BootClock(boot: "device", milliseconds: ledger.options.clock()) }
        let engine = try SyncEngine(
            ledger: ledger, transport: transport, credentials: { credentials },
            configuration: configuration)
        return try engine.run(once: once)
    }

    /// The open conflicts a read-only open (from the snapshot, if any) reports.
    func replayedConflicts() throws -> [OpenConflict] {
        var options = Ledger.Options()
        options.readOnly = true
        let reader = try Ledger.open(at: path, options: options)
        defer { reader.close() }
        return try reader.conflicts()
    }

    func advance(_ ms: Int64) { clockOffset.value.add(ms, ordering: .relaxed) }

    /// The state a full replay of the device's log gives (a read-only open beside the writer; no snapshots yet).
    func replayed() throws -> LedgerState {
        var options = Ledger.Options()
        options.readOnly = true
        let reader = try Ledger.open(at: path, options: options)
        defer { reader.close() }
        return reader.state
    }

    @discardableResult
    func log(_ valence: Double, label: String = "happy", notes: String? = nil) throws -> EntryID {
        try ledger.log(MoodDraft(valence: valence, labels: [label], notes: notes)).entry.id
    }
}

/// What makes two copies of an entry the same entry (timestamps and origin aside).
struct Content: Equatable, CustomStringConvertible {
    var id: EntryID
    var loggedAt: Int64
    var offset: Int
    var kind: MoodKind
    var valence: Double?
    var score: Int?
    var labels: [String]
    var associations: [String]
    var tags: [String]
    var notes: String?

    init(_ entry: MoodEntry) {
        id = entry.id
        loggedAt = entry.loggedAt.milliseconds
        offset = entry.loggedAt.utcOffsetMinutes
        kind = entry.kind
        valence = entry.valence
        score = entry.enteredScore
        labels = entry.labels.map(\.wireName)
        associations = entry.associations.map(\.wireName)
        tags = entry.tags
        notes = entry.notes
    }

    var description: String {
        "\(id) \(valence.map { String($0) } ?? "-")\(score.map { " typed \($0)" } ?? "") \(labels) \(tags) \(notes ?? "")"
    }

    static func of(_ entries: [MoodEntry]) -> [Content] { entries.map(Content.init).sorted { $0.id < $1.id } }
}

/// A transport around another that injects faults per request.
final class FaultyTransport: SyncTransport, @unchecked Sendable {
    enum Fault {
        /// Answer without reaching the server.
        case answer(Int, [(name: String, value: String)], String)
        /// Fail before sending (the server never sees it).
        case networkBefore
        /// Send, let the server commit, then lose the answer (a dropped connection).
        case dropAfter
    }

    let inner: any SyncTransport
    let decide: @Sendable (Int, SyncRequest) -> Fault?
    private let counter = Atomic<Int>(0)
    let log = Mutex<[(SyncRequest, Int?, Bool)]>([])  // request, status seen, replayed

    init(_ inner: any SyncTransport, decide: @escaping @Sendable (Int, SyncRequest) -> Fault?) {
        self.inner = inner
        self.decide = decide
    }

    func perform(_ request: SyncRequest, credentials: SyncCredentials) -> SyncExchange {
        let index = counter.wrappingAdd(1, ordering: .relaxed).oldValue
        switch decide(index, request) {
        case .answer(let status, let headers, let body)?:
            log.withLock { $0.append((request, status, false)) }
            return .response(status: status, headers: headers, body: Array(body.utf8))
        case .networkBefore?:
            log.withLock { $0.append((request, nil, false)) }
            return .failure(kind: "network", message: "injected: connection refused")
        case .dropAfter?:
            let exchange = inner.perform(request, credentials: credentials)
            if case .response(let status, _, _) = exchange { log.withLock { $0.append((request, status, false)) } }
            return .failure(kind: "network", message: "injected: the connection dropped before the response")
        case nil:
            let exchange = inner.perform(request, credentials: credentials)
            if case .response(let status, let headers, _) = exchange {
                let replayed = headers.contains { $0.name.lowercased() == "idempotent-replayed" }
                log.withLock { $0.append((request, status, replayed)) }
            }
            return exchange
        }
    }

    var requests: [(SyncRequest, Int?, Bool)] { log.withLock { $0 } }
}

extension Ledger {
    /// The events of one type, decoded.
    func events(ofType type: EventType) throws -> [RecordedEvent] { try events(filter: EventFilter(type: type)) }
}

/// A server and two devices of its account that both hold one entry: logged on `a`, synced, pulled by `b`.
struct SharedEntry {
    /// Held for as long as the devices and the server use it.
    let dir: TemporaryDirectory
    let server: SyncServer
    let a: Device
    let b: Device
    let id: EntryID

    init(_ dir: TemporaryDirectory) throws {
        self.dir = dir
        server = try SyncServer(dir: dir.sub("server"))
        a = try Device(dir.sub("a"), remote: server.url)
        b = try Device(dir.sub("b"), remote: server.url)
        id = try a.log(0.1)
        try a.sync(server.credentials)
        try b.sync(server.credentials)
    }
}
