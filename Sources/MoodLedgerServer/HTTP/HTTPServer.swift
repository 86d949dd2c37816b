#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization

/// An HTTP/1.1 server over POSIX sockets: one thread polls every connection and frames requests; a pool of
/// workers runs the handler. Requests on one connection are answered in order (pipelining), one at a time.
public final class HTTPServer: @unchecked Sendable {
    /// How the server behaves; every property documents its default.
    public struct Configuration: Sendable {
        /// Address to bind. Default: loopback `127.0.0.1`.
        public var host = "127.0.0.1"
        /// Port; 0 picks a free one. Default 8080.
        public var port: UInt16 = 8080
        /// Most open connections; one more is answered 503 and closed. Default 1,024.
        public var maxConnections = 1024
        /// Worker threads running handlers (they block on group-commit syncs). Default 64.
        public var workers = 64
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

    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    public let configuration: Configuration
    /// The port bound (useful with port 0).
    public let port: UInt16
    private let listener: Int32
    private let wakePipe: (read: Int32, write: Int32)
    private let handler: Handler
    private let pool: WorkerPool
    private let parser: HTTPParser

    private struct Shared {
        var completed: [(Int32, HTTPResponse, Bool)] = []
        var stopping = false
    }
    private let shared = Mutex(Shared())
    private let stopped = DispatchSemaphore(value: 0)

    /// Binds the socket (nothing is accepted until ``run()``).
    /// - Throws: ``Errno`` when the address cannot be bound.
    public init(configuration: Configuration, handler: @escaping Handler) throws {
        Socket.ignoreSIGPIPE()
        self.configuration = configuration
        (listener, port) = try Socket.listen(host: configuration.host, port: configuration.port)
        wakePipe = try Socket.wakePipe()
        self.handler = handler
        pool = WorkerPool(count: configuration.workers, name: "moodledger-http")
        parser = HTTPParser(limits: configuration.limits)
    }

    /// Stops accepting, lets in-flight requests finish (up to `grace` seconds), then closes every connection; ``run()``
    /// returns. Safe from any thread (and, through ``requestStop()``, from a signal handler's wake).
    public func stop() {
        shared.withLock { $0.stopping = true }
        Socket.wake(wakePipe.write)
    }

    /// Serves until ``stop()``. Returns once every in-flight request was answered (or the grace period ran out).
    public func run(grace: Double = 10) {
        var connections: [Int32: Connection] = [:]
        var stopDeadline: Double?
        loop: while true {
            let now = Self.monotonic()
            let stopping = shared.withLock { $0.stopping }
            if stopping, stopDeadline == nil {
                stopDeadline = now + grace
                Socket.close(listener)
                // Idle connections close now; busy ones when their response is written.
                for (fd, connection) in connections where !connection.busy && connection.output.isEmpty {
                    Socket.close(fd)
                    connections[fd] = nil
                }
            }
            if let deadline = stopDeadline, connections.values.allSatisfy({ !$0.busy && $0.output.isEmpty }) || now > deadline {
                break loop
            }
            deliverCompleted(&connections, now: now)
            var fds: [pollfd] = [pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0)]
            if stopDeadline == nil { fds.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0)) }
            for (fd, connection) in connections {
                var events: Int16 = 0
                if !connection.busy, !connection.closing, !connection.peerClosed { events |= Int16(POLLIN) }
                if !connection.output.isEmpty { events |= Int16(POLLOUT) }
                fds.append(pollfd(fd: fd, events: events, revents: 0))
            }
            do { try Socket.poll(&fds, timeoutMilliseconds: 250) } catch { continue }
            let after = Self.monotonic()
            for entry in fds {
                if entry.fd == wakePipe.read {
                    if entry.revents != 0 { Socket.drain(wakePipe.read) }
                } else if entry.fd == listener {
                    if entry.revents != 0 { acceptAll(&connections, now: after) }
                } else if var connection = connections[entry.fd] {
                    let keep = service(entry.fd, &connection, revents: entry.revents, now: after)
                    if keep { connections[entry.fd] = connection } else {
                        Socket.close(entry.fd)
                        connections[entry.fd] = nil
                    }
                }
            }
            expireTimeouts(&connections, now: after)
        }
        for fd in connections.keys { Socket.close(fd) }
        if stopDeadline == nil { Socket.close(listener) }
        pool.stop()
        Socket.close(wakePipe.read)
        Socket.close(wakePipe.write)
    }

    // MARK: - Connections

    private struct Connection {
        var input: [UInt8] = []
        var output: [UInt8] = []
        var outputOffset = 0
        /// A request is with a worker.
        var busy = false
        /// Close once the output is written.
        var closing = false
        /// The peer shut down its side: answer the requests already received, then close.
        var peerClosed = false
        var sentContinue = false
        /// When the current request's first byte arrived (nil between requests).
        var requestStarted: Double?
        var headerDone: Double?
        var lastActivity: Double
        var writeStarted: Double?
    }

    private func acceptAll(_ connections: inout [Int32: Connection], now: Double) {
        while let fd = try? Socket.accept(listener) {
            if connections.count >= configuration.maxConnections {
                let bytes = HTTPResponse.plain(503, "too many connections", headers: [("Retry-After", "1")])
                    .serialized(date: Self.httpDate())
                _ = try? bytes.withUnsafeBytes { try Socket.send(fd, $0) }
                Socket.close(fd)
                continue
            }
            connections[fd] = Connection(lastActivity: now)
        }
    }

    /// Reads, frames and writes for one connection. - Returns: whether to keep it open.
    private func service(_ fd: Int32, _ connection: inout Connection, revents: Int16, now: Double) -> Bool {
        if revents & Int16(POLLNVAL) != 0 { return false }
        if revents & Int16(POLLOUT) != 0, !connection.output.isEmpty {
            guard flush(fd, &connection, now: now) else { return false }
        }
        guard revents & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0, !connection.busy, !connection.closing,
              !connection.peerClosed else {
            return true
        }
        // Read what is there, but never hold more than one request's worth (the parser's caps answer the rest).
        let cap = configuration.limits.headerBlock + configuration.limits.body + 64 * 1024
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var sawEnd = false
        while connection.input.count < cap {
            let count: Int?
            do { count = try chunk.withUnsafeMutableBytes { try Socket.receive(fd, into: $0) } } catch { return false }
            guard let count else { break }
            if count == 0 {
                sawEnd = true
                break
            }
            connection.input.append(contentsOf: chunk[0..<count])
            connection.lastActivity = now
            if count < chunk.count { break }
        }
        // The peer finished sending: answer every complete request it sent, then close.
        if sawEnd { connection.peerClosed = true }
        return frame(fd, &connection, now: now)
    }

    private func deliverCompleted(_ connections: inout [Int32: Connection], now: Double) {
        let done = shared.withLock { shared -> [(Int32, HTTPResponse, Bool)] in
            defer { shared.completed.removeAll() }
            return shared.completed
        }
        for (fd, response, head) in done {
            guard var connection = connections[fd] else { continue }
            connection.busy = false
            enqueue(response, head: head, on: &connection, now: now)
            if flush(fd, &connection, now: now) {
                connections[fd] = connection
            } else {
                Socket.close(fd)
                connections[fd] = nil
            }
        }
    }

    private func enqueue(_ response: HTTPResponse, head: Bool, on connection: inout Connection, now: Double) {
        connection.output += response.serialized(date: Self.httpDate(), head: head)
        if response.close { connection.closing = true }
        connection.writeStarted = connection.writeStarted ?? now
        connection.lastActivity = now
    }

    /// Writes what the socket takes; then, with the output empty, frames the next pipelined request.
    /// - Returns: whether the connection stays open.
    private func flush(_ fd: Int32, _ connection: inout Connection, now: Double) -> Bool {
        while connection.outputOffset < connection.output.count {
            let written: Int
            do {
                written = try connection.output.withUnsafeBytes {
                    try Socket.send(fd, UnsafeRawBufferPointer(rebasing: $0[connection.outputOffset...]))
                }
            } catch { return false }
            if written == 0 { return true }
            connection.outputOffset += written
            connection.lastActivity = now
        }
        connection.output.removeAll(keepingCapacity: true)
        connection.outputOffset = 0
        connection.writeStarted = nil
        if connection.closing { return false }
        return frame(fd, &connection, now: now)
    }

    /// Frames a request from the input, if one is complete, and hands it to a worker.
    private func frame(_ fd: Int32, _ connection: inout Connection, now: Double) -> Bool {
        guard !connection.busy else { return true }
        guard !connection.input.isEmpty else { return !connection.peerClosed }
        if connection.requestStarted == nil { connection.requestStarted = now }
        let result = connection.input.withUnsafeBytes { parser.parse($0) }
        switch result {
        case .needMore(let expectsContinue):
            if connection.peerClosed { return false }
            if expectsContinue, !connection.sentContinue {
                connection.sentContinue = true
                connection.headerDone = connection.headerDone ?? now
                connection.output += Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
                return flush(fd, &connection, now: now)
            }
            if connection.headerDone == nil, containsHeaderEnd(connection.input) { connection.headerDone = now }
            return true
        case .failure(let response):
            connection.input.removeAll()
            enqueue(response, head: false, on: &connection, now: now)
            return flush(fd, &connection, now: now)
        case .request(let request, let consumed):
            connection.input.removeFirst(consumed)
            connection.busy = true
            connection.requestStarted = nil
            connection.headerDone = nil
            connection.sentContinue = false
            let keepAlive = request.keepAlive
            let head = request.method == "HEAD"
            pool.submit { [self] in
                var response = handler(request)
                if !keepAlive { response.close = true }
                shared.withLock { $0.completed.append((fd, response, head)) }
                Socket.wake(wakePipe.write)
            }
            return true
        }
    }

    private func containsHeaderEnd(_ input: [UInt8]) -> Bool {
        input.withUnsafeBytes { bytes in
            guard bytes.count >= 4 else { return false }
            for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
                return true
            }
            return false
        }
    }

    private func expireTimeouts(_ connections: inout [Int32: Connection], now: Double) {
        for (fd, connection) in connections {
            var expired: HTTPResponse?
            var drop = false
            if let started = connection.writeStarted, now - started > configuration.writeTimeout {
                drop = true
            } else if connection.busy {
                continue
            } else if let started = connection.requestStarted {
                if connection.headerDone == nil, now - started > configuration.headerTimeout {
                    expired = .plain(408, "request header timeout")
                } else if let header = connection.headerDone, now - header > configuration.bodyTimeout {
                    expired = .plain(408, "request body timeout")
                }
            } else if connection.output.isEmpty, now - connection.lastActivity > configuration.idleTimeout {
                drop = true
            }
            if drop {
                Socket.close(fd)
                connections[fd] = nil
            } else if let expired {
                var updated = connection
                updated.input.removeAll()
                enqueue(expired, head: false, on: &updated, now: now)
                if flush(fd, &updated, now: now) { connections[fd] = updated } else {
                    Socket.close(fd)
                    connections[fd] = nil
                }
            }
        }
    }

    // MARK: - Clocks

    static func monotonic() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func httpDate(_ seconds: Int = Int(time(nil))) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
