import Dispatch
import Platform
import Synchronization

/// At most `capacity` connections to PostgreSQL, reused: a caller borrows one for a unit of work and gives it back. A
/// connection that failed in a way that leaves it unknown (lost, out of step) is closed, not reused; an idle one whose
/// server went away (a restart, a failover) is noticed before it is lent and replaced by a fresh connection to
/// whichever host now takes writes.
public final class PostgresPool: Sendable {
    /// Where to connect.
    public let settings: PostgresSettings
    /// Most connections open at once.
    public let capacity: Int
    private let idle = Mutex<[PostgresConnection]>([])
    /// One permit per connection that may be lent.
    private let permits: DispatchSemaphore

    /// A pool over `settings` (nothing is connected until first use).
    public init(settings: PostgresSettings, capacity: Int = 16) {
        self.settings = settings
        self.capacity = max(1, capacity)
        permits = DispatchSemaphore(value: self.capacity)
    }

    /// Runs `body` with a connection of its own.
    /// - Throws: ``PostgresError`` `postgres_unavailable` when every connection stayed busy for the settings' timeout
    ///   or none could be made; what `body` throws.
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        guard permits.wait(timeout: .now() + settings.timeoutSeconds) == .success else {
            throw PostgresError(
                .unavailable, "all \(capacity) database connections stayed busy for \(settings.timeoutSeconds) s")
        }
        defer { permits.signal() }
        var connection: PostgresConnection?
        while let candidate = idle.withLock({ $0.popLast() }) {
            // An idle connection has nothing to say: a byte waiting is the server's farewell (a FATAL error before it
            // closes: a shutdown, a terminated backend) or its end of stream.
            if !Socket.isQuiet(candidate.fileDescriptor) {
                candidate.close()
            } else {
                connection = candidate
                break
            }
        }
        let lent = try connection ?? PostgresConnection.connect(settings) { SystemIO().randomBytes(18) }
        do {
            let result = try body(lent)
            giveBack(lent)
            return result
        } catch {
            if let failure = error as? PostgresError, failure.kind == .unavailable || failure.kind == .protocolViolation
            {
                lent.close()
            } else {
                giveBack(lent)
            }
            throw error
        }
    }

    private func giveBack(_ connection: PostgresConnection) {
        guard connection.isUsable else {
            connection.close()
            return
        }
        idle.withLock { $0.append(connection) }
    }

    /// Closes every idle connection (one lent now stays with its borrower, who gives it back).
    public func close() {
        let all = idle.withLock { idle in
            defer { idle.removeAll() }
            return idle
        }
        for connection in all { connection.close() }
    }
}
