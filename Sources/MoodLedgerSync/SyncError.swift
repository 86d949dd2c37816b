import Foundation  // LocalizedError: what an app's alert shows.

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
        /// The app's credentials provider failed (its own error is ``SyncError/underlying``).
        case credentials
    }

    /// The kind.
    public var code: Code
    /// What happened; never contains credentials or notes.
    public var message: String

    /// The error the app's credentials provider threw, for ``Code/credentials``.
    public var underlying: (any Error)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    public var description: String { message }
}

extension SyncError: LocalizedError {
    /// A sentence for an alert: what stopped the sync, never a credential or a note.
    public var errorDescription: String? {
        switch code {
        case .config: return "Sync is not set up: \(message)."
        case .unauthorized: return "The server did not accept your sign-in: \(message)."
        case .unavailable: return "The server could not be reached: \(message)."
        case .untrusted: return "The server's identity could not be verified: \(message)."
        case .credentials: return "Your sign-in could not be read: \(message)."
        }
    }

    /// What the user can do about it.
    public var recoverySuggestion: String? {
        switch code {
        case .config: return "Choose a server in the app's settings."
        case .unauthorized, .credentials: return "Sign in again."
        case .unavailable: return "Check the connection; your entries are kept here and sent later."
        case .untrusted: return "Nothing was sent. Check the server's address and certificate."
        }
    }
}
