import Dispatch
import HTTPWire
import Platform

/// A small HTTP/1.1 client connection, blocking or awaiting: what `moodledger sync` speaks to a backend with, and what the
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

    /// Connects to `host:port` as ``init(host:port:timeout:)`` does, awaiting the connect instead of blocking a thread.
    /// - Throws: ``Failure`` when the name does not resolve or no address accepts the connection.
    public static func connect(host: String, port: UInt16, timeout: Double = 30) async throws -> HTTPConnection {
        do {
            return HTTPConnection(
                fd: try await Socket.connectAwaiting(host: host, port: port, timeout: timeout), timeout: timeout)
        } catch let error as Socket.Unresolved {
            throw Failure(what: "cannot resolve \(host) (\(error.reason))")
        } catch let error as Errno {
            throw Failure(what: "cannot connect to \(host):\(port) (\(error))", timedOut: error.isTimeout)
        }
    }

    private init(fd: Int32, timeout: Double) {
        self.fd = fd
        readTimeout = timeout
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

    /// Sends every byte as ``send(_:)-([UInt8])`` does, awaiting the socket whenever it is full.
    /// - Parameter deadline: when the whole request must be sent (`DispatchTime` uptime in ns); `nil`: only each
    ///   wait's read timeout bounds it.
    /// - Throws: ``Failure`` when the peer is gone, takes nothing for the read timeout, or the deadline passes.
    public func send(_ bytes: [UInt8], deadline: UInt64? = nil) async throws {
        do { try await Socket.sendAwaiting(fd, bytes, seconds: readTimeout, until: deadline) } catch let error as Errno
        {
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
    public func readResponse(
        head: Bool = false, limits: Limits = Limits(), returningInterim: Bool = false
    ) throws -> Response {
        var reading = begin(head: head, limits: limits, returningInterim: returningInterim)
        defer { self.limits = Limits() }
        while true {
            if let response = try advance(&reading) { return response }
            do { try fill() } catch let failure as Failure where failure.what == Self.closed {
                if let response = try ended(&reading) { return response }
                throw failure
            }
        }
    }

    /// Reads one response as ``readResponse(head:limits:returningInterim:)`` does, awaiting the socket instead of
    /// blocking a thread.
    public func readResponse(
        head: Bool = false, limits: Limits = Limits(), returningInterim: Bool = false
    ) async throws -> Response {
        var reading = begin(head: head, limits: limits, returningInterim: returningInterim)
        defer { self.limits = Limits() }
        while true {
            if let response = try advance(&reading) { return response }
            do { try await fillAwaiting() } catch let failure as Failure where failure.what == Self.closed {
                if let response = try ended(&reading) { return response }
                throw failure
            }
        }
    }

    /// Where the reading of one response stands: looking for the end of a head, or reading a body by its framing.
    private struct Reading {
        enum Phase {
            /// Looking for the head's end; the bytes before `searched` hold none.
            case head(searched: Int)
            case chunked(HTTPChunkedDecoder)
            case length(Int)
            case untilClose
        }
        var phase: Phase
        let toHead: Bool
        let returningInterim: Bool
        var response = Response(status: 0, headers: [], body: [])
        var persistent = false
    }

    private func begin(head: Bool, limits: Limits, returningInterim: Bool) -> Reading {
        reusable = false
        self.limits = limits
        budgetStart = start
        return Reading(phase: .head(searched: start), toHead: head, returningInterim: returningInterim)
    }

    /// Takes the response as far as the bytes read allow. - Returns: the response when it is whole, `nil` when more
    /// bytes are needed.
    ///
    /// Long because one answer is read against one byte budget and one deadline: the status line, interim answers,
    /// the fields and the framing are read in order with them.
    private func advance(_ reading: inout Reading) throws -> Response? {
        while true {
            switch reading.phase {
            case .head(let searched):
                let found = buffer.withUnsafeBytes { raw in
                    HTTPFields.blockEnd(raw, from: max(start, searched - 3), limit: raw.count)
                }
                guard let end = found else {
                    guard buffer.count - start < 64 << 10 else {
                        throw Failure(what: "response header block too large")
                    }
                    reading.phase = .head(searched: buffer.count)
                    return nil
                }
                let head = buffer.withUnsafeBytes { raw in
                    Self.head(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
                }
                let (status, minor, headers) = try head.get()
                start = end + 4
                if status == 101 { throw Failure(what: "the server switched protocols (101), which was not asked for") }
                if (100..<200).contains(status) && !reading.returningInterim {
                    reading.phase = .head(searched: start)
                    continue
                }
                reading.response = Response(status: status, headers: headers, body: [])
                let framing: HTTPFraming
                let close: Bool
                do {
                    (framing, close) = try HTTPFraming.response(
                        headers, status: status, minor: minor, toHead: reading.toHead)
                } catch {
                    throw Failure(what: "the answer's framing is refused: \(error.reason)")
                }
                reading.persistent = minor >= 1 && !close && HTTPFraming.persistent(headers, minor: minor)
                if framing != .none,
                    let coding = reading.response.header("content-encoding")?.lowercased(), !coding.isEmpty,
                    coding != "identity"
                {
                    // Nothing but identity was asked for (no Accept-Encoding is sent): a compressed body is not what
                    // was asked.
                    throw Failure(
                        what: "the answer is compressed (\(String(coding.prefix(20)))), which was not asked for")
                }
                switch framing {
                case .none: return finished(&reading)
                case .chunked:
                    reading.phase = .chunked(
                        HTTPChunkedDecoder(from: start, maximumBody: limits.maximumBytes, maximumTrailers: 64 << 10))
                case .length(let length):
                    guard start + length - budgetStart <= limits.maximumBytes else { throw tooLarge() }
                    reading.phase = .length(length)
                case .untilClose:
                    // Neither a length nor chunked: the body runs to a real close of the connection (RFC 9112 §6.3),
                    // within the budget; a body still going at the budget is refused, never taken as whole.
                    reading.persistent = false
                    reading.phase = .untilClose
                }
            case .chunked(var decoder):
                let outcome: (done: Bool, error: HTTPWireError?) = buffer.withUnsafeBytes { raw in
                    do throws(HTTPWireError) { return (try decoder.advance(raw), nil) } catch { return (false, error) }
                }
                if let error = outcome.error {
                    throw error.status == 413 ? tooLarge() : Failure(what: "malformed chunked body: \(error.reason)")
                }
                guard outcome.done else {
                    reading.phase = .chunked(decoder)
                    return nil
                }
                reading.response.body = decoder.body
                start = decoder.position
                return finished(&reading)
            case .length(let length):
                guard buffer.count >= start + length else { return nil }
                reading.response.body = Array(buffer[start..<(start + length)])
                start += length
                return finished(&reading)
            case .untilClose:
                return nil
            }
        }
    }

    /// The response whose bytes ended with the connection: whole when its body runs until the close.
    private func ended(_ reading: inout Reading) throws -> Response? {
        guard case .untilClose = reading.phase else { return nil }
        reading.response.body = Array(buffer[start...])
        reading.response.headers.append(("connection", "close"))
        start = buffer.count
        return finished(&reading)
    }

    private func finished(_ reading: inout Reading) -> Response {
        reusable = reading.persistent && start == buffer.count
        return compacted(reading.response)
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

    /// Reads what arrives into the buffer, waiting at most the read timeout (or what is left of the deadline).
    private func fill() throws {
        let (seconds, size) = try window()
        if limits.deadline != nil { Socket.setReceiveTimeout(fd, seconds: seconds) }
        var chunk = [UInt8](repeating: 0, count: size)
        let count: Int
        do { count = try chunk.withUnsafeMutableBytes { try Socket.receiveBlocking(fd, into: $0) } } catch let error
            as Errno
        { throw readFailure(error) }
        try take(chunk, count)
    }

    /// ``fill()``, awaiting the socket instead of blocking a thread.
    private func fillAwaiting() async throws {
        let (seconds, size) = try window()
        let chunk: [UInt8]
        do { chunk = try await Socket.receiveAwaiting(fd, maximum: size, seconds: seconds) } catch let error as Errno {
            throw readFailure(error)
        }
        try take(chunk, chunk.count)
    }

    /// How long the next read may wait, and how many bytes it may take: a read past the deadline or the budget is
    /// refused before it is made.
    private func window() throws -> (seconds: Double, size: Int) {
        var seconds = readTimeout
        if let deadline = limits.deadline {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else {
                throw Failure(what: "timed out: the whole response did not arrive in time", timedOut: true, limit: true)
            }
            seconds = min(readTimeout, Double(deadline - now) / 1e9)
        }
        guard buffer.count - budgetStart < limits.maximumBytes else { throw tooLarge() }
        return (seconds, min(65536, max(1, limits.maximumBytes - (buffer.count - budgetStart))))
    }

    private func readFailure(_ error: Errno) -> Failure {
        let pastDeadline = limits.deadline.map { DispatchTime.now().uptimeNanoseconds >= $0 } ?? false
        if error.isTimeout, pastDeadline {
            return Failure(what: "timed out: the whole response did not arrive in time", timedOut: true, limit: true)
        }
        return Failure(
            what: error.isTimeout ? "timed out waiting for the response" : "read failed (\(error))",
            timedOut: error.isTimeout)
    }

    private func take(_ chunk: [UInt8], _ count: Int) throws {
        guard count > 0 else { throw Failure(what: Self.closed) }
        buffer += chunk[0..<count]
    }
}
