import Dispatch
import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// Client sockets for Swift concurrency: a connect, a send and a receive that await the socket instead of blocking a
/// thread. A task waiting here holds no thread: the wait is a `DispatchSource` on the descriptor (epoll on Linux,
/// kqueue on Darwin), and the task resumes on its own executor when the socket is ready or the time is up.
///
/// The descriptors stay blocking sockets (the calls here pass `MSG_DONTWAIT`), so one connection can serve a blocking
/// caller and an awaiting one in turn.
extension Socket {
    /// Where readiness sources deliver: one serial queue whose handlers only resume a waiting task.
    private static let readinessQueue = DispatchQueue(label: "moodledger.socket.readiness")

    /// Waits until `fd` is readable (or writable), for at most `seconds`.
    /// - Returns: `true` when it became ready (or hung up, or failed: the next call says which), `false` when the time
    ///   ran out first.
    public static func ready(_ fd: Int32, writable: Bool = false, seconds: Double) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let source =
                writable
                ? DispatchSource.makeWriteSource(fileDescriptor: fd, queue: readinessQueue)
                : DispatchSource.makeReadSource(fileDescriptor: fd, queue: readinessQueue)
            // The outcome is decided once, by the event or the timer; the task resumes only from the cancel handler,
            // after which Dispatch no longer watches the descriptor (its owner may close it at once).
            let outcome = Outcome()
            let timer = DispatchWorkItem { if outcome.decide(false) { source.cancel() } }
            source.setEventHandler {
                if outcome.decide(true) {
                    timer.cancel()
                    source.cancel()
                }
            }
            source.setCancelHandler { continuation.resume(returning: outcome.value.withLock { $0 } ?? false) }
            readinessQueue.asyncAfter(deadline: .now() + max(0.001, seconds), execute: timer)
            source.activate()
        }
    }

    /// A TCP connection to `host:port` (a name or a numeric address), each address tried in turn, awaiting the
    /// connect rather than blocking. The name is resolved on a system queue (`getaddrinfo` has no asynchronous
    /// form). The descriptor is returned blocking, close-on-exec, `TCP_NODELAY`, with `timeout` as its send and
    /// receive timeouts (as ``connectBlocking(host:port:timeout:)`` makes it).
    /// - Throws: ``Unresolved``; the ``Errno`` of the last address's connect (`ETIMEDOUT` when it timed out).
    public static func connectAwaiting(host: String, port: UInt16, timeout: Double) async throws -> Int32 {
        let addresses = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<[Address], any Error>) in
            DispatchQueue.global().async { continuation.resume(with: Result { try resolve(host: host, port: port) }) }
        }
        var failure = Errno(rawValue: ECONNREFUSED)
        for address in addresses {
            let fd = socket(address.family, address.type | LibC.socketCloseOnExec, address.proto)
            guard fd >= 0 else {
                failure = lastError
                continue
            }
            noSignalOnWrite(fd)
            do {
                try setNonBlocking(fd)
                if address.connect(fd) != 0 {
                    let error = lastError
                    guard error.rawValue == EINPROGRESS || error.rawValue == EINTR else { throw error }
                    guard await ready(fd, writable: true, seconds: timeout) else { throw Errno(rawValue: ETIMEDOUT) }
                    var pending: Int32 = 0
                    var size = socklen_t(MemoryLayout<Int32>.size)
                    guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &pending, &size) == 0 else { throw lastError }
                    if pending != 0 { throw Errno(rawValue: pending) }
                }
                let flags = fcntl(fd, F_GETFL)
                guard flags >= 0, fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0 else { throw lastError }
                setTimeouts(fd, seconds: timeout)
                setNoDelay(fd)
                return fd
            } catch let error as Errno {
                failure = error
                _ = LibC.close(fd)
            }
        }
        throw failure
    }

    /// Sends every byte, awaiting the socket whenever it is full: each wait at most `seconds`, and none past
    /// `deadline` (`DispatchTime` uptime in ns) when one is given.
    /// - Throws: ``Errno`` (`ETIMEDOUT`: the peer took nothing for `seconds`, or the deadline passed; `EPIPE`,
    ///   `ECONNRESET`: it is gone).
    public static func sendAwaiting(
        _ fd: Int32, _ bytes: [UInt8], seconds: Double, until deadline: UInt64? = nil
    ) async throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { raw in
                LibC.send(fd, raw.baseAddress! + offset, raw.count - offset, LibC.sendFlags | Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                offset += count
                continue
            }
            let error = count < 0 ? lastError : Errno(rawValue: EPIPE)
            if error.rawValue == EINTR { continue }
            guard error.rawValue == EAGAIN || error.rawValue == EWOULDBLOCK else { throw error }
            var wait = seconds
            if let deadline {
                let now = DispatchTime.now().uptimeNanoseconds
                guard now < deadline else { throw Errno(rawValue: ETIMEDOUT) }
                wait = min(seconds, Double(deadline - now) / 1e9)
            }
            guard await ready(fd, writable: true, seconds: wait) else { throw Errno(rawValue: ETIMEDOUT) }
        }
    }

    /// Reads what arrives (at most `maximum` bytes), awaiting the socket for at most `seconds`.
    /// - Returns: the bytes read; none at end of stream.
    /// - Throws: ``Errno`` (`ETIMEDOUT`: nothing arrived in time).
    public static func receiveAwaiting(_ fd: Int32, maximum: Int, seconds: Double) async throws -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: max(1, maximum))
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count >= 0 {
                chunk.removeLast(chunk.count - count)
                return chunk
            }
            let error = lastError
            if error.rawValue == EINTR { continue }
            guard error.rawValue == EAGAIN || error.rawValue == EWOULDBLOCK else { throw error }
            guard await ready(fd, seconds: seconds) else { throw Errno(rawValue: ETIMEDOUT) }
        }
    }

    /// A wait's outcome, decided by whichever of the event and the timer comes first.
    private final class Outcome: Sendable {
        let value = Mutex<Bool?>(nil)
        /// Records `ready` unless the outcome is decided already. - Returns: whether this call decided it.
        func decide(_ ready: Bool) -> Bool {
            value.withLock { value in
                guard value == nil else { return false }
                value = ready
                return true
            }
        }
    }

}
