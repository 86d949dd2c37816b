import Dispatch
import HTTPWire
import MoodLedger
import Synchronization

/// The answer to one request, or how the exchange failed.
public enum SyncExchange: Sendable {
    case response(status: Int, headers: [(name: String, value: String)], body: [UInt8])
    /// No response: a network error or a timeout (the request may or may not have been applied).
    case failure(kind: String, message: String)
}

/// Sends requests to a backend; tests and `--dry-run` put their own in its place.
///
/// A transport implements ``exchange(_:credentials:)`` (awaited: a run's requests wait on their sockets, not on
/// threads), ``perform(_:credentials:)`` (blocking), or both; each has a default that calls the other.
public protocol SyncTransport: Sendable {
    /// Performs one request with these credentials, blocking the calling thread until it is answered.
    func perform(_ request: SyncRequest, credentials: SyncCredentials) -> SyncExchange
    /// Performs one request with these credentials, awaiting the answer without holding a thread. A sync run sends
    /// every request this way.
    func exchange(_ request: SyncRequest, credentials: SyncCredentials) async -> SyncExchange
    /// What carries the requests, in words (`HTTP/1.1 over a socket`, `HTTPS via URLSession, TLS 1.3`): recorded with
    /// each batch of attempts, told by `sync explain`.
    var carrier: String { get }
}

extension SyncTransport {
    /// A transport that does not say: `HTTP`.
    public var carrier: String { "HTTP" }

    /// The blocking form of a transport that only awaits: its ``exchange(_:credentials:)``, run on an executor of
    /// its own while the calling thread waits.
    public func perform(_ request: SyncRequest, credentials: SyncCredentials) -> SyncExchange {
        (try? RunExecutor.blocking { await exchange(request, credentials: credentials) })
            ?? .failure(kind: "network", message: "the request was not sent")
    }

    /// The awaited form of a transport that only blocks (a test's, answering at once): its
    /// ``perform(_:credentials:)``, called on the run's own executor.
    public func exchange(_ request: SyncRequest, credentials: SyncCredentials) async -> SyncExchange {
        perform(request, credentials: credentials)
    }
}

/// HTTP/1.1 over keep-alive connections to one remote, pooled so several requests are in flight at once.
// @unchecked Sendable: the URL and timeout never change; idle connections live in a Mutex-guarded pool and a
// connection is used by one request at a time, taken out of the pool whole.
public final class HTTPTransport: SyncTransport, @unchecked Sendable {
    private let url: RemoteURL
    public var carrier: String { "HTTP/1.1 over a socket" }
    private let timeoutSeconds: Double
    private let pool = Mutex<[HTTPConnection]>([])

    private let requestTimeoutSeconds: Double

    /// Creates a transport.
    /// - Parameters:
    ///   - url: the remote.
    ///   - timeout: seconds one read or send may wait (``SyncLimits/readSeconds``).
    ///   - requestTimeout: seconds from connecting to the answer's last byte (``SyncLimits/requestSeconds``).
    public init(
        url: RemoteURL, timeout: Double = SyncLimits.readSeconds, requestTimeout: Double = SyncLimits.requestSeconds
    ) {
        self.url = url
        self.timeoutSeconds = timeout
        self.requestTimeoutSeconds = requestTimeout
    }

    /// Sends one request on a pooled connection (or a new one), awaiting its socket: no thread waits for the
    /// answer.
    public func exchange(_ request: SyncRequest, credentials: SyncCredentials) async -> SyncExchange {
        let bytes: [UInt8]
        do { bytes = try encode(request, credentials: credentials) } catch {
            return .failure(kind: "network", message: "the request cannot be written: \(error.reason)")
        }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(requestTimeoutSeconds * 1e9)
        let limits = HTTPConnection.Limits(maximumBytes: request.maximumResponseBytes, deadline: deadline)
        // A pooled connection the server has since closed fails before any answer; one fresh retry is safe because
        // every write carries its Idempotency-Key.
        for attempt in 0..<2 {
            var pooled = attempt == 0 ? pool.withLock { $0.popLast() } : nil
            // A pooled connection is reused only when it is quiet: bytes that arrived since its last answer (a stray
            // second response) or its end mean it is discarded, so no answer is ever read as another request's.
            while let candidate = pooled, !candidate.quietForReuse {
                candidate.close()
                pooled = pool.withLock { $0.popLast() }
            }
            let connection: HTTPConnection
            if let pooled {
                connection = pooled
            } else {
                let left = Double(deadline &- min(deadline, DispatchTime.now().uptimeNanoseconds)) / 1e9
                do {
                    connection = try await HTTPConnection.connect(
                        host: url.host, port: url.port, timeout: max(0.001, min(timeoutSeconds, left)))
                } catch let error as HTTPConnection.Failure {
                    return .failure(kind: error.timedOut ? "timeout" : "network", message: error.what)
                } catch {
                    return .failure(kind: "network", message: "\(error)")
                }
            }
            do {
                try await connection.send(bytes, deadline: deadline)
                let response = try await connection.readResponse(head: request.method == "HEAD", limits: limits)
                // Only a response read exactly to its end, with nothing after it, leaves the connection usable: any
                // doubt closes it, so no later answer is ever taken for another request's.
                if connection.reusable {
                    pool.withLock { $0.append(connection) }
                } else {
                    connection.close()
                }
                return .response(status: response.status, headers: response.headers, body: response.body)
            } catch let error as HTTPConnection.Failure {
                connection.close()
                if pooled != nil && !error.timedOut && !error.limit { continue }
                return .failure(kind: error.timedOut ? "timeout" : "network", message: error.what)
            } catch {
                return .failure(kind: "network", message: "\(error)")
            }
        }
        return .failure(kind: "network", message: "the connection was closed")
    }

    /// The request's bytes, every field written by the shared codec: a value that could end its line (a CR or LF
    /// from a credential or a server's tag) is refused, never sent.
    private func encode(_ request: SyncRequest, credentials: SyncCredentials) throws(HTTPWireError) -> [UInt8] {
        let target = url.prefix + request.path
        guard target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPWireError(500, "the request target holds a character that must be percent-encoded")
        }
        var bytes = Array("\(request.method) \(target) HTTP/1.1\r\n".utf8)
        var fields: [(String, String)] = [
            ("Host", url.hostHeader), ("User-Agent", "moodledger-sync"), ("Accept", "application/json")
        ]
        fields += credentials.headers
        if let key = request.idempotencyKey { fields.append(("Idempotency-Key", key)) }
        if let tag = request.ifMatch { fields.append(("If-Match", tag)) }
        if let replaces = request.replaces { fields.append(("MoodLedger-Replaces", replaces)) }
        if let body = request.body {
            fields += [("Content-Type", "application/json"), ("Content-Length", String(body.count))]
        } else if request.method != "GET" {
            fields.append(("Content-Length", "0"))
        }
        for (name, value) in fields { try HTTPFields.append(name: name, value: value, to: &bytes) }
        bytes += "\r\n".utf8
        if let body = request.body { bytes += body }
        return bytes
    }
}
