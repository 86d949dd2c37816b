import Foundation
import MoodLedger
@testable import MoodLedgerServer
import Synchronization
import TestSupport

/// A server running in-process on an ephemeral loopback port, with users and tokens, and a raw-socket client.
final class ServerHarness: @unchecked Sendable {
    let dir: TemporaryDirectory
    let backend: MoodServer
    let server: HTTPServer
    let clock = ServerClock()
    let thread: Thread
    private let done = DispatchSemaphore(value: 0)
    var keys: [String: String] = [:]

    /// Starts a server over `dir` (a fresh one by default) with users `alice` and `bob`.
    init(dir: TemporaryDirectory = TemporaryDirectory("server"), users: [String] = ["alice", "bob"],
         configure: (inout MoodServer.Configuration) -> Void = { _ in }) throws {
        self.dir = dir
        let clock = self.clock
        var credentials = try Credentials.load(directory: dir.path, create: true)
        var keys: [String: String] = [:]
        for user in users where !credentials.users.contains(where: { $0.name == user }) {
            keys[user] = try credentials.addUser(user)
        }
        try credentials.save(directory: dir.path)
        self.keys = keys
        var configuration = MoodServer.Configuration(dataDirectory: dir.path)
        configuration.http.port = 0
        configuration.http.workers = 16
        configuration.writesPerHour = 0
        configuration.readsPerHour = 0
        configuration.clock = { clock.now }
        configuration.log = { _ in }
        configure(&configuration)
        backend = try MoodServer(configuration: configuration)
        server = try backend.start()
        let server = self.server
        let done = self.done
        thread = Thread {
            server.run(grace: 2)
            done.signal()
        }
        thread.start()
    }

    /// Stops the server and closes the ledgers.
    func stop() {
        server.stop()
        done.wait()
        backend.close()
    }

    func token(_ user: String, ttl: Int64 = 3600) -> String {
        JWT.sign(subject: user, now: clock.now / 1000, ttl: ttl, secret: backend.credentials.secret)
    }

    /// Authorization and API-key headers for a user.
    func auth(_ user: String, key: String? = nil) -> [(String, String)] {
        [("Authorization", "Bearer \(token(user))"), ("X-API-Key", key ?? keys[user] ?? "")]
    }

    /// One request on a fresh connection; the parsed response.
    func request(_ method: String, _ target: String, user: String? = "alice", headers: [(String, String)] = [],
                 json: String? = nil) throws -> RawResponse {
        var lines = ["\(method) \(target) HTTP/1.1", "Host: localhost", "Connection: close"]
        if let user { lines += auth(user).map { "\($0.0): \($0.1)" } }
        lines += headers.map { "\($0.0): \($0.1)" }
        var body: [UInt8] = []
        if let json {
            body = Array(json.utf8)
            if !headers.contains(where: { $0.0.lowercased() == "content-type" }) { lines.append("Content-Type: application/json") }
            lines.append("Content-Length: \(body.count)")
        }
        let client = try RawClient(port: server.port)
        defer { client.close() }
        try client.send(Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) + body)
        return try client.readResponse(head: method == "HEAD")
    }
}

/// A settable clock (milliseconds since 1970).
final class ServerClock: Sendable {
    private let value = Mutex<Int64>(1_796_000_000_000)
    var now: Int64 { value.withLock { $0 } }
    func advance(_ ms: Int64) { value.withLock { $0 += ms } }
}

/// A parsed HTTP response.
struct RawResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    var json: JSONValue { (try? JSONParser.parse(String(decoding: body, as: UTF8.self))) ?? .null }
    var data: JSONValue { json["data"] ?? .null }
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A blocking TCP client for framing tests: sends raw bytes, reads responses with a timeout.
final class RawClient {
    let fd: Int32
    private var buffer: [UInt8] = []

    init(port: UInt16, timeout: Double = 5) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        var time = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    func close() { Glibc.close(fd) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw POSIXError(.EPIPE) }
            offset += n
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads more bytes; false at end of stream or timeout.
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return false }
        buffer += chunk[0..<n]
        return true
    }

    /// Whether the server closed the connection (reads return end of stream) within the timeout.
    func closedByPeer() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 { return false }
        }
    }

    /// Reads one response (Content-Length framed; 1xx responses are returned too).
    func readResponse(head: Bool = false) throws -> RawResponse {
        while true {
            if let end = find([13, 10, 13, 10]) {
                let lines = String(decoding: buffer[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
                let status = Int(lines[0].split(separator: " ")[1])!
                let headers = lines.dropFirst().map { line -> (String, String) in
                    let colon = line.firstIndex(of: ":")!
                    return (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
                }
                let length = head ? 0 : headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
                while buffer.count < end + 4 + length { guard fill() else { throw POSIXError(.ETIMEDOUT) } }
                let body = Array(buffer[(end + 4)..<(end + 4 + length)])
                buffer.removeFirst(end + 4 + length)
                return RawResponse(status: status, headers: headers, body: body)
            }
            guard fill() else { throw POSIXError(.ETIMEDOUT) }
        }
    }

    private func find(_ needle: [UInt8]) -> Int? {
        guard buffer.count >= needle.count else { return nil }
        for i in 0...(buffer.count - needle.count) where Array(buffer[i..<(i + needle.count)]) == needle { return i }
        return nil
    }
}
