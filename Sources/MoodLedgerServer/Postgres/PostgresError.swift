/// A failure talking to PostgreSQL: the server's own error (with its SQLSTATE), a connection that could not be made
/// or was lost, a refused setting, or a peer that broke the protocol. Its description names the host, the SQLSTATE and
/// the server's message, never a parameter's value (they may be a user's notes).
public struct PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure.
    public enum Kind: String, Sendable {
        /// No server could be reached or the connection was lost: retrying later may succeed.
        case unavailable = "postgres_unavailable"
        /// The server answered with an error (``sqlState`` says which).
        case server = "postgres_error"
        /// The server refused the credentials, or asked for a method this client does not speak.
        case authentication = "postgres_authentication"
        /// A connection setting this client refuses (`sslmode=require`: there is no TLS library here).
        case configuration = "postgres_configuration"
        /// The peer sent bytes that are not the protocol.
        case protocolViolation = "postgres_protocol"
    }

    /// What kind of failure.
    public var kind: Kind
    /// The server's SQLSTATE (`23505` a unique violation, `57P01` an administrator's shutdown…), when it sent one.
    public var sqlState: String?
    /// A sentence a person can read.
    public var message: String
    /// Whether a commit was under way when the connection was lost: the change may have been made or not, and only
    /// reading the rows again (or replaying the request's Idempotency-Key) tells.
    public var outcomeUnknown = false
    /// For a server's error in a pipeline: the index of the statement it answered (the statements before it had
    /// completed, within the transaction it rolled back); nil for an error at `COMMIT` or outside a pipeline.
    public var failedStatement: Int?

    /// The error's code, as the server's and the CLI's errors have one.
    public var code: String { kind.rawValue }

    /// Creates an error.
    public init(_ kind: Kind, _ message: String, sqlState: String? = nil) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
    }

    public var description: String {
        "\(code)\(sqlState.map { " (SQLSTATE \($0))" } ?? ""): \(message)"
    }

    /// Whether the database is away rather than the request wrong: a connection lost or refused, a server shutting
    /// down or starting, a standby that cannot take writes. A request that meets one is answered 503 with
    /// `Retry-After`, and the connection is not reused.
    public var isUnavailable: Bool {
        if kind == .unavailable { return true }
        guard kind == .server, let state = sqlState else { return false }
        // Class 08: connection exceptions; 57P01–57P03: admin shutdown, crash shutdown, cannot connect now;
        // 25006: a read-only transaction (a standby, or a primary demoted under the node); 53300: too many
        // connections; 40001/40P01: serialization failure and deadlock (retrying is what they ask for).
        return state.hasPrefix("08") || ["57P01", "57P02", "57P03", "25006", "53300", "40001", "40P01"].contains(state)
    }

    /// Whether this is a unique violation (SQLSTATE 23505): another writer took the row first.
    public var isUniqueViolation: Bool { kind == .server && sqlState == "23505" }
}
