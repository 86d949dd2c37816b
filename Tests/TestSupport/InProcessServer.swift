import Foundation
import MoodLedgerServer

/// The tests' one in-process `MoodServer`: started on a loopback port and run on a thread of its own until
/// ``stop()``, which also closes every ledger.
public final class InProcessServer: Sendable {
    /// The backend (its credentials, its pool).
    public let backend: MoodServer
    /// The HTTP server it answers through.
    public let server: HTTPServer
    private let done = DispatchSemaphore(value: 0)

    /// Starts a server with `configuration` (its port 0 picks a free one).
    /// - Throws: what `MoodServer.init` or `start()` throws.
    public init(_ configuration: MoodServer.Configuration) throws {
        backend = try MoodServer(configuration: configuration)
        server = try backend.start()
        let server = self.server
        let done = self.done
        Thread {
            server.run(grace: 2)
            done.signal()
        }.start()
    }

    /// The port it listens on.
    public var port: UInt16 { server.port }

    /// Stops accepting, finishes what is in flight, and closes the ledgers.
    public func stop() {
        server.stop()
        done.wait()
        backend.close()
    }
}
