import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// Standard output or standard error, written with `write(2)` so that a failed write is an answer, not a trap.
///
/// `FileHandle.write(_:)` stops the process when the write fails: a closed pipe, a full disk behind a redirect
/// (`2>/dev/full`), a descriptor the parent closed. A server would die on its next log line and a command would die
/// after it committed. Here a failed write drops the rest of that text, is counted, and the process goes on; the
/// caller decides what the failure means (a reading command exits 74, a command that committed keeps its exit code).
/// `SIGPIPE` must be ignored for `EPIPE` to arrive as an error (``Socket/ignoreSIGPIPE()``; the CLI and the server
/// both do).
public final class StandardStream: Sendable {
    /// The descriptor written to (1 or 2).
    public let descriptor: Int32
    private let failures = Atomic<Int>(0)
    private let lastFailure = Mutex<Errno?>(nil)

    /// Standard output (descriptor 1).
    public static let output = StandardStream(descriptor: 1)
    /// Standard error (descriptor 2).
    public static let error = StandardStream(descriptor: 2)

    /// A stream over `descriptor` (tests write to a pipe or `/dev/full`).
    public init(descriptor: Int32) { self.descriptor = descriptor }

    /// How many writes failed (each one's text was dropped from the first byte not written).
    public var failedWrites: Int { failures.load(ordering: .relaxed) }

    /// The error of the latest failed write, if any.
    public var lastError: Errno? { lastFailure.withLock { $0 } }

    /// Writes all of `text` as UTF-8, retrying `EINTR` and short writes.
    /// - Returns: whether every byte was written; on `false` the rest is dropped and the failure counted.
    @discardableResult
    public func write(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { write(UnsafeRawBufferPointer($0)) }
    }

    /// Writes every byte, retrying `EINTR` and short writes.
    /// - Returns: whether every byte was written; on `false` the rest is dropped and the failure counted.
    @discardableResult
    public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var done = 0
        while done < bytes.count {
            let count = LibC.write(descriptor, base + done, bytes.count - done)
            if count > 0 {
                done += count
                continue
            }
            if count < 0, errno == EINTR { continue }
            // 0 bytes written for a non-empty write, EPIPE, ENOSPC, EBADF, EIO, EAGAIN on a non-blocking descriptor:
            // the line is dropped, never retried forever.
            let error = count < 0 ? Errno.current : Errno.ioError
            failures.add(1, ordering: .relaxed)
            lastFailure.withLock { $0 = error }
            return false
        }
        return true
    }
}
