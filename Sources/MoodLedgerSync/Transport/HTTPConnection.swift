import Platform

/// A small blocking HTTP/1.1 client connection: what `moodledger sync` speaks to a backend with, and what the
/// benchmark's load generator and the server tests use. Keep-alive; `Content-Length` and chunked bodies; no TLS, no
/// redirects. Its system calls are ``Socket``'s (the one platform layer).
public final class HTTPConnection: @unchecked Sendable {  // used by one thread at a time; pools hand it over whole
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

    /// Failures of the connection: what failed, and whether it was a timeout.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var what: String
        public var timedOut = false
        public var description: String { what }
    }

    private static let closed = "the connection was closed"
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    private var start = 0

    /// Connects to `host:port` (a name or a numeric IPv4/IPv6 address); connecting, sends and reads each time out
    /// after `timeout` seconds.
    /// - Throws: ``Failure`` when the name does not resolve or no address accepts the connection.
    public init(host: String = "127.0.0.1", port: UInt16, timeout: Double = 30) throws {
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

    /// Reads one response; `head` for the answer to a HEAD request (a length but no body).
    /// - Throws: ``Failure`` at end of stream, a malformed response, or a timeout before a whole response.
    public func readResponse(head: Bool = false) throws -> Response {
        let end = try headerEnd()
        let lines = String(decoding: buffer[start..<end], as: UTF8.self).split(
            separator: "\r\n", omittingEmptySubsequences: false)
        guard let statusLine = lines.first, statusLine.hasPrefix("HTTP/1."),
            let status = Int(statusLine.dropFirst(9).prefix(3))
        else {
            throw Failure(what: "malformed response status line")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingSpaces()))
        }
        start = end + 4
        let response = Response(status: status, headers: headers, body: [])
        if head || status == 204 || status == 304 || (100..<200).contains(status) { return compacted(response) }
        if response.header("Transfer-Encoding")?.lowercased().contains("chunked") == true {
            var body: [UInt8] = []
            while true {
                let lineEnd = try lineEnd(from: start)
                let sizeText =
                    String(decoding: buffer[start..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
                guard let size = Int(sizeText.trimmingSpaces(), radix: 16), size >= 0, size <= 64 << 20 else {
                    throw Failure(what: "malformed chunk size")
                }
                start = lineEnd + 2
                if size == 0 {
                    // Trailers, then the empty line.
                    while true {
                        let trailerEnd = try self.lineEnd(from: start)
                        let empty = trailerEnd == start
                        start = trailerEnd + 2
                        if empty { break }
                    }
                    break
                }
                while buffer.count < start + size + 2 { try fill() }
                body += buffer[start..<(start + size)]
                start += size + 2
            }
            var whole = response
            whole.body = body
            return compacted(whole)
        }
        guard let lengthText = response.header("Content-Length") else {
            // Neither a length nor chunked: the body runs to the end of the connection (RFC 9112 §6.3).
            while buffer.count - start <= 64 << 20 {
                do { try fill() } catch let failure as Failure where failure.what == Self.closed { break }
            }
            var whole = response
            whole.body = Array(buffer[start...])
            whole.headers.append(("Connection", "close"))
            start = buffer.count
            return compacted(whole)
        }
        guard let length = Int(lengthText), length >= 0, length <= 64 << 20 else {
            throw Failure(what: "malformed Content-Length")
        }
        while buffer.count < start + length { try fill() }
        var whole = response
        whole.body = Array(buffer[start..<(start + length)])
        start += length
        return compacted(whole)
    }

    private func compacted(_ response: Response) -> Response {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return response
    }

    /// Whether the server closed the connection (end of stream) before the read timeout.
    /// Whether the peer has closed the connection, without waiting: a peek at what is there now.
    package func closedByPeerWithoutWaiting() -> Bool { Socket.peerClosed(fd) }

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
            if buffer.count >= 4 {
                for i in max(start, from - 3)..<max(start, buffer.count - 3)
                where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
                    return i
                }
            }
            guard buffer.count - start < 64 << 10 else { throw Failure(what: "response header block too large") }
            from = buffer.count
            try fill()
        }
    }

    private func lineEnd(from position: Int) throws -> Int {
        var from = position
        while true {
            if buffer.count >= 2, from < buffer.count - 1 {
                for i in max(position, from - 1)..<(buffer.count - 1) where buffer[i] == 13 && buffer[i + 1] == 10 {
                    return i
                }
            }
            guard buffer.count - position < 64 << 10 else { throw Failure(what: "response line too long") }
            from = buffer.count
            try fill()
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count: Int
        do { count = try chunk.withUnsafeMutableBytes { try Socket.receiveBlocking(fd, into: $0) } } catch let error
            as Errno
        {
            throw Failure(
                what: error.isTimeout ? "timed out waiting for the response" : "read failed (\(error))",
                timedOut: error.isTimeout)
        }
        guard count > 0 else { throw Failure(what: Self.closed) }
        buffer += chunk[0..<count]
    }
}

extension StringProtocol {
    fileprivate func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.first == " " || s.first == "\t" { s.removeFirst() }
        while s.last == " " || s.last == "\t" { s.removeLast() }
        return String(s)
    }

}
