#if canImport(Glibc)
import Glibc
#endif

/// A small blocking HTTP/1.1 client for loopback: what the benchmark's load generator and the tests speak to the
/// server with (raw bytes in, `Content-Length`-framed responses out). Not a general client: no TLS, no redirects.
public final class LoopbackClient {
    /// A response as read.
    public struct Response: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]
        /// The first header of that name (case-insensitive).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// Failures of the connection (the errno of the call that failed).
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var what: String
        public var description: String { what }
    }

    private var fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:`port`; reads time out after `timeout` seconds.
    /// - Throws: ``Failure`` when the connection is refused.
    public init(port: UInt16, timeout: Double = 30) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            // A class whose init throws once its properties are set still runs deinit: mark the descriptor
            // closed, so it is never closed twice (a second close could hit another thread's reused number).
            let code = errno
            Glibc.close(fd)
            fd = -1
            throw Failure(what: "cannot connect to 127.0.0.1:\(port) (errno \(code))")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var time = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Closes the connection now (idempotent through `shutdown`; the descriptor is released on deinit).
    public func close() { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    /// Sends every byte (SIGPIPE never raised).
    /// - Throws: ``Failure`` when the peer is gone.
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { throw Failure(what: "send failed (errno \(errno))") }
            offset += n
        }
    }

    /// Sends text as UTF-8.
    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads one response; `head` for the answer to a HEAD request (a length but no body).
    /// - Throws: ``Failure`` at end of stream or timeout before a whole response.
    public func readResponse(head: Bool = false) throws -> Response {
        while true {
            if let end = headerEnd() {
                let lines = String(decoding: buffer[0..<end], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
                let status = lines.first.flatMap { Int($0.dropFirst(9).prefix(3)) } ?? 0
                var headers: [(name: String, value: String)] = []
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingSpaces()))
                }
                let length = head ? 0 : headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
                while buffer.count < end + 4 + length { try fill() }
                let body = Array(buffer[(end + 4)..<(end + 4 + length)])
                buffer.removeFirst(end + 4 + length)
                return Response(status: status, headers: headers, body: body)
            }
            try fill()
        }
    }

    /// Whether the server closed the connection (end of stream) before the read timeout.
    public func closedByPeer() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    private func headerEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { throw Failure(what: n == 0 ? "the connection was closed" : "read failed (errno \(errno))") }
        buffer += chunk[0..<n]
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return String(s)
    }
}
