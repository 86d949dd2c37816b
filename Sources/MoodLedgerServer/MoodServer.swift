import EventLog
import Foundation
import MoodLedger
import Platform
import Synchronization

/// The reference backend: the seed API over one MoodLedger ledger per user (`Specs/server.md`).
///
/// Each user's data is `DIR/users/<user>/`, an ordinary ledger, so the server has the ledger's audit, time travel
/// and crash safety; a server revision is the user's ledger sequence number. Writes are acknowledged only once
/// durable, and concurrent writes to one ledger share their `fdatasync` (group commit): a write is validated and
/// appended on the event loop, and a sync thread answers the whole group once its `fdatasync` returns.
public final class MoodServer: Sendable {
    /// How the server behaves; every property documents its default.
    public struct Configuration: Sendable {
        /// The data directory (`users/`, `accounts/`). Created 0700 when missing. Unused when ``store`` is set.
        public var dataDirectory: String
        /// PostgreSQL as the store of every user's events and the accounts, instead of the data directory
        /// (`Specs/server.md`, *PostgreSQL*). Default `nil`: the data directory.
        public var store: PostgresStore?
        /// Sockets, timeouts and limits of the HTTP layer.
        public var http = HTTPServer.Configuration()
        /// The sustained write rate: entries per user per hour the write budget refills at (a batch costs its items);
        /// 0 = unlimited. Default 100 (the seed's 100 writes an hour).
        public var writesPerHour = 100
        /// The write budget's burst: entries one user may write at once, so a first sync of a whole history goes
        /// through in one run. Default 10,000.
        public var writeBurst = 10_000
        /// GET requests per user per hour; 0 = unlimited. Default 500 (the seed's).
        public var readsPerHour = 500
        /// `?erase=true` requests per user per hour (each rewrites the user's log); 0 = unlimited. Default 20.
        public var erasuresPerHour = 20
        /// The clock (milliseconds since 1970) for tokens, rate limits and the ledgers. Default: the system clock.
        public var clock: @Sendable () -> Int64 = { SystemIO().nowMicroseconds() / 1000 }
        /// Threads that run group commits (one ledger's syncs at a time each; they never run handlers). Default 4.
        public var syncThreads = 4
        /// Most user ledgers open at once (two descriptors each); the least recently used idle one is closed to open
        /// another. Default `nil`: 1,024, fewer when `RLIMIT_NOFILE` leaves less room beside the connections.
        public var maxOpenLedgers: Int?
        /// The largest log (bytes) a list for a user whose ledger is not open is read from by a read-only open for that
        /// request alone, instead of opening the ledger into the pool. Default 128 KiB (about 1,300 events, replayed in
        /// well under a millisecond); 0: never.
        public var readOnlyListBytes: Int64 = 128 * 1024
        /// Credential pairs remembered as checked (until their token expires), so a returning client pays no MAC and no
        /// key hash; all are forgotten when this many are held, or when an account changes. Default 131,072: more
        /// than the users one machine serves (`Specs/benchmark.md`, *Many accounts*), about 0.35 KB each.
        public var rememberedSignIns = 131_072
        /// The ledgers' file-system calls. Default: the system's (tests inject faults here).
        public var io: any PlatformIO = SystemIO()
        /// Where operator messages go. Default: standard error, written with `write(2)`: a line that cannot be
        /// written (a closed pipe, a full disk, a closed descriptor) is dropped and counted
        /// (``StandardStream/failedWrites``), and the server goes on.
        public var log: @Sendable (String) -> Void = { StandardStream.error.write("moodledger serve: " + $0 + "\n") }

        public init(dataDirectory: String) { self.dataDirectory = dataDirectory }
    }

    public let configuration: Configuration
    /// The accounts as last replayed from the accounts log, and which log that was and how long (one `stat`): a log
    /// only grows, so a new size or file means a change.
    private let accounts: PlainLock<(credentials: Credentials, file: FileStatus?)>
    /// With PostgreSQL: the accounts as its log's rows through `seq` leave them.
    private let databaseAccounts: PlainLock<(book: AccountBook, seq: Int64)>
    /// The accounts in force: replayed again when the accounts log changed since (``refreshAccounts()``).
    var credentials: Credentials { accounts.withLock { $0.credentials } }
    private let stopping = Atomic<Bool>(false)
    /// Whether ``close()`` began.
    var isStopping: Bool { stopping.load(ordering: .relaxed) }
    let limiter: RateLimiter
    /// The open ledgers (at most ``Configuration/maxOpenLedgers``).
    let ledgers: LedgerPool
    /// How many user ledgers are open now.
    public var openLedgerCount: Int { ledgers.count }
    /// Credential pairs already checked: (user, token expiry in seconds).
    /// The accounts log read again for requests about to be refused 401 (PostgreSQL), shared among them.
    private let accountsRead = Turns<Void>()
    private let verified = PlainLock([String: (user: String, expiry: Int64)]())
    private let syncers: WorkerPool
    /// One server per data directory, held until ``close()`` (none with PostgreSQL: any number of nodes share it).
    private let lock: ServerLock?

    /// Prepares a server over `configuration.dataDirectory` (nothing listens until ``start()``).
    /// - Throws: ``ServerError`` when the credentials file is missing or malformed; ``EventLogError`` for the directory.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        if let store = configuration.store {
            try store.checkSchema()
            let (book, seq) = try store.accounts(after: 0, applyingTo: AccountBook())
            databaseAccounts = PlainLock((book, seq))
            accounts = PlainLock((book.credentials, nil))
            lock = nil
        } else {
            do {
                try AtomicFile.makeDirectory(configuration.dataDirectory)
                // Made once here, not on every open of a user's ledger (the pool opens one on almost every miss).
                try AtomicFile.makeDirectory(configuration.dataDirectory + "/users")
            } catch let error as EventLogError where error.code == .io {
                // A data directory that cannot be made or written (a read-only mount, no permission): the same answer
                // as the writability probe gives (`serve` exits 73), not an I/O error.
                throw ServerError(
                    "cannot write the data directory \(configuration.dataDirectory): \(error)", code: "not_writable")
            }
            lock = try ServerLock(directory: configuration.dataDirectory, io: configuration.io)
            let loaded = try Credentials.load(
                directory: configuration.dataDirectory, create: true, io: configuration.io)
            let path = Credentials.logPath(in: configuration.dataDirectory)
            accounts = PlainLock((loaded, configuration.io.status(ofPath: path)))
            databaseAccounts = PlainLock((AccountBook(), 0))
        }
        limiter = RateLimiter(
            writesPerHour: configuration.writesPerHour, writeBurst: configuration.writeBurst,
            readsPerWindow: configuration.readsPerHour, erasuresPerWindow: configuration.erasuresPerHour)
        let syncers = WorkerPool(count: max(1, configuration.syncThreads), name: "moodledger-sync")
        self.syncers = syncers
        ledgers = LedgerPool(
            capacity: configuration.maxOpenLedgers
                ?? LedgerPool.defaultCapacity(connections: configuration.http.maxConnections),
            log: configuration.log
        ) { name in
            try Self.openLedger(name, configuration: configuration, syncers: syncers)
        }
    }

    /// Binds the socket; ``HTTPServer/run(grace:)`` then serves until ``HTTPServer/stop()``.
    /// - Throws: ``Errno`` when the address cannot be bound.
    public func start() throws -> HTTPServer {
        let server = try HTTPServer(configuration: configuration.http) { [self] request, responder in
            handle(request, responder: responder)
        }
        // Accounts added or erased while the server runs take effect without a restart: the log is looked at
        // before every authentication, and every 200 ms, so an erased account's ledger is closed (its writer lock
        // released for `serve user erase`) even when no request comes.
        let thread = Thread { [self] in
            while !stopping.load(ordering: .relaxed) {
                refreshAccounts()
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        thread.name = "moodledger-accounts"
        thread.start()
        return server
    }

    /// Replays the accounts log again if it changed since it was last read (it grew, or was replaced): new accounts
    /// can sign in, revoked keys and erased accounts cannot, remembered sign-ins are forgotten, and the ledgers of
    /// accounts that are gone are closed. A log that cannot be read keeps the accounts as they were (with a log line).
    func refreshAccounts() {
        if let store = configuration.store {
            refreshAccounts(from: store)
            return
        }
        let path = Credentials.logPath(in: configuration.dataDirectory)
        let file = configuration.io.status(ofPath: path)
        guard file != accounts.withLock({ $0.file }) else { return }
        let loaded: Credentials
        do {
            loaded = try Credentials.load(directory: configuration.dataDirectory, create: false, io: configuration.io)
        } catch {
            configuration.log("cannot re-read \(path): \(error); the accounts stay as they were")
            return
        }
        accounts.withLock { $0 = (loaded, file) }
        verified.withLock { $0.removeAll() }
        let gone = ledgers.remove { name in !loaded.has(name) }
        for user in gone {
            _ = try? user.ledger.flush()
            user.ledger.close()
            configuration.log("account \(user.name) is gone from \(path): its ledger is closed")
        }
    }

    /// The accounts log's rows past the last read, applied; a database that cannot be reached keeps the accounts as
    /// they were (the next refresh tries again).
    private func refreshAccounts(from store: PostgresStore) {
        let (book, seq) = databaseAccounts.withLock { $0 }
        guard let (next, last) = try? store.accounts(after: seq, applyingTo: book), last > seq else { return }
        let loaded = next.credentials
        let changed = databaseAccounts.withLock { current -> Bool in
            guard last > current.seq else { return false }
            current = (next, last)
            return true
        }
        guard changed else { return }
        accounts.withLock { $0 = (loaded, nil) }
        verified.withLock { $0.removeAll() }
        for user in ledgers.remove(where: { name in !loaded.has(name) }) {
            user.ledger.close()
            configuration.log("account \(user.name) is gone from the database: its cached events are dropped")
        }
    }

    /// Closes every open ledger cleanly (after the HTTP server stopped).
    public func close() {
        stopping.store(true, ordering: .relaxed)
        let open = ledgers.remove { _ in true }
        for user in open {
            _ = try? user.ledger.flush()
            user.ledger.close()
        }
        syncers.stop()
        lock?.release()
        configuration.store?.pool.close()
    }

    /// A user's directory.
    public static func userDirectory(_ name: String, in dataDirectory: String) -> String {
        dataDirectory + "/users/" + name
    }

    // MARK: - Requests

    /// Answers one request and waits for the answer (tests, the benchmark: the handler's own time).
    package func handle(_ request: HTTPRequest) -> HTTPResponse {
        let done = DispatchSemaphore(value: 0)
        let answer = Mutex<HTTPResponse?>(nil)
        let responder = HTTPResponder { response in
            answer.withLock { $0 = response }
            done.signal()
        }
        if let response = handle(request, responder: responder) { return response }
        done.wait()
        return answer.withLock { $0! }
    }

    /// What this server does beyond the seed documents, sent as `MoodLedger-Capabilities` on every authenticated
    /// answer (`Specs/server.md`): a sync client reads it from a documented route, so learning it sends nothing a
    /// seed backend would not expect.
    /// The header naming the identity of the account a request was answered for (``UserLedger/account``).
    static let accountHeader = "MoodLedger-Account"

    static let capabilitiesHeader = (
        name: "MoodLedger-Capabilities", value: "changes, revisions, update, delete, extensions, batch"
    )

    /// Answers one request: now, or later through `responder` (a write once durable, blocking work from a worker).
    func handle(_ request: HTTPRequest, responder: HTTPResponder) -> HTTPResponse? {
        let route = Route.match(request.path)
        guard let route else { return APIReply.error(404, "not_found", "no such route") }
        // The same Allow list for OPTIONS and 405: the route's methods, HEAD beside GET, and OPTIONS.
        let allow = (route.allowed + (route.allowed.contains("GET") ? ["HEAD"] : []) + ["OPTIONS"]).joined(
            separator: ", ")
        if request.method == "OPTIONS" { return HTTPResponse(status: 204, headers: [("Allow", allow)]) }
        // A method the server does not recognise is 501 (RFC 9110 §15.6.2); a standard one a route does not take, 405.
        guard HTTPParser.knownMethods.contains(request.method) else {
            return APIReply.error(501, "not_implemented", "\(request.method) is not a method this server implements")
        }
        let method = request.method == "HEAD" ? "GET" : request.method
        guard route.allowed.contains(method) else {
            return APIReply.error(
                405, "method_not_allowed", "\(request.method) is not allowed here", headers: [("Allow", allow)])
        }
        if case .health = route.name {
            guard let store = configuration.store else {
                return APIReply.data(200, .object([("status", .string("ok"))]))
            }
            // Whether the database answers and takes writes, asked on a worker (a round trip to the database).
            responder.onWorker {
                let (reachable, writable) = store.health()
                let body = JSONValue.object([
                    ("status", .string(reachable && writable ? "ok" : "unavailable")),
                    ("database", .object([("reachable", .bool(reachable)), ("writable", .bool(writable))]))
                ])
                var response = APIReply.data(reachable && writable ? 200 : 503, body)
                if !(reachable && writable) { response.headers.append(("Retry-After", "1")) }
                responder.respond(response)
            }
            return nil
        }
        let now = configuration.clock()
        let user: String
        do {
            user = try authenticate(request, now: now)
        } catch let refused as APIFailure where configuration.store != nil && refused.response.status == 401 {
            // An account another node added moments ago: the accounts log's new rows are read once before refusing,
            // on a worker (a database round trip no event loop waits for), in a read shared by every request refused
            // meanwhile (the background refresh reads them every 200 ms anyway).
            responder.onWorker { [self] in
                accountsRead.run { refreshAccounts() }
                do {
                    let user = try authenticate(request, now: now)
                    answerOnWorker(request, route: route, method: method, user: user, now: now, responder: responder)
                } catch {
                    responder.respond(APIReply.from(any: error))
                }
            }
            return nil
        } catch {
            return APIReply.from(any: error)
        }
        guard configuration.store == nil, let lease = ledgers.leaseIfOpen(user) else {
            // Not open: opened on a worker (a cold replay never stalls an event loop), then answered there. With
            // PostgreSQL every request goes there: the user's fold is first brought up to the database's last seq
            // (another node's writes), a round trip no event loop waits for.
            responder.onWorker { [self] in
                answerOnWorker(request, route: route, method: method, user: user, now: now, responder: responder)
            }
            return nil
        }
        return answer(request, route: route, method: method, lease: lease, now: now, responder: responder)
    }

    /// Answers an authenticated request on a worker: the user's ledger leased (opened if need be; with PostgreSQL,
    /// its fold caught up first).
    private func answerOnWorker(
        _ request: HTTPRequest, route: Route, method: String, user: String, now: Int64, responder: HTTPResponder
    ) {
        let here = HTTPResponder(pool: nil, quiet: true, deliver: responder.respond)
        do {
            let lease: LedgerPool.Lease
            if configuration.store != nil {
                lease = try ledgers.lease(user)
                // A user this call opened was read whole just now, after the request arrived.
                if !lease.opened { try lease.user.ledger.catchUp() }
            } else {
                lease = try readOnlyLease(user, route: route, method: method) ?? ledgers.lease(user)
            }
            if let response = answer(request, route: route, method: method, lease: lease, now: now, responder: here) {
                here.respond(response)
            }
        } catch {
            here.respond(failed(error, user: user))
        }
    }

    /// Answers an authenticated request with its user's ledger leased: now, or later through `responder`. The lease
    /// is held until the answer is made (captured by whatever makes it later).
    ///
    /// Long because the budget, the replay of a known key and the three ways a reply leaves (now, after the sync, on
    /// a worker) all hold the same lease and rate-limit headers.
    private func answer(
        _ request: HTTPRequest, route: Route, method: String, lease: LedgerPool.Lease, now: Int64,
        responder: HTTPResponder
    ) -> HTTPResponse? {
        let ledger = lease.user
        let user = ledger.name
        do {
            var rateHeaders: [(name: String, value: String)] = [
                Self.capabilitiesHeader, (name: Self.accountHeader, value: ledger.account)
            ]
            let cost = route.name == .moodBatch ? Self.batchCost(request) : 1
            if var decision = limiter.take(user: user, method == "GET" ? .read : .write, cost: cost, now: now) {
                if !decision.allowed, route.name == .moodBatch {
                    // A batch costs only its items that are not replays: resent after a lost answer, it is answered.
                    let fresh = Self.batchUnreplayed(request, user: ledger)
                    if fresh == 0 {
                        decision.allowed = true
                    } else if fresh < cost, let retry = limiter.take(user: user, .write, cost: fresh, now: now) {
                        decision = retry
                    }
                }
                rateHeaders += decision.headers
                if !decision.allowed {
                    // The replay of an acknowledged request changes nothing: a client retrying after a lost answer gets
                    // that answer, not a 429 (the body is hashed only here, once the budget is spent).
                    let (key, fingerprint) = Self.idempotency(request)
                    guard method != "GET", route.name != .moodBatch, let key,
                        ledger.isReplay(key, fingerprint: fingerprint)
                    else {
                        return APIReply.error(
                            429, "rate_limited", "too many requests; try again later", headers: rateHeaders)
                    }
                }
            }
            let reply: Reply
            if ledger.busy {
                // An erasure holds this ledger: wait for it on a worker, not on the event loop.
                reply = .offload { [self] in
                    resolved(ledger) { try dispatch(route, method: method, request: request, user: ledger, now: now) }
                }
            } else {
                reply = try dispatch(route, method: method, request: request, user: ledger, now: now)
            }
            switch reply {
            case .now(var response):
                response.headers += rateHeaders
                if ledger.failed { drop(user) }
                return response
            case .afterSync(var pending, let seq):
                pending.headers += rateHeaders
                let response = pending
                // Answered here when this thread ran the sync itself (a quiet loop); else later, from a sync thread.
                let here = Mutex<(waiting: Bool, answer: HTTPResponse?)>((true, nil))
                ledger.whenDurable(seq, inline: responder.quiet) { [self] error in
                    withExtendedLifetime(lease) {
                        let answer = error.map { syncFailed(ledger, $0) } ?? response
                        let direct = here.withLock { here -> Bool in
                            if here.waiting { here.answer = answer }
                            return here.waiting
                        }
                        if !direct { responder.respond(answer) }
                    }
                }
                return here.withLock { here in
                    here.waiting = false
                    return here.answer
                }
            case .offload(let work):
                let rateHeaders = rateHeaders
                responder.offload { [self] in
                    withExtendedLifetime(lease) {
                        var response: HTTPResponse
                        do { response = try work() } catch { response = failed(error, user: user) }
                        response.headers += rateHeaders
                        if ledger.failed { drop(user) }
                        return response
                    }
                }
                return nil
            }
        } catch {
            return failed(error, user: user)
        }
    }

    /// A reply made into a response by waiting for it (on a worker): a write's sync, offloaded work.
    private func resolved(_ ledger: UserLedger, _ reply: () throws -> Reply) -> HTTPResponse {
        do {
            switch try reply() {
            case .now(let response): return response
            case .offload(let work): return try work()
            case .afterSync(let response, let seq):
                do { try ledger.waitDurable(seq) } catch { return syncFailed(ledger, error) }
                return response
            }
        } catch {
            return failed(error, user: ledger.name)
        }
    }

    /// An error as its response; a 500 always leaves a log line with the user and the reason (an error's
    /// description names files, offsets and rules, never an entry's contents).
    func failed(_ error: Error, user: String) -> HTTPResponse {
        let response = APIReply.from(any: error)
        if response.status >= 500 {
            let reason = (error as? APIFailure).map { String(decoding: $0.response.body, as: UTF8.self) } ?? "\(error)"
            configuration.log("\(user): answered \(response.status): \(reason)")
        }
        // A write that failed (ENOSPC, EIO) leaves the log refusing writes until it is reopened: drop the ledger, so
        // the next request reopens it from disk (and succeeds once space is back), as a failed sync does.
        if let failure = error as? EventLogError, failure.code == .io || failure.code == .failedState {
            drop(user, because: "a write failed")
        }
        return response
    }

    /// A write whose sync failed: logged, the ledger dropped (reopened from disk on the next request), and a 500.
    private func syncFailed(_ ledger: UserLedger, _ error: Error) -> HTTPResponse {
        configuration.log("\(ledger.name): sync failed: \(error)")
        drop(ledger.name)
        return APIReply.error(500, "internal_error", "the change could not be made durable; it was not acknowledged")
    }

    /// Checks `X-API-Key` and `Authorization: Bearer <JWT>` (both required, as the seed says). A pair that passed
    /// is remembered until its token expires, so keep-alive clients do not pay a MAC and two hashes per request.
    /// - Returns: the user.
    func authenticate(_ request: HTTPRequest, now: Int64) throws -> String {
        // The accounts log's size, one `stat`; the database's accounts are read by the background refresh instead.
        if configuration.store == nil { refreshAccounts() }
        // One of each: with two, a proxy and this server could each act on a different one.
        for name in ["authorization", "x-api-key"] where request.headers.lazy.filter({ $0.name == name }).count > 1 {
            throw APIFailure(
                400, "bad_request",
                "the request has more than one \(name == "authorization" ? "Authorization" : "X-API-Key") header")
        }
        let pair = (request.header("authorization") ?? "") + "\n" + (request.header("x-api-key") ?? "")
        if let known = verified.withLock({ $0[pair] }), known.expiry > now / 1000 { return known.user }
        let claims = try checkCredentials(request, now: now)
        verified.withLock { cache in
            if cache.count >= configuration.rememberedSignIns { cache.removeAll() }
            cache[pair] = (claims.subject, claims.expiry)
        }
        return claims.subject
    }

    /// The claims of the request's token, once the token and the key it is paired with are checked.
    private func checkCredentials(_ request: HTTPRequest, now: Int64) throws -> JWT.Claims {
        let challenge = "Bearer realm=\"moodledger\""
        guard let authorization = request.header("authorization") else {
            throw APIFailure(
                401, "unauthorized", "Authorization: Bearer <token> is required",
                headers: [("WWW-Authenticate", challenge)])
        }
        let scheme = authorization.utf8.prefix(7)
        guard authorization.utf8.count > 7, String(decoding: scheme, as: UTF8.self).lowercased() == "bearer " else {
            throw APIFailure(
                401, "unauthorized", "the Authorization scheme must be Bearer",
                headers: [("WWW-Authenticate", challenge)])
        }
        // The key is asked for before the token is checked, and every refusal of a present pair reads the same
        // (a bad signature, an expired token, a key of another user or of an older key): no answer tells which part
        // was wrong, or whether a token alone is valid.
        guard let key = request.header("x-api-key") else {
            throw APIFailure(401, "unauthorized", "X-API-Key is required", headers: [("WWW-Authenticate", challenge)])
        }
        let refused = APIFailure(
            401, "unauthorized", "the API key and token are not a valid pair for a current account",
            headers: [("WWW-Authenticate", challenge + ", error=\"invalid_token\"")])
        // Spaces and tabs around the token are not part of it (the header's own were trimmed when parsed).
        let token = authorization.utf8.dropFirst(7).drop { $0 == 0x20 || $0 == 0x09 }
        let credentials = self.credentials
        guard
            let claims = try? JWT.claims(
                of: String(decoding: token, as: UTF8.self), now: now / 1000, secret: credentials.secret),
            Credentials.isValidUserName(claims.subject),
            let user = credentials.user(named: claims.subject, apiKey: key),
            let keyID = claims.keyID,
            ConstantTime.equal(Array(keyID.utf8), Array(credentials.keyID(of: user.keyHash).utf8))
        else {
            // A genuine token for this key that has only expired says so (RFC 6750's error_description): telling it
            // reveals nothing to whoever lacks a valid signature and a matching key, and it tells an honest client
            // to get a new token rather than check its key.
            if let stale = try? JWT.claims(
                of: String(decoding: token, as: UTF8.self), now: .min, secret: credentials.secret),
                stale.expiry <= now / 1000, Credentials.isValidUserName(stale.subject),
                let user = credentials.user(named: stale.subject, apiKey: key), let keyID = stale.keyID,
                ConstantTime.equal(Array(keyID.utf8), Array(credentials.keyID(of: user.keyHash).utf8))
            {
                throw APIFailure(
                    401, "unauthorized", "the token has expired; sign in again for a new one",
                    headers: [
                        (
                            "WWW-Authenticate",
                            challenge + ", error=\"invalid_token\", error_description=\"The access token expired\""
                        )
                    ])
            }
            throw refused
        }
        return claims
    }

    /// Opens a user's ledger for the pool (durability batched: the server syncs in groups).
    static func openLedger(_ name: String, configuration: Configuration, syncers: WorkerPool) throws -> UserLedger {
        if let store = configuration.store {
            let (stream, account) = try store.openStream(name, options: ledgerOptions(configuration))
            return UserLedger(name: name, ledger: stream, account: account, syncers: syncers)
        }
        let directory = Self.userDirectory(name, in: configuration.dataDirectory)
        var options = ledgerOptions(configuration)
        options.useSnapshots = !replaysWhole(directory, io: configuration.io)
        let ledger = try Ledger.open(at: directory, options: options)
        for notice in ledger.notices { configuration.log("\(name): \(notice)") }
        return UserLedger(name: name, ledger: ledger, account: ByteText.hex(ledger.eventLog.fileID), syncers: syncers)
    }

    /// How a user's ledger is opened.
    package static func ledgerOptions(_ configuration: Configuration, readOnly: Bool = false) -> Ledger.Options {
        var options = Ledger.Options()
        options.durability = .batched
        // No snapshot in the request path (an append never waits for one); one on close once 1,000 events are
        // uncovered, so a ledger reopened after the pool closed it replays at most that many.
        options.snapshotInterval = .max
        options.snapshotOnCloseMinimum = 1_000
        options.clock = configuration.clock
        options.io = configuration.io
        options.loggedAtBounds = .storage  // the seed API bounds no logged_at; the ledger stores 1900…2199
        options.readOnly = readOnly
        // The server owns its data directory (`SERVER.LOCK`): one writer per user ledger, holding its lock while open.
        options.keepsWriterLock = true
        options.lockWaitMilliseconds = 0
        return options
    }

    /// A log of at most this many bytes (about 650 events of the API's size) is replayed whole on open, its snapshots
    /// not even listed: the replay costs less than the listing (snapshots are a cache; the answers are the same).
    static let wholeReplayBytes: Int64 = 64 * 1024

    /// Whether the ledger in `directory` is small enough to replay whole (``wholeReplayBytes``; one `stat`).
    private static func replaysWhole(_ directory: String, io: any PlatformIO) -> Bool {
        io.size(ofPath: directory + "/" + LogFormat.logFileName).map { $0 <= wholeReplayBytes } ?? false
    }

    /// For a read that needs no revisions (the lists) by a user whose ledger is not open: the ledger opened read-only
    /// for this request alone — no writer lock, no pool slot, nothing to close but its log — when its log is small
    /// and opened without a notice (`Specs/server.md`, *Many accounts*). nil: the request takes the pool's way (a
    /// large ledger is worth keeping open; a notice means recovery the writer does).
    private func readOnlyLease(_ name: String, route: Route, method: String) -> LedgerPool.Lease? {
        let directory = Self.userDirectory(name, in: configuration.dataDirectory)
        // The log's size is asked first (one stat), so a large ledger goes to the pool without an open first.
        guard method == "GET", !route.readsRevisions(method), configuration.readOnlyListBytes > 0,
            let size = configuration.io.size(ofPath: directory + "/" + LogFormat.logFileName),
            size <= configuration.readOnlyListBytes
        else { return nil }
        var options = Self.ledgerOptions(configuration, readOnly: true)
        options.useSnapshots = size > Self.wholeReplayBytes
        guard let ledger = try? Ledger.open(at: directory, options: options) else { return nil }
        guard ledger.eventLog.endOffset <= configuration.readOnlyListBytes, ledger.notices.isEmpty else {
            ledger.close()
            return nil
        }
        return .detached(
            UserLedger(name: name, ledger: ledger, account: ByteText.hex(ledger.eventLog.fileID), syncers: syncers))
    }

    /// Forgets a ledger whose log refuses writes (a sync or a rewrite failed); the next request reopens it,
    /// recovering from disk.
    /// - Parameter reason: what failed, for the log line.
    func drop(_ name: String, because reason: String = "a sync failed") {
        guard let user = ledgers.remove(name) else { return }
        configuration.log("\(name): \(reason); the ledger is reopened from disk on the next request")
        user.ledger.close()
    }
}
