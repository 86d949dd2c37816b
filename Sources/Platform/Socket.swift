#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// Every socket system call the project makes — the server's, the sync client's, the benchmark's load generator's —
/// wrapped: EINTR retried, errors thrown as ``Errno``, SIGPIPE never raised (`MSG_NOSIGNAL`, and the signal ignored
/// process-wide when a server starts).
public enum Socket {
    static var lastError: Errno { Errno(rawValue: errno) }

    /// A listening TCP socket bound to `host:port` (port 0 picks a free one); non-blocking, close-on-exec.
    /// - Returns: the descriptor and the port actually bound.
    public static func listen(host: String, port: UInt16, backlog: Int32 = 1024) throws -> (fd: Int32, port: UInt16) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = LibC.streamType
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else { throw Errno(rawValue: EADDRNOTAVAIL) }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, LibC.streamSocket, 0)
        guard fd >= 0 else { throw lastError }
        noSignalOnWrite(fd)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0, LibC.listen(fd, backlog) == 0 else {
            let error = lastError
            _ = LibC.close(fd)
            throw error
        }
        try setNonBlocking(fd)
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let bound = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0 else { throw lastError }
        let family = storage.ss_family
        let actual: UInt16 = withUnsafePointer(to: &storage) { pointer in
            if family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    UInt16(bigEndian: $0.pointee.sin6_port)
                }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                UInt16(bigEndian: $0.pointee.sin_port)
            }
        }
        return (fd, actual)
    }

    /// A TCP connection to `host:port` (blocking connect; then non-blocking, close-on-exec, TCP_NODELAY).
    public static func connect(host: String, port: UInt16) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = LibC.streamType
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            throw Errno(rawValue: EADDRNOTAVAIL)
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, LibC.streamSocket, 0)
        guard fd >= 0 else { throw lastError }
        noSignalOnWrite(fd)
        while LibC.connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) != 0 {
            let error = lastError
            if error.rawValue == EINTR { continue }
            _ = LibC.close(fd)
            throw error
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        try setNonBlocking(fd)
        return fd
    }

    /// Accepts one pending connection (non-blocking, close-on-exec, TCP_NODELAY); `nil` when none is pending.
    public static func accept(_ listener: Int32) throws -> Int32? {
        while true {
            let fd = LibC.accept(listener)
            if fd >= 0 {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                noSignalOnWrite(fd)
                do { try setNonBlocking(fd) } catch {
                    _ = LibC.close(fd)
                    continue
                }
                var one: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return fd
            }
            let error = lastError
            if error.rawValue == EINTR || error.rawValue == ECONNABORTED { continue }
            if error.rawValue == EAGAIN || error.rawValue == EWOULDBLOCK { return nil }
            throw error
        }
    }

    /// Reads what is available into `buffer`. - Returns: the byte count (0 at end of stream), or `nil` if nothing
    /// is available now.
    public static func receive(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            let error = lastError
            if error.rawValue == EINTR { continue }
            if error.rawValue == EAGAIN || error.rawValue == EWOULDBLOCK { return nil }
            throw error
        }
    }

    /// Writes as much of `bytes` as the socket takes now. - Returns: the byte count written (0 if it would block).
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws -> Int {
        while true {
            let count = LibC.send(fd, bytes.baseAddress, bytes.count, LibC.sendFlags)
            if count >= 0 { return count }
            let error = lastError
            if error.rawValue == EINTR { continue }
            if error.rawValue == EAGAIN || error.rawValue == EWOULDBLOCK { return 0 }
            throw error
        }
    }

    /// What a descriptor is watched for, or was found ready for, by ``poll(_:timeoutMilliseconds:)``.
    public struct Readiness: OptionSet, Sendable {
        public let rawValue: Int16
        public init(rawValue: Int16) { self.rawValue = rawValue }
        public static let readable = Readiness(rawValue: Int16(POLLIN))
        public static let writable = Readiness(rawValue: Int16(POLLOUT))
        /// The peer hung up (reported whether watched for or not).
        public static let hangUp = Readiness(rawValue: Int16(POLLHUP))
        /// An error is pending on the descriptor (reported whether watched for or not).
        public static let failed = Readiness(rawValue: Int16(POLLERR))
        /// The descriptor is not open (reported whether watched for or not).
        public static let invalid = Readiness(rawValue: Int16(POLLNVAL))
    }

    /// One descriptor for ``poll(_:timeoutMilliseconds:)``: what to watch it for, and what it was found ready for.
    public struct Watch: Sendable {
        public var fd: Int32
        public var interest: Readiness
        public var ready: Readiness = []
        public init(fd: Int32, interest: Readiness) {
            self.fd = fd
            self.interest = interest
        }
    }

    /// Waits up to `timeoutMilliseconds` until one of `watches` is ready; sets each one's `ready`.
    public static func poll(_ watches: inout [Watch], timeoutMilliseconds: Int32) throws {
        // The pollfd array lives on the stack (an event loop polls on every turn: no allocation for it).
        try withUnsafeTemporaryAllocation(of: pollfd.self, capacity: watches.count) { fds in
            for (index, watch) in watches.enumerated() {
                fds.initializeElement(at: index, to: pollfd(fd: watch.fd, events: watch.interest.rawValue, revents: 0))
            }
            while LibC.poll(fds.baseAddress, watches.count, timeoutMilliseconds) < 0 {
                let error = lastError
                if error.rawValue != EINTR { throw error }
            }
            for index in watches.indices { watches[index].ready = Readiness(rawValue: fds[index].revents) }
        }
    }

    /// A pipe whose read end wakes `poll` (both ends non-blocking, close-on-exec).
    public static func wakePipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw lastError }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            try setNonBlocking(fd)
        }
        return (ends[0], ends[1])
    }

    /// Writes one byte to a wake pipe (a full pipe already wakes the reader).
    public static func wake(_ fd: Int32) {
        var byte: UInt8 = 1
        _ = LibC.write(fd, &byte, 1)
    }

    /// Empties a wake pipe.
    public static func drain(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 256)
        while LibC.read(fd, &buffer, buffer.count) > 0 {}
    }

    public static func setNonBlocking(_ fd: Int32) throws {
        let flags = fcntl(fd, F_GETFL)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else { throw lastError }
    }

    /// Closes a descriptor (never retried: Linux always releases it).
    public static func close(_ fd: Int32) { _ = LibC.close(fd) }

    /// Closes without a reset: ends this side's sending (the peer reads every byte sent, then end of stream), reads
    /// and drops what the peer already sent (a close with unread input would send a TCP reset that can destroy the
    /// last answer before the peer reads it), then closes.
    public static func closeGracefully(_ fd: Int32) {
        _ = LibC.shutdown(fd, LibC.shutWrite)
        var scratch = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<16 {
            let count = scratch.withUnsafeMutableBytes { LibC.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count <= 0 { break }
        }
        _ = LibC.close(fd)
    }

    // MARK: - Blocking client sockets (the sync client, the tests)

    /// A name that did not resolve, with the resolver's reason.
    public struct Unresolved: Error, Sendable {
        public var reason: String
    }

    /// A blocking TCP connection to `host:port` (a name, or a numeric IPv4/IPv6 address), each address tried in turn;
    /// connecting, sends and receives time out after `timeout` seconds (`SO_SNDTIMEO` bounds `connect` too);
    /// close-on-exec, `TCP_NODELAY`.
    /// - Throws: ``Unresolved``; the ``Errno`` of the last address's `connect` (`EINPROGRESS`, `EAGAIN` or
    ///   `ETIMEDOUT` when it timed out).
    public static func connectBlocking(host: String, port: UInt16, timeout: Double) throws -> Int32 {
        var failure = Errno(rawValue: ECONNREFUSED)
        for address in try resolve(host: host, port: port) {
            let fd = socket(address.family, address.type | LibC.socketCloseOnExec, address.proto)
            guard fd >= 0 else { failure = lastError; continue }
            noSignalOnWrite(fd)
            // Set before connecting: `SO_SNDTIMEO` bounds a blocking `connect`.
            setTimeouts(fd, seconds: timeout)
            var connected = false
            while true {
                if address.connect(fd) == 0 { connected = true; break }
                failure = lastError
                if failure.rawValue != EINTR { break }
            }
            if connected {
                setNoDelay(fd)
                return fd
            }
            _ = LibC.close(fd)
        }
        throw failure
    }

    /// A blocking connection to the Unix-domain stream socket at `path`; sends and receives time out after
    /// `timeout` seconds; close-on-exec.
    /// - Throws: ``Errno`` (`ENAMETOOLONG` for a path longer than the address holds, `ENOENT`, `ECONNREFUSED`).
    public static func connectUnixBlocking(path: String, timeout: Double) throws -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw Errno(rawValue: ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let fd = socket(AF_UNIX, LibC.streamSocket, 0)
        guard fd >= 0 else { throw lastError }
        noSignalOnWrite(fd)
        setTimeouts(fd, seconds: timeout)
        while true {
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    LibC.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            if result == 0 { return fd }
            let error = lastError
            if error.rawValue == EINTR { continue }
            _ = LibC.close(fd)
            throw error
        }
    }

    /// One address a name resolved to, copied out of `getaddrinfo`'s list.
    struct Address: Sendable {
        var family: Int32
        var type: Int32
        var proto: Int32
        var storage: [UInt8]
        var length: socklen_t

        /// `connect` to this address.
        func connect(_ fd: Int32) -> Int32 {
            storage.withUnsafeBytes { raw in
                LibC.connect(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
            }
        }
    }

    /// Every address `host:port` resolves to, in the resolver's order.
    /// - Throws: ``Unresolved``.
    static func resolve(host: String, port: UInt16) throws -> [Address] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = LibC.streamType
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let first = list else { throw Unresolved(reason: String(cString: gai_strerror(resolved))) }
        defer { freeaddrinfo(list) }
        var addresses: [Address] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            cursor = info.pointee.ai_next
            let length = Int(info.pointee.ai_addrlen)
            guard let raw = info.pointee.ai_addr, length <= MemoryLayout<sockaddr_storage>.size else { continue }
            addresses.append(
                Address(
                    family: info.pointee.ai_family, type: info.pointee.ai_socktype, proto: info.pointee.ai_protocol,
                    storage: Array(UnsafeRawBufferPointer(start: raw, count: length)), length: info.pointee.ai_addrlen))
        }
        return addresses
    }

    /// Sets a client socket's send and receive timeouts (at least 1 ms).
    static func setTimeouts(_ fd: Int32, seconds: Double) {
        var time = timeval(seconds: seconds)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Turns Nagle's algorithm off: a request goes out whole at once.
    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Sets how long a blocking receive waits for data (at least 1 ms), as ``connectBlocking(host:port:timeout:)``
    /// set it at first: a caller with an overall deadline shortens each wait to what is left of it.
    public static func setReceiveTimeout(_ fd: Int32, seconds: Double) {
        var time = timeval(seconds: seconds)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends every byte on a blocking socket.
    /// - Throws: ``Errno`` (`EAGAIN`: the send timed out; `EPIPE`, `ECONNRESET`: the peer is gone).
    public static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let count = LibC.send(fd, bytes.baseAddress! + offset, bytes.count - offset, LibC.sendFlags)
            if count > 0 {
                offset += count
                continue
            }
            let error = count < 0 ? lastError : Errno(rawValue: EPIPE)
            if error.rawValue == EINTR { continue }
            throw error
        }
    }

    /// Reads what arrives on a blocking socket (waiting up to its timeout). - Returns: the byte count, 0 at end of
    /// stream.
    /// - Throws: ``Errno`` (`EAGAIN`: nothing arrived before the timeout).
    public static func receiveBlocking(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            let error = lastError
            if error.rawValue != EINTR { throw error }
        }
    }

    /// Whether the peer has closed the connection (end of stream or reset), looking without waiting.
    public static func peerClosed(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count == 0 || (count < 0 && errno == ECONNRESET)
    }

    /// Whether nothing is waiting on a connection now: no byte to read, no end of stream, no error. A peek that does
    /// not wait. A pooled client connection is reused only when it is quiet: a byte that arrived unasked (a stray
    /// second answer) would otherwise be read as the next request's answer.
    public static func isQuiet(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        while true {
            let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
            if count < 0, errno == EINTR { continue }
            return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        }
    }

    /// Ends both directions of a connection (the descriptor stays open until ``close(_:)``).
    public static func shutdown(_ fd: Int32) { _ = LibC.shutdown(fd, LibC.shutBoth) }

    /// Darwin has no `MSG_NOSIGNAL`: a write to a vanished peer raises SIGPIPE unless the socket says `SO_NOSIGPIPE`
    /// (set on every socket this layer makes or accepts). Linux passes `MSG_NOSIGNAL` on each send instead.
    static func noSignalOnWrite(_ fd: Int32) {
        #if canImport(Darwin)
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// Stops SIGPIPE from killing the process when a peer goes away mid-write.
    public static func ignoreSIGPIPE() { signal(SIGPIPE, SIG_IGN) }
}

extension timeval {
    /// `seconds` (at least 1 ms) as a `timeval`; `tv_usec` is `suseconds_t`: Int on Linux, Int32 on Darwin.
    init(seconds: Double) {
        let bounded = max(0.001, seconds)
        self.init(tv_sec: .init(Int(bounded)), tv_usec: .init(Int((bounded - Double(Int(bounded))) * 1e6)))
    }
}
