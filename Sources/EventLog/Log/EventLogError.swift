import Platform

/// An error from the EventLog engine: a stable code, a human description, and where it happened.
public struct EventLogError: Error, Sendable, CustomStringConvertible, Equatable {
    /// A stable, machine-readable error kind.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Another writer holds the log's lock.
        public static let locked = Code(rawValue: "locked")
        /// The file holds damage that is not a torn tail; nothing was changed.
        public static let corrupted = Code(rawValue: "corrupted")
        /// A system call failed.
        public static let io = Code(rawValue: "io")
        /// An earlier write or sync failed; the log refuses appends until it is reopened.
        public static let failedState = Code(rawValue: "failed_state")
        /// The log directory or file does not exist.
        public static let notFound = Code(rawValue: "not_found")
        /// The log was opened read-only, or is closed.
        public static let notWritable = Code(rawValue: "not_writable")
        /// A caller passed something the format cannot hold (too large a payload, type 0, …).
        public static let invalidArgument = Code(rawValue: "invalid_argument")
        /// The files are protected while the device is locked (iOS data protection): retry once it is unlocked.
        public static let protectedDataUnavailable = Code(rawValue: "protected_data_unavailable")
    }

    /// What kind of error this is.
    public var code: Code
    /// What happened, in words; never contains payload bytes.
    public var message: String
    /// The byte offset in the log file the error concerns, if any.
    public var offset: Int64?
    /// The sequence number the error concerns (for corruption: the one expected at `offset`), if any.
    public var seq: UInt64?
    /// The underlying system error, if any.
    public var errno: Errno?
    /// For ``Code/locked``: the pid written in the lock file by the writer that holds it, when known.
    public var lockHolderPID: Int32?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, offset: Int64? = nil, seq: UInt64? = nil,
        errno: Errno? = nil, lockHolderPID: Int32? = nil
    ) {
        self.code = code
        self.message = message
        self.offset = offset
        self.seq = seq
        self.errno = errno
        self.lockHolderPID = lockHolderPID
    }

    public var description: String {
        var text = message
        if let offset { text += " at byte offset \(offset)" }
        if let seq { text += " (seq \(seq))" }
        if let errno { text += ": \(errno)" }
        return text
    }

    static func io(_ what: String, _ errno: Errno, offset: Int64? = nil) -> EventLogError {
        EventLogError(.io, what, offset: offset, errno: errno)
    }
}

/// Runs `body`, turning a thrown ``Errno`` into an ``EventLogError`` with code `io`.
@inline(__always)
func wrapIO<T>(_ what: @autoclosure () -> String, _ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as Errno { throw EventLogError.io(what(), error) }
}
