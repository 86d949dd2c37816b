import Foundation
import MoodLedger
import Platform
import Synchronization
import Testing

@testable import MoodLedgerSync

#if canImport(Glibc)
    import Glibc
#endif

/// A scripted HTTP/1.1 server on loopback for the client's framing: it answers every request with its own number,
/// once sends a complete unasked second answer (a stray) when told to, and records each request's head.
final class ScriptedServer: @unchecked Sendable {  // the listener and port never change; the rest is under Mutexes
    let port: UInt16
    private let listener: Int32
    private let running = Atomic<Bool>(true)
    private let heads = Mutex<[String]>([])
    private let connections = Mutex<[Int32]>([])
    private let count = Atomic<Int>(0)

    init(host: String = "127.0.0.1") throws {
        (listener, port) = try Socket.listen(host: host, port: 0, backlog: 16)
        Thread { [self] in acceptLoop() }.start()
    }

    /// The heads of every request received, in order.
    var requestHeads: [String] { heads.withLock { $0 } }

    func stop() { running.store(false, ordering: .relaxed) }

    /// Sends a complete stray `201` on the newest connection and returns once the client's kernel has acknowledged
    /// every byte of it (`TIOCOUTQ` is 0): the stray is then readable on the client's side.
    func sendStray() throws {
        let fd = try #require(connections.withLock { $0.last })
        let stray = Array("HTTP/1.1 201 Created\r\nContent-Length: 15\r\n\r\n{\"stray\": true}".utf8)
        try stray.withUnsafeBytes { try Socket.sendAll(fd, $0) }
        let deadline = Date().addingTimeInterval(10)
        var unacknowledged: Int32 = 1
        while unacknowledged > 0, Date() < deadline {
            #if canImport(Glibc)
                _ = ioctl(fd, UInt(TIOCOUTQ), &unacknowledged)
            #endif
            if unacknowledged > 0 { sched_yield() }
        }
        #expect(unacknowledged == 0, "the stray answer reached the client")
    }

    private func acceptLoop() {
        defer { Socket.close(listener) }
        while running.load(ordering: .relaxed) {
            var watch = [Socket.Watch(fd: listener, interest: .readable)]
            guard (try? Socket.poll(&watch, timeoutMilliseconds: 50)) != nil else { return }
            while let client = try? Socket.accept(listener) {
                connections.withLock { $0.append(client) }
                Thread { [self] in serve(client) }.start()
            }
        }
    }

    private func serve(_ fd: Int32) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while running.load(ordering: .relaxed) {
            guard let end = buffer.firstRange(of: Array("\r\n\r\n".utf8)) else {
                // The accepted socket does not block: wait until it is readable (or the server stops).
                let received: Int??
                do { received = try chunk.withUnsafeMutableBytes { try Socket.receive(fd, into: $0) } } catch { return }
                if let read = received ?? nil {
                    guard read > 0 else { return }
                    buffer += chunk[0..<read]
                } else {
                    var watch = [Socket.Watch(fd: fd, interest: .readable)]
                    guard (try? Socket.poll(&watch, timeoutMilliseconds: 100)) != nil else { return }
                }
                continue
            }
            let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
            buffer.removeSubrange(..<end.upperBound)
            heads.withLock { $0.append(head) }
            let number = count.wrappingAdd(1, ordering: .relaxed).newValue
            let body = "{\"n\": \(number)}"
            let answer = "HTTP/1.1 201 Created\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            guard (try? Array(answer.utf8).withUnsafeBytes({ try Socket.sendAll(fd, $0) })) != nil else { return }
        }
    }
}

@Suite("Pooled connections and request heads")
struct PooledConnectionTests {
    private func body(_ exchange: SyncExchange) -> String {
        guard case .response(_, _, let body) = exchange else { return "failure: \(exchange)" }
        return String(decoding: body, as: UTF8.self)
    }

    @Test("A stray answer that arrives after an answer was read: the connection is not reused, no answer shifts")
    func strayAnswerIsNeverTakenForTheNext() throws {
        let server = try ScriptedServer()
        defer { server.stop() }
        let transport = HTTPTransport(url: try RemoteURL("http://127.0.0.1:\(server.port)"), timeout: 5)
        let post = SyncRequest(method: "POST", path: "/api/mood", body: Array("{}".utf8), idempotencyKey: "k")
        #expect(body(transport.perform(post, credentials: SyncCredentials())) == "{\"n\": 1}")
        try server.sendStray()
        // Each later request gets its own answer: the connection holding the stray was discarded.
        for number in 2...4 {
            #expect(body(transport.perform(post, credentials: SyncCredentials())) == "{\"n\": \(number)}")
        }
    }

    @Test("A connection read exactly to its answer's end is quiet until a byte or its end arrives")
    func quietForReuse() throws {
        let server = try ScriptedServer()
        defer { server.stop() }
        let connection = try HTTPConnection(port: server.port, timeout: 5)
        try connection.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try connection.readResponse()
        #expect(connection.quietForReuse)
        try server.sendStray()
        #expect(!connection.quietForReuse)
    }

    @Test("An IPv6 remote's Host header carries the address in brackets (RFC 9112 §3.2)")
    func ipv6HostHeader() throws {
        guard let server = try? ScriptedServer(host: "::1") else {
            print("no IPv6 loopback on this machine; the Host header's form is checked without a connection")
            #expect(try RemoteURL("http://[::1]:8080").hostHeader == "[::1]:8080")
            return
        }
        defer { server.stop() }
        let transport = HTTPTransport(url: try RemoteURL("http://[::1]:\(server.port)"), timeout: 5)
        _ = transport.perform(SyncRequest(method: "GET", path: "/api/mood"), credentials: SyncCredentials())
        let head = try #require(server.requestHeads.first)
        #expect(head.contains("\r\nHost: [::1]:\(server.port)\r\n"), "\(head)")
    }

    @Test("Credentials holding CR, LF or another control character are refused, named, never sent")
    func credentialsWithLineBreaks() throws {
        for (key, token) in [("k\r\nDELETE /api/mood/x HTTP/1.1", "t"), ("k", "t\nX-Evil: 1"), ("k\u{7F}", "t")] {
            let source = SyncCredentials.Source(
                environment: ["MOODLEDGER_API_KEY": key, "MOODLEDGER_TOKEN": token])
            do {
                _ = try source.load()
                Issue.record("credentials with a control character were accepted")
            } catch {
                #expect(error.code == .config)
                #expect(error.message.contains(key == "k" ? "MOODLEDGER_TOKEN" : "MOODLEDGER_API_KEY"))
                #expect(!error.message.contains("DELETE") && !error.message.contains("Evil"), "no value echoed")
            }
        }
        #expect(
            try SyncCredentials.Source(environment: ["MOODLEDGER_API_KEY": "key-1", "MOODLEDGER_TOKEN": "a.b.c"])
                .load() == SyncCredentials(apiKey: "key-1", token: "a.b.c"))
    }

    @Test("A remote's host must be ASCII: a look-alike Unicode host is refused, punycode is taken")
    func asciiHosts() throws {
        #expect(throws: MoodError.self) { try RemoteURL("http://ex\u{0430}mple.com") }
        #expect(throws: MoodError.self) { try RemoteURL("http://a:b:80") }
        #expect(try RemoteURL("http://xn--exmple-4nf.com").host == "xn--exmple-4nf.com")
    }

    @Test("Content-Length: a list of equal values is that length; values that differ or an unasked encoding fail")
    func contentLengthLists() throws {
        let cases: [(String, String?)] = [
            ("HTTP/1.1 201 Created\r\nContent-Length: 2, 2\r\n\r\n{}", nil),
            ("HTTP/1.1 201 Created\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", nil),
            ("HTTP/1.1 201 Created\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}", "differ"),
            ("HTTP/1.1 201 Created\r\nContent-Length: 2, 3\r\n\r\n{}", "differ"),
            ("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}", "compressed (gzip)")
        ]
        for (answer, failure) in cases {
            let proxy = try FaultProxy(upstream: 0) { _, _, _ in .raw(answer) }
            defer { proxy.stop() }
            let transport = HTTPTransport(url: try RemoteURL(proxy.url), timeout: 5)
            let exchange = transport.perform(
                SyncRequest(method: "POST", path: "/api/v1/mood", body: Array("{}".utf8), idempotencyKey: "k"),
                credentials: SyncCredentials())
            switch (exchange, failure) {
            case (.response(_, _, let body), nil): #expect(body == Array("{}".utf8))
            case (.failure(_, let message), let words?): #expect(message.contains(words), "\(message)")
            default: Issue.record("\(answer.debugDescription): \(exchange)")
            }
        }
    }

    @Test("URLSession on Linux: every request says Connection: close, so libcurl never re-sends one without its body")
    func urlSessionNeverReuses() throws {
        let server = try ScriptedServer()
        defer { server.stop() }
        let transport = try URLSessionTransport(url: try RemoteURL("http://127.0.0.1:\(server.port)"))
        for _ in 0..<2 {
            _ = transport.perform(
                SyncRequest(method: "POST", path: "/api/v1/mood", body: Array("{}".utf8), idempotencyKey: "k"),
                credentials: SyncCredentials())
        }
        let heads = server.requestHeads
        #expect(heads.count == 2)
        #if canImport(FoundationNetworking)
            #expect(heads.allSatisfy { $0.lowercased().contains("\r\nconnection: close") }, "\(heads)")
        #endif
    }

    @Test("URLSession: a request past its deadline is a timeout naming the host, not a cancellation")
    func urlSessionTimeout() throws {
        // A listener that never accepts: the kernel completes the handshake, nobody answers.
        let (listener, port) = try Socket.listen(host: "127.0.0.1", port: 0, backlog: 4)
        defer { Socket.close(listener) }
        let transport = try URLSessionTransport(
            url: try RemoteURL("http://127.0.0.1:\(port)"), requestTimeout: 1)
        let exchange = transport.perform(
            SyncRequest(method: "GET", path: "/api/v1/mood"), credentials: SyncCredentials())
        guard case .failure(let kind, let message) = exchange else {
            Issue.record("answered: \(exchange)")
            return
        }
        #expect(kind == "timeout", "\(kind): \(message)")
        #expect(message.contains("127.0.0.1"), "\(message)")
    }

    @Test("URLSession failures: a handshake no TLS version allows is tls; others name the host")
    func urlSessionClassification() {
        let legacy = NSError(
            domain: NSURLErrorDomain, code: -1,
            userInfo: [
                NSLocalizedDescriptionKey: "OpenSSL/3.0.22: error:0A00014D:SSL routines::legacy sigalg disallowed"
            ])
        #expect(URLSessionTransport.Relay.classify(legacy, host: "old.example", refusal: nil).kind == "tls")
        let version = NSError(
            domain: NSURLErrorDomain, code: -1,
            userInfo: [NSLocalizedDescriptionKey: "error:0A00010B:SSL routines::wrong version number"])
        #expect(URLSessionTransport.Relay.classify(version, host: "old.example", refusal: nil).kind == "tls")
        let refused = NSError(
            domain: NSURLErrorDomain, code: NSURLErrorCannotConnectToHost,
            userInfo: [NSLocalizedDescriptionKey: "Couldn't connect to server"])
        let network = URLSessionTransport.Relay.classify(refused, host: "api.example", refusal: nil)
        #expect(network.kind == "network" && network.message.hasPrefix("api.example: "), "\(network)")
    }
}
