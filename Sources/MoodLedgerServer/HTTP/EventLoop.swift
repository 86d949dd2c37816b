import Foundation
import Platform
import Synchronization

/// One thread's share of the server: its connections, polled together; requests framed and handled here, answers
/// given later (writes once durable, offloaded work) taken back through a wake pipe.
// @unchecked Sendable: one thread runs the loop and alone touches its connections, buffers and `server` (set once
// before that thread starts); other threads hand it answers only through `completed` (under its lock) and the wake pipe.
final class EventLoop: @unchecked Sendable {
    private let wakePipe: (read: Int32, write: Int32)
    private let completed = PlainLock([(Int32, HTTPResponse, Bool)]())
    private var server: HTTPServer!
    /// One read buffer per loop (a read never outlives the call that made it).
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    /// Whether this round of the loop serves one connection only (see ``HTTPResponder/quiet``).
    private var quiet = false
    /// The `Date` header of the current second (formatted once a second, not once a response).
    private var date: (second: Int, text: String) = (0, "")
    private var configuration: HTTPServer.Configuration { server.configuration }
    /// The most a connection's input buffer holds: one request's worth (header block, body, and room for framing).
    private var inputCap: Int { configuration.limits.headerBlock + configuration.limits.body + 64 * 1024 }

    init() throws { wakePipe = try Socket.wakePipe() }

    func wake() { Socket.wake(wakePipe.write) }

    func close() {
        Socket.close(wakePipe.read)
        Socket.close(wakePipe.write)
    }

    /// Serves until the server stops; then answers what is in flight (up to `grace` seconds) and closes everything.
    func run(server: HTTPServer, grace: Double) {
        self.server = server
        var connections: [Int32: Connection] = [:]
        var stopDeadline: Double?
        loop: while true {
            let now = HTTPServer.monotonic()
            if server.stopping.load(ordering: .sequentiallyConsistent), stopDeadline == nil {
                stopDeadline = now + grace
                // Idle connections close now; busy ones when their response is written.
                for (fd, connection) in connections where !connection.busy && connection.output.isEmpty {
                    drop(fd, &connections)
                }
            }
            if let deadline = stopDeadline,
                connections.values.allSatisfy({ !$0.busy && $0.output.isEmpty }) || now > deadline
            {
                break loop
            }
            deliverCompleted(&connections, now: now)
            var fds: [Socket.Watch] = [Socket.Watch(fd: wakePipe.read, interest: .readable)]
            if stopDeadline == nil, !holdsMoreThanItsShare(connections) {
                fds.append(Socket.Watch(fd: server.listener, interest: .readable))
            }
            for (fd, connection) in connections {
                var events: Socket.Readiness = []
                // A full input buffer is not read further until it drains (its requests answered): asking for more would
                // wake the loop at once, again and again, with nothing it may read.
                if !connection.busy, !connection.closing, !connection.peerClosed, connection.input.count < inputCap {
                    events.insert(.readable)
                }
                if !connection.output.isEmpty { events.insert(.writable) }
                fds.append(Socket.Watch(fd: fd, interest: events))
            }
            do { try Socket.poll(&fds, timeoutMilliseconds: 250) } catch { continue }
            let after = HTTPServer.monotonic()
            // One connection ready and nothing else: a handler may wait here briefly (a write syncs inline).
            quiet = fds.count { !$0.ready.isEmpty && $0.fd != wakePipe.read && $0.fd != server.listener } <= 1
            for entry in fds {
                if entry.fd == wakePipe.read {
                    if !entry.ready.isEmpty { Socket.drain(wakePipe.read) }
                } else if entry.fd == server.listener {
                    if !entry.ready.isEmpty { acceptAll(&connections, now: after) }
                } else if var connection = connections[entry.fd] {
                    let keep = service(entry.fd, &connection, ready: entry.ready, now: after)
                    if keep { connections[entry.fd] = connection } else { drop(entry.fd, &connections) }
                }
            }
            expireTimeouts(&connections, now: after)
        }
        for fd in Array(connections.keys) { drop(fd, &connections) }
    }

    private func drop(_ fd: Int32, _ connections: inout [Int32: Connection]) {
        Socket.close(fd)
        if let connection = connections.removeValue(forKey: fd) {
            server.openConnections.subtract(1, ordering: .relaxed)
            if connection.requestStarted != nil { server.requestsUnderway.subtract(1, ordering: .relaxed) }
        }
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

        /// Between requests on a keep-alive connection: nothing read, nothing to write, nothing with a worker.
        var isIdle: Bool { !busy && input.isEmpty && output.isEmpty && requestStarted == nil && !closing }
    }

    /// Whether this loop holds more than its share of the open connections (a loop of several): it then leaves new
    /// ones to the others, so that the connections, and the idle ones among them that make room at the cap, are
    /// spread over the loops: a loop that took them all would leave the others nothing to close for a newcomer, which
    /// would get a 503 while hundreds of connections sat idle.
    private func holdsMoreThanItsShare(_ connections: [Int32: Connection]) -> Bool {
        server.loopCount > 1
            && connections.count > server.openConnections.load(ordering: .relaxed) / server.loopCount + 1
    }

    private func acceptAll(_ connections: inout [Int32: Connection], now: Double) {
        while !holdsMoreThanItsShare(connections), let fd = try? Socket.accept(server.listener) {
            if server.openConnections.load(ordering: .relaxed) >= configuration.maxConnections {
                // Full: the keep-alive connection idle longest makes room (as nginx does), so idle clients cannot lock
                // new ones out; with none idle here, a 503 and a close the client can read it before.
                let idle = connections.filter { $0.value.isIdle }.min { $0.value.lastActivity < $1.value.lastActivity }
                if let (victim, _) = idle {
                    drop(victim, &connections)
                } else {
                    let bytes = HTTPResponse.plain(503, "too many connections", headers: [("Retry-After", "1")])
                        .serialized(date: HTTPServer.httpDate())
                    _ = try? bytes.withUnsafeBytes { try Socket.send(fd, $0) }
                    Socket.closeGracefully(fd)
                    continue
                }
            }
            connections[fd] = Connection(lastActivity: now)
            server.openConnections.add(1, ordering: .relaxed)
        }
    }

    /// Reads, frames and writes for one connection. - Returns: whether to keep it open.
    private func service(_ fd: Int32, _ connection: inout Connection, ready: Socket.Readiness, now: Double) -> Bool {
        if ready.contains(.invalid) { return false }
        if ready.contains(.writable), !connection.output.isEmpty {
            guard flush(fd, &connection, now: now) else { return false }
        }
        guard !ready.isDisjoint(with: [.readable, .hangUp, .failed]), !connection.busy, !connection.closing,
            !connection.peerClosed
        else {
            return true
        }
        // Read what is there, but never hold more than one request's worth (the parser's caps answer the rest).
        var sawEnd = false
        while connection.input.count < inputCap {
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
        let done = completed.withLock { completed -> [(Int32, HTTPResponse, Bool)] in
            defer { completed.removeAll() }
            return completed
        }
        for (fd, response, head) in done {
            guard var connection = connections[fd] else { continue }
            connection.busy = false
            enqueue(response, head: head, on: &connection, now: now)
            if flush(fd, &connection, now: now) {
                connections[fd] = connection
            } else {
                drop(fd, &connections)
            }
        }
    }

    private func enqueue(_ response: HTTPResponse, head: Bool, on connection: inout Connection, now: Double) {
        response.append(to: &connection.output, date: currentDate(), head: head)
        if response.close { connection.closing = true }
        connection.writeStarted = connection.writeStarted ?? now
        connection.lastActivity = now
    }

    /// Writes what the socket takes; then, with the output empty, frames the next pipelined request (unless the
    /// caller is already framing: `andFrame` false).
    /// - Returns: whether the connection stays open.
    private func flush(_ fd: Int32, _ connection: inout Connection, now: Double, andFrame: Bool = true) -> Bool {
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
        return andFrame ? frame(fd, &connection, now: now) : true
    }

    /// Frames requests from the input while complete ones are there: reads are answered here, a write is handed to
    /// a worker (the connection then waits for its answer).
    private func frame(_ fd: Int32, _ connection: inout Connection, now: Double) -> Bool {
        while true {
            guard connection.output.isEmpty else { return true }  // the rest once the answer is written
            let (keep, again) = frameOne(fd, &connection, now: now)
            if !keep { return false }
            if !again { return true }
        }
    }

    /// One request: returns whether to keep the connection and whether to look for another right away.
    private func frameOne(_ fd: Int32, _ connection: inout Connection, now: Double) -> (Bool, Bool) {
        guard !connection.busy else { return (true, false) }
        guard !connection.input.isEmpty else { return (!connection.peerClosed, false) }
        if connection.requestStarted == nil {
            connection.requestStarted = now
            server.requestsUnderway.add(1, ordering: .relaxed)
        }
        let parser = server.parser
        let result = connection.input.withUnsafeBytes { parser.parse($0) }
        switch result {
        case .needMore(let expectsContinue):
            if connection.peerClosed { return (false, false) }
            // A full buffer that still holds no complete request never will (chunk extensions, say): it is refused.
            if connection.input.count >= inputCap {
                connection.input.removeAll()
                enqueue(HTTPResponse.plain(413, "request too large"), head: false, on: &connection, now: now)
                return (flush(fd, &connection, now: now, andFrame: false), false)
            }
            if expectsContinue, !connection.sentContinue {
                connection.sentContinue = true
                connection.headerDone = connection.headerDone ?? now
                connection.output += Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
                return (flush(fd, &connection, now: now, andFrame: false), false)
            }
            if connection.headerDone == nil, containsHeaderEnd(connection.input) { connection.headerDone = now }
            return (true, false)
        case .failure(let response):
            connection.input.removeAll()
            enqueue(response, head: false, on: &connection, now: now)
            return (flush(fd, &connection, now: now, andFrame: false), false)
        case .request(let request, let consumed):
            connection.input.removeFirst(consumed)
            connection.busy = true
            connection.requestStarted = nil
            server.requestsUnderway.subtract(1, ordering: .relaxed)
            connection.headerDone = nil
            connection.sentContinue = false
            let keepAlive = request.keepAlive
            let head = request.method == "HEAD"
            let server = self.server!
            let responder = HTTPResponder(pool: server.pool, quiet: quiet) { [self] response in
                var response = response
                if !keepAlive { response.close = true }
                completed.withLock { $0.append((fd, response, head)) }
                Socket.wake(wakePipe.write)
            }
            // The handler runs here; a write answers later (once durable), so the loop goes on meanwhile.
            guard var response = server.handler(request, responder) else { return (true, false) }
            if !keepAlive { response.close = true }
            connection.busy = false
            enqueue(response, head: head, on: &connection, now: now)
            return (flush(fd, &connection, now: now, andFrame: false), true)
        }
    }

    private func containsHeaderEnd(_ input: [UInt8]) -> Bool {
        input.withUnsafeBytes { bytes in
            guard bytes.count >= 4 else { return false }
            for i in 0...(bytes.count - 4)
            where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
                return true
            }
            return false
        }
    }

    private func currentDate() -> String {
        let second = HTTPServer.wallSeconds()
        if second != date.second { date = (second, HTTPServer.httpDate(second)) }
        return date.text
    }

    private func expireTimeouts(_ connections: inout [Int32: Connection], now: Double) {
        for (fd, connection) in connections {
            var expired: HTTPResponse?
            var cut = false
            if let started = connection.writeStarted, now - started > configuration.writeTimeout {
                cut = true
            } else if connection.busy {
                continue
            } else if let started = connection.requestStarted {
                if connection.headerDone == nil, now - started > configuration.headerTimeout {
                    expired = .plain(408, "request header timeout")
                } else if let header = connection.headerDone, now - header > configuration.bodyTimeout {
                    expired = .plain(408, "request body timeout")
                }
            } else if connection.output.isEmpty, now - connection.lastActivity > configuration.idleTimeout {
                cut = true
            }
            if cut {
                drop(fd, &connections)
            } else if let expired {
                var updated = connection
                updated.input.removeAll()
                enqueue(expired, head: false, on: &updated, now: now)
                if flush(fd, &updated, now: now) {
                    connections[fd] = updated
                } else {
                    drop(fd, &connections)
                }
            }
        }
    }

}
