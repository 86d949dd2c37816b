/// How a handler answers a request later: from the thread that finished its work (a group commit's sync, a worker).
/// Exactly one response per request; the connection waits for it (requests behind it stay queued, in order).
public struct HTTPResponder: Sendable {
    private let deliver: @Sendable (HTTPResponse) -> Void
    private let pool: WorkerPool?

    /// A responder that hands the response to `deliver`; `pool` runs offloaded work (inline when `nil`).
    init(pool: WorkerPool?, deliver: @escaping @Sendable (HTTPResponse) -> Void) {
        self.pool = pool
        self.deliver = deliver
    }

    /// A responder for callers outside a server (tests, the benchmark): offloaded work runs inline.
    /// - Parameter deliver: receives the response.
    package init(deliver: @escaping @Sendable (HTTPResponse) -> Void) {
        self.init(pool: nil, deliver: deliver)
    }

    /// Sends the response (the connection's event loop writes it).
    public func respond(_ response: HTTPResponse) { deliver(response) }

    /// Runs blocking `work` on the server's workers and responds with its result; the event loop goes on meanwhile.
    public func offload(_ work: @escaping @Sendable () -> HTTPResponse) {
        guard let pool else { return respond(work()) }
        pool.submit { respond(work()) }
    }
}
