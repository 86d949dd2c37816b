#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#else
    #error("EventLog needs Darwin or Glibc")
#endif

/// A POSIX error number, as returned by a failed system call.
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The raw `errno` value.
    public var rawValue: Int32

    /// Creates an error from a raw `errno` value.
    /// - Parameter rawValue: the value of `errno` after the failed call.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The error of the most recent failed system call on this thread.
    static var current: Errno { Errno(rawValue: errno) }

    /// The system's text for this error, e.g. "No space left on device".
    public var description: String {
        guard let text = strerror(rawValue) else { return "errno \(rawValue)" }
        return String(cString: text)
    }

    public static let interrupted = Errno(rawValue: EINTR)
    public static let ioError = Errno(rawValue: EIO)
    public static let noSpace = Errno(rawValue: ENOSPC)
    public static let noSuchFile = Errno(rawValue: ENOENT)
    public static let fileExists = Errno(rawValue: EEXIST)
    public static let wouldBlock = Errno(rawValue: EWOULDBLOCK)
    public static let permissionDenied = Errno(rawValue: EACCES)
    /// The operation is not permitted to this process (`EPERM`).
    public static let notPermitted = Errno(rawValue: EPERM)
    public static let outOfMemory = Errno(rawValue: ENOMEM)
    /// The process (`EMFILE`) or the system (`ENFILE`) has no descriptor left.
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    public static let tooManyOpenFilesInSystem = Errno(rawValue: ENFILE)
    /// The reading end of a pipe or socket is gone (`EPIPE`).
    public static let brokenPipe = Errno(rawValue: EPIPE)
    /// A peer reset the connection.
    public static let connectionReset = Errno(rawValue: ECONNRESET)

    /// Whether a blocking socket call gave up at its timeout (or a connect is still in progress when it did).
    public var isTimeout: Bool { [EAGAIN, EWOULDBLOCK, EINPROGRESS, ETIMEDOUT].contains(rawValue) }
}
