import Dispatch
import HTTPWire
import Platform

/// A small blocking HTTP/1.1 client connection: what `moodledger sync` speaks to a backend with, and what the
/// benchmark's load generator and the server tests use. Keep-alive; `Content-Length` and chunked bodies; no TLS, no
/// redirects. Answers are framed by the codec the server frames requests with (``HTTPFields``, ``HTTPFraming``,
/// ``HTTPChunkedDecoder``); its system calls are ``Socket``'s (the one platform layer).
public final class HTTPConnection: @unchecked Sendable {  // used by one thread at a time; pools hand it over whole
    /// A response as read.
    public struct Response: Sendable {
        public var status: Int
        /// The header fields in order, names lowercased, folded lines unfolded.
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
        /// The first header of that name (case-insensitive).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// Failures of the connection: what failed, and whether it was a timeout.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var what: String
        public var timedOut = false
        /// A limit of the request was breached (too large, or the deadline passed): never retried on a fresh
        /// connection.
        public var limit = false
        public var description: String { what }
    }

    private static let closed = "the connection was closed"
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    private var start = 0
    /// The limits of the response being read, and where it began in the buffer.
    private var limits = Limits()
    private var budgetStart = 0
    /// The per-read timeout the connection was made with.
    private let readTimeout: Double

    /// Connects to `host:port` (a name or a numeric IPv4/IPv6 address); connecting, sends and reads each time out
    /// after `timeout` seconds.
    /// - Throws: ``Failure`` when the name does not resolve or no address accepts the connection.
    public init(host: String = "127.0.0.1", port: UInt16, timeout: Double = 30) throws {
        readTimeout = timeout
        do {
            fd = try Socket.connectBlocking(host: host, port: port, timeout: timeout)
        } catch let error as Socket.Unresolved {
            throw Failure(what: "cannot resolve \(host) (\(error.reason))")
        } catch let error as Errno {
            throw Failure(
                what: "cannot connect to \(host):\(port) (\(error))",
                timedOut: error.isTimeout)
        }
    }

    /// Connects to 127.0.0.1:`port`.
    /// - Throws: ``Failure`` when the connection is refused.
    public convenience init(port: UInt16, timeout: Double = 30) throws {
        try self.init(host: "127.0.0.1", port: port, timeout: timeout)
    }

    deinit { if fd >= 0 { Socket.close(fd) } }

    /// Closes the connection now (idempotent through `shutdown`; the descriptor is released on deinit).
    public func close() { Socket.shutdown(fd) }

    /// Sends every byte (SIGPIPE never raised).
    /// - Throws: ``Failure`` when the peer is gone or the send times out.
    public func send(_ bytes: [UInt8]) throws {
        do { try bytes.withUnsafeBytes { try Socket.sendAll(fd, $0) } } catch let error as Errno {
            throw Failure(what: "send failed (\(error))", timedOut: error.isTimeout)
        }
    }

    /// Sends text as UTF-8.
    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// What one response may cost: its bytes (head and body, chunked or not, interim answers included) and the time
    /// until it must be whole.
    public struct Limits: Sendable {
        /// Most bytes of one response, from its first interim answer to its body's end. Default 64 MiB.
        public var maximumBytes: Int
        /// When the whole response must have arrived (`DispatchTime` uptime in ns); `nil`: only each read's timeout.
        public var deadline: UInt64?

        /// Limits of `maximumBytes` and an optional deadline.
        public init(maximumBytes: Int = 64 << 20, deadline: UInt64? = nil) {
            self.maximumBytes = maximumBytes
            self.deadline = deadline
        }
    }

    /// Whether the last response was read exactly to its end with nothing after it, on a persistent HTTP/1.1
    /// connection: only then may the connection carry another request. Any doubt closes it.
    public private(set) var reusable = false

    /// Reads one response; `head` for the answer to a HEAD request (a length but no body). Interim (1xx) answers
    /// are read and passed over (RFC 9110 §15.2: a client accepts those it did not ask for); a `101` is an error,
    /// since no upgrade was asked for. The status line must be `HTTP/1.x`, a space and exactly three digits.
    /// - Parameter limits: the response's byte budget and deadline; breaching either is a ``Failure``.
    /// - Throws: ``Failure`` at end of stream, a malformed response, a limit breached, or a timeout.
    /// - Parameter returningInterim: return a 1xx answer as it is (a test that asked for `100 Continue` reads it).
    ///
    /// Long because one answer is read against one byte budget and one deadline: the status line, interim answers,
    /// the fields and the framing are read in order with them.
    public func readResponse(
        head: Bool = false, limits: Limits = Limits(), returningInterim: Bool = false
    ) throws
        -> Response
    {
        reusable = false
        self.limits = limits
        budgetStart = start
        defer { self.limits = Limits() }
        var status: Int
        var minor: Int
        var headers: [(name: String, value: String)]
        while true {
            let end = try headerEnd()
            let head = buffer.withUnsafeBytes { raw in Self.head(UnsafeRawBufferPointer(rebasing: raw[start..<end])) }
            (status, minor, headers) = try head.get()
            start = end + 4
            if status == 101 { throw Failure(what: "the server switched protocols (101), which was not asked for") }
            if (100..<200).contains(status) && !returningInterim { continue }
            break
        }
        var response = Response(status: status, headers: headers, body: [])
        let framing: HTTPFraming
        let close: Bool
        do {
            (framing, close) = try HTTPFraming.response(headers, status: status, minor: minor, toHead: head)
        } catch {
            throw Failure(what: "the answer's framing is refused: \(error.reason)")
        }
        var persistent = minor >= 1 && !close && HTTPFraming.persistent(headers, minor: minor)
        defer { reusable = persistent && start == buffer.count }
        if framing != .none,
            let coding = response.header("content-encoding")?.lowercased(), !coding.isEmpty, coding != "identity"
        {
            // Nothing but identity was asked for (no Accept-Encoding is sent): a compressed body is not what was asked.
            throw Failure(what: "the answer is compressed (\(String(coding.prefix(20)))), which was not asked for")
        }
        switch framing {
        case .none:
            break
        case .chunked:
            var decoder = HTTPChunkedDecoder(from: start, maximumBody: limits.maximumBytes, maximumTrailers: 64 << 10)
            while true {
                let outcome: (done: Bool, error: HTTPWireError?) = buffer.withUnsafeBytes { raw in
                    do throws(HTTPWireError) { return (try decoder.advance(raw), nil) } catch { return (false, error) }
                }
                if let error = outcome.error {
                    throw error.status == 413 ? tooLarge() : Failure(what: "malformed chunked body: \(error.reason)")
                }
                if outcome.done { break }
                try fill()
            }
            response.body = decoder.body
            start = decoder.position
        case .length(let length):
            try need(start + length)
            response.body = Array(buffer[start..<(start + length)])
            start += length
        case .untilClose:
            // Neither a length nor chunked: the body runs to a real close of the connection (RFC 9112 §6.3), within
            // the budget; a body still going at the budget is refused, never taken as whole.
            persistent = false
            while true {
                do { try fill() } catch let failure as Failure where failure.what == Self.closed { break }
            }
            response.body = Array(buffer[start...])
            response.headers.append(("connection", "close"))
            start = buffer.count
        }
        return compacted(response)
    }

    /// A response head's status line and fields, by the shared codec (a folded line unfolded, as a user agent must).
    static func head(_ block: UnsafeRawBufferPointer) -> Result<(Int, Int, [(name: String, value: String)]), Failure> {
        let lines = HTTPFields.lines(block)
        guard let first = lines.first,
            let (status, minor) = HTTPFraming.statusLine(UnsafeRawBufferPointer(rebasing: first))
        else {
            return .failure(Failure(what: "malformed response status line"))
        }
        do {
            return .success((status, minor, try HTTPFields.fields(lines.dropFirst(), unfold: true)))
        } catch {
            return .failure(Failure(what: "malformed response header: \(error.reason)"))
        }
    }

    /// Reads until the buffer holds `count` bytes from its start (within the response's budget).
    private func need(_ count: Int) throws {
        guard count - budgetStart <= limits.maximumBytes else { throw tooLarge() }
        while buffer.count < count { try fill() }
    }

    private func tooLarge() -> Failure {
        Failure(what: "the response is larger than the \(limits.maximumBytes) bytes this request allows", limit: true)
    }

    private func compacted(_ response: Response) -> Response {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return response
    }

    /// Whether the connection may carry another request now: the last response ended exactly where the bytes read
    /// ended, and nothing has arrived since — no stray byte, no end of stream, no error (a peek that does not wait).
    public var quietForReuse: Bool { reusable && Socket.isQuiet(fd) }

    /// Whether the peer has closed the connection, without waiting: a peek at what is there now.
    package func closedByPeerWithoutWaiting() -> Bool { Socket.peerClosed(fd) }

    /// Whether the server closed the connection (end of stream) before the read timeout.
    public func closedByPeer() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            do {
                if try chunk.withUnsafeMutableBytes({ try Socket.receiveBlocking(fd, into: $0) }) == 0 { return true }
            } catch let error as Errno {
                return error == .connectionReset
            } catch {
                return false
            }
        }
    }

    private func headerEnd() throws -> Int {
        var from = start
        while true {
            let found = buffer.withUnsafeBytes { raw in
                HTTPFields.blockEnd(raw, from: max(start, from - 3), limit: raw.count)
            }
            if let found { return found }
            guard buffer.count - start < 64 << 10 else { throw Failure(what: "response header block too large") }
            from = buffer.count
            try fill()
        }
    }

    private func fill() throws {
        if let deadline = limits.deadline {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else {
                throw Failure(what: "timed out: the whole response did not arrive in time", timedOut: true, limit: true)
            }
            Socket.setReceiveTimeout(fd, seconds: min(readTimeout, Double(deadline - now) / 1e9))
        }
        guard buffer.count - budgetStart < limits.maximumBytes else { throw tooLarge() }
        var chunk = [UInt8](repeating: 0, count: min(65536, max(1, limits.maximumBytes - (buffer.count - budgetStart))))
        let count: Int
        do { count = try chunk.withUnsafeMutableBytes { try Socket.receiveBlocking(fd, into: $0) } } catch let error
            as Errno
        {
            let pastDeadline = limits.deadline.map { DispatchTime.now().uptimeNanoseconds >= $0 } ?? false
            if error.isTimeout, pastDeadline {
                throw Failure(what: "timed out: the whole response did not arrive in time", timedOut: true, limit: true)
            }
            throw Failure(
                what: error.isTimeout ? "timed out waiting for the response" : "read failed (\(error))",
                timedOut: error.isTimeout)
        }
        guard count > 0 else { throw Failure(what: Self.closed) }
        buffer += chunk[0..<count]
    }
}
