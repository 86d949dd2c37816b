/// Why a sync run could not start or had to stop (per-item failures are outbox state, not errors).
public struct SyncError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable {
        /// No remote configured, or bad credentials configuration.
        case config
        /// The server refused the credentials twice (after one refresh).
        case unauthorized
        /// The remote did not answer a question the run needed answered before sending anything.
        case unavailable
        /// The remote's TLS certificate or host name was refused: never retried as transient, never bypassed.
        case untrusted
    }

    /// The kind.
    public var code: Code
    /// What happened; never contains credentials or notes.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
