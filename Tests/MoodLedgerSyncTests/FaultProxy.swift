import Foundation
import Platform
import Synchronization

/// A fault-injecting TCP proxy for the sync tests: it sits between a client and `moodledger serve` on loopback,
/// reads each HTTP/1.1 request, and per request either relays it, answers it itself, delays the answer, or lets the
/// server commit and then drops the connection before the client sees the answer.
final class FaultProxy: @unchecked Sendable {
    enum Action: Sendable {
        case relay
        /// Answer with this status, headers and body without reaching the server.
        case answer(Int, [String], String)
        /// Relay, then hold the answer this long before sending it (a timeout when longer than the client waits).
        case delay(milliseconds: Int)
        /// Relay, read the server's answer, then close the client's connection without it.
        case dropAfterCommit
        /// Answer with these raw bytes and close (framings other servers use: chunked, close-delimited).
        case raw(String)
        /// Relay, and send these bytes (interim answers) before the server's answer.
        case relayAfter(String)
        /// Send `head`, then `piece` again and again until the client stops reading (an endless body), at most
        /// `limit` bytes.
        case endless(head: String, piece: String, limit: Int)
    }

    struct Seen: Sendable {
        var method: String
        var path: String
        var idempotencyKey: String?
        var status: Int?
        var replayed: Bool
    }

    let port: UInt16
    private let upstream: UInt16
    private let listener: Int32
    private let decide: @Sendable (Int, String, String) -> Action
    private let count = Atomic<Int>(0)
    private let seen = Mutex<[Seen]>([])
    private let running = Atomic<Bool>(true)

    /// A server of its own instead of a proxy: `handler(method, target, body)` answers every request `(status, JSON)`.
    private let handler: (@Sendable (String, String, [UInt8]?) -> (Int, String))?

    /// Serves HTTP/1.1 on loopback with `handler` answering every request (a test backend such as ``SeedBackend``).
    convenience init(handler: @escaping @Sendable (String, String, [UInt8]?) -> (Int, String)) throws {
        try self.init(upstream: 0, handler: handler) { _, _, _ in .relay }
    }

    /// Starts a proxy to `upstream` (a loopback port); `decide(index, method, path)` picks each request's fate.
    init(
        upstream: UInt16, handler: (@Sendable (String, String, [UInt8]?) -> (Int, String))? = nil,
        decide: @escaping @Sendable (Int, String, String) -> Action
    ) throws {
        self.upstream = upstream
        self.decide = decide
        self.handler = handler
        let (listener, port) = try Socket.listen(host: "127.0.0.1", port: 0, backlog: 128)
        self.port = port
        self.listener = listener
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    var url: String { "http://127.0.0.1:\(port)" }

    /// Every request seen, in order.
    var requests: [Seen] { seen.withLock { $0 } }

    /// Stops accepting (the accept loop closes the listener within 50 ms).
    func stop() {
        running.store(false, ordering: .relaxed)
    }

    private func acceptLoop() {
        defer { Socket.close(listener) }
        while running.load(ordering: .relaxed) {
            var watch = [Socket.Watch(fd: listener, interest: .readable)]
            guard (try? Socket.poll(&watch, timeoutMilliseconds: 50)) != nil else { return }
            while running.load(ordering: .relaxed), let client = try? Socket.accept(listener) {
                let thread = Thread { [self] in serve(client) }
                thread.start()
            }
        }
    }

    private func serve(_ client: Int32) {
        defer { Socket.close(client) }
        var server: Int32 = -1
        defer { if server >= 0 { Socket.close(server) } }
        var buffer: [UInt8] = []
        while let request = Self.readMessage(client, &buffer) {
            let head = String(decoding: request.head, as: UTF8.self)
            let parts = head.split(separator: " ", maxSplits: 2)
            let method = parts.first.map(String.init) ?? ""
            let path = parts.count > 1 ? String(parts[1]) : ""
            let key = Self.header(head, "idempotency-key")
            let index = count.wrappingAdd(1, ordering: .relaxed).oldValue
            if let handler {
                let (status, body) = handler(method, path, request.body)
                seen.withLock {
                    $0.append(Seen(method: method, path: path, idempotencyKey: key, status: status, replayed: false))
                }
                let text =
                    "HTTP/1.1 \(status) Answered\r\n" + (status == 204 ? "" : "Content-Type: application/json\r\n")
                    + "Content-Length: \(body.utf8.count)\r\n\r\n" + body
                guard Self.sendAll(client, Array(text.utf8)) else { return }
                continue
            }
            let action = decide(index, method, path)
            if case .endless(let headText, let piece, let limit) = action {
                seen.withLock {
                    $0.append(Seen(method: method, path: path, idempotencyKey: key, status: nil, replayed: false))
                }
                guard Self.sendAll(client, Array(headText.utf8)) else { return }
                let bytes = Array(piece.utf8)
                var sent = 0
                while sent < limit, Self.sendAll(client, bytes) { sent += bytes.count }
                return
            }
            if case .raw(let text) = action {
                seen.withLock {
                    $0.append(Seen(method: method, path: path, idempotencyKey: key, status: nil, replayed: false))
                }
                _ = Self.sendAll(client, Array(text.utf8))
                return
            }
            if case .answer(let status, let headers, let body) = action {
                seen.withLock {
                    $0.append(Seen(method: method, path: path, idempotencyKey: key, status: status, replayed: false))
                }
                let text =
                    "HTTP/1.1 \(status) Injected\r\n" + headers.map { $0 + "\r\n" }.joined()
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
                guard Self.sendAll(client, Array(text.utf8)) else { return }
                continue
            }
            if server < 0 { server = Self.connect(upstream) }
            guard server >= 0, Self.sendAll(server, request.head + request.body) else { return }
            var upstreamBuffer: [UInt8] = []
            guard let response = Self.readMessage(server, &upstreamBuffer) else { return }
            let responseHead = String(decoding: response.head, as: UTF8.self)
            let status = Int(responseHead.dropFirst(9).prefix(3))
            seen.withLock {
                $0.append(
                    Seen(
                        method: method, path: path, idempotencyKey: key, status: status,
                        replayed: Self.header(responseHead, "idempotent-replayed") != nil))
            }
            switch action {
            case .dropAfterCommit: return
            case .delay(let milliseconds): Thread.sleep(forTimeInterval: Double(milliseconds) / 1000)
            case .relayAfter(let interim): guard Self.sendAll(client, Array(interim.utf8)) else { return }
            default: break
            }
            guard Self.sendAll(client, response.head + response.body) else { return }
        }
    }

    private static func header(_ head: String, _ name: String) -> String? {
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].lowercased() == name {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// One message (head including the blank line, and its Content-Length body), or nil at end of stream.
    private static func readMessage(_ fd: Int32, _ buffer: inout [UInt8]) -> (head: [UInt8], body: [UInt8])? {
        while true {
            if let end = find(buffer) {
                let head = Array(buffer[0..<(end + 4)])
                let length = header(String(decoding: head, as: UTF8.self), "content-length").flatMap { Int($0) } ?? 0
                while buffer.count < end + 4 + length { guard fill(fd, &buffer) else { return nil } }
                let body = Array(buffer[(end + 4)..<(end + 4 + length)])
                buffer.removeFirst(end + 4 + length)
                return (head, body)
            }
            guard fill(fd, &buffer) else { return nil }
        }
    }

    private static func find(_ buffer: [UInt8]) -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4)
        where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 { return i }
        return nil
    }

    /// Reads what arrives (waiting for it on a non-blocking socket); false at end of stream or on an error.
    private static func fill(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let read: Int?
            do { read = try chunk.withUnsafeMutableBytes { try Socket.receive(fd, into: $0) } } catch { return false }
            if let count = read {
                guard count > 0 else { return false }
                buffer += chunk[0..<count]
                return true
            }
            var watch = [Socket.Watch(fd: fd, interest: .readable)]
            guard (try? Socket.poll(&watch, timeoutMilliseconds: 30_000)) != nil, !watch[0].ready.isEmpty else {
                return false
            }
        }
    }

    /// Sends every byte (waiting for room on a non-blocking socket); false if the peer is gone.
    private static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            guard let sent = try? bytes[offset...].withUnsafeBytes({ try Socket.send(fd, $0) }) else { return false }
            offset += sent
            if sent == 0 {
                var watch = [Socket.Watch(fd: fd, interest: .writable)]
                guard (try? Socket.poll(&watch, timeoutMilliseconds: 30_000)) != nil, !watch[0].ready.isEmpty else {
                    return false
                }
            }
        }
        return true
    }

    /// A connection to the upstream server on loopback, or -1.
    private static func connect(_ port: UInt16) -> Int32 {
        (try? Socket.connect(host: "127.0.0.1", port: port)) ?? -1
    }
}
