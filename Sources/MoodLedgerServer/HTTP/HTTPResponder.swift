/// How a handler answers a request later: from the thread that finished its work (a group commit's sync, a worker).
/// Exactly one response per request; the connection waits for it (requests behind it stay queued, in order).
public struct HTTPResponder: Sendable {
    private let deliver: @Sendable (HTTPResponse) -> Void
    private let pool: WorkerPool?
    /// The event loop has nothing else to do this round (one connection ready): the handler may wait for a short
    /// operation itself (a write's `fdatasync`) rather than hand it to another thread and back, which costs two
    /// wake-ups on the way to the answer. With other connections waiting it should not.
    public let quiet: Bool

    /// A responder that hands the response to `deliver`; `pool` runs offloaded work (inline when `nil`).
    init(pool: WorkerPool?, quiet: Bool, deliver: @escaping @Sendable (HTTPResponse) -> Void) {
        self.pool = pool
        self.quiet = quiet
        self.deliver = deliver
    }

    /// A responder for callers outside a server (tests, the benchmark): offloaded work runs inline.
    /// - Parameter deliver: receives the response.
    package init(deliver: @escaping @Sendable (HTTPResponse) -> Void) {
        self.init(pool: nil, quiet: true, deliver: deliver)
    }

    /// Sends the response (the connection's event loop writes it).
    public func respond(_ response: HTTPResponse) { deliver(response) }

    /// Runs blocking `work` on the server's workers (inline without workers); `work` responds itself.
    public func onWorker(_ work: @escaping @Sendable () -> Void) {
        guard let pool else { return work() }
        pool.submit(work)
    }

    /// Runs blocking `work` on the server's workers and responds with its result; the event loop goes on meanwhile.
    public func offload(_ work: @escaping @Sendable () -> HTTPResponse) {
        guard let pool else { return respond(work()) }
        pool.submit { respond(work()) }
    }
}
