import EventLog
import Foundation
import Platform
import Synchronization

/// An HTTP/1.1 server over POSIX sockets: one event loop per core polls its connections, frames requests and runs
/// the handler. A handler answers at once, or later through its ``HTTPResponder`` (a write answered once its group
/// commit's sync is done; blocking work moved to the pool of workers). Requests on one connection are answered in
/// order (pipelining), one at a time.
// @unchecked Sendable: every stored property is immutable after init or atomic; each event loop it owns is run by
// one thread of its own.
public final class HTTPServer: @unchecked Sendable {
    /// How the server behaves; every property documents its default.
    public struct Configuration: Sendable {
        /// Address to bind. Default: loopback `127.0.0.1`.
        public var host = "127.0.0.1"
        /// Port; 0 picks a free one. Default 8080.
        public var port: UInt16 = 8080
        /// Most open connections; one more is answered 503 and closed. Default 1,024.
        public var maxConnections = 1024
        /// Worker threads for work a handler moves off the event loops (``HTTPResponder/offload(_:)``: erasures,
        /// anything that blocks). Default 8.
        public var workers = 8
        /// Event-loop threads (each polls its share of the connections and answers reads). Default: the cores.
        public var loops = ProcessInfo.processInfo.activeProcessorCount
        /// From a request's first byte to the end of its header block. Default 10 s (a slowloris is cut off).
        public var headerTimeout: Double = 10
        /// From the end of the header block to the end of the body. Default 30 s.
        public var bodyTimeout: Double = 30
        /// A keep-alive connection with no request in progress is closed after this. Default 60 s.
        public var idleTimeout: Double = 60
        /// A response not taken by the client within this is abandoned and the connection closed. Default 30 s.
        public var writeTimeout: Double = 30
        /// Request size limits (414, 431, 413).
        var limits = HTTPParser.Limits()
        /// Largest body accepted, in bytes (413 beyond). Default 1 MiB.
        public var maxBodyBytes: Int {
            get { limits.body }
            set { limits.body = newValue }
        }

        public init() {}
    }

    /// Answers a request: a response now, or `nil` when the responder will be given it later (from any thread).
    public typealias Handler = @Sendable (HTTPRequest, HTTPResponder) -> HTTPResponse?

    public let configuration: Configuration
    /// The port bound (useful with port 0).
    public let port: UInt16
    let listener: Int32
    let handler: Handler
    let pool: WorkerPool
    let parser: HTTPParser
    /// Open connections across every loop (the cap is global).
    let openConnections = Atomic<Int>(0)
    /// Connections with a request begun and not yet whole: what a test waits for, instead of sleeping, before it
    /// counts on every slot being busy.
    package let requestsUnderway = Atomic<Int>(0)
    private let loops: [EventLoop]
    /// How many event loops share the listener.
    var loopCount: Int { loops.count }
    let stopping = Atomic<Bool>(false)

    /// Binds the socket (nothing is accepted until ``run(grace:)``).
    /// - Throws: ``Errno`` when the address cannot be bound.
    public init(configuration: Configuration, handler: @escaping Handler) throws {
        Socket.ignoreSIGPIPE()
        self.configuration = configuration
        (listener, port) = try Socket.listen(host: configuration.host, port: configuration.port)
        self.handler = handler
        pool = WorkerPool(count: configuration.workers, name: "moodledger-http")
        parser = HTTPParser(limits: configuration.limits)
        loops = try (0..<max(1, configuration.loops)).map { _ in try EventLoop() }
    }

    /// Stops accepting, lets in-flight requests finish (up to the grace period), then closes every connection;
    /// ``run(grace:)`` returns. Safe from any thread.
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        for loop in loops { loop.wake() }
    }

    /// Serves until ``stop()``. Returns once every in-flight request was answered (or the grace period ran out).
    public func run(grace: Double = 10) {
        let group = DispatchGroup()
        for loop in loops.dropFirst() {
            group.enter()
            let thread = Thread { [self] in
                loop.run(server: self, grace: grace)
                group.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        loops[0].run(server: self, grace: grace)
        group.wait()
        Socket.close(listener)
        pool.stop()
        for loop in loops { loop.close() }
    }

    // MARK: - Clocks

    static func monotonic() -> Double { Double(SystemIO.monotonicNanoseconds()) / 1e9 }

    /// Seconds since 1970-01-01 UTC.
    static func wallSeconds() -> Int { Int(SystemIO().nowMicroseconds() / 1_000_000) }

    /// IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func httpDate(_ seconds: Int = wallSeconds()) -> String {
        let days = Int64(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        let secondOfDay = Int64(seconds) - days * 86_400
        let (year, month, day) = CivilCalendar.date(daysSinceEpoch: days)
        let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(weekdays[Int(((days % 7) + 7) % 7)]), \(two(day)) \(months[Int(month - 1)]) \(year) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay % 3600 / 60)):\(two(secondOfDay % 60)) GMT"
    }
}
