import Dispatch
import Foundation
import MoodLedger
import Platform
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Security)
    import Security
#endif

/// HTTPS (and HTTP) through Foundation's `URLSession`: native on Apple platforms, `FoundationNetworking` (libcurl)
/// on Linux. `https://` remotes use it; the dialects, keys, `If-Match`, retries and events are the same as over
/// ``HTTPTransport`` (`Specs/sync.md`, *Transports*).
///
/// Trust: the system's store, or, on Apple platforms, a CA certificate the user names (`--ca-file`). A certificate
/// or host-name failure is a ``SyncExchange/failure(kind:message:)`` of kind `tls` naming the host and the reason:
/// never retried as transient, never bypassed.
// @unchecked Sendable: `URLSession` is documented thread-safe; the per-task answers live in the delegate, under a
// Mutex; everything else is immutable.
public final class URLSessionTransport: SyncTransport, @unchecked Sendable {
    private let url: RemoteURL
    private let session: URLSession
    private let relay: Relay
    private let requestTimeout: Double

    /// What carried the requests, for `sync explain` and the run's report: `HTTPS via URLSession, TLS 1.3`.
    public var carrier: String {
        let version = relay.tlsVersion.withLock { $0 }
        return (url.secure ? "HTTPS" : "HTTP") + " via URLSession"
            + (url.secure ? ", " + (version ?? "TLS (version not reported on this platform)") : "")
    }

    /// Creates a transport.
    /// - Parameters:
    ///   - url: the remote.
    ///   - configuration: the app's own session configuration (proxies, cellular policy, timeouts); its timeouts are
    ///     capped at the client's limits (``SyncLimits``). Default: an ephemeral configuration (no cookies, no cache).
    ///   - caFile: a PEM or DER CA certificate trusted for this remote besides the system's store (Apple platforms).
    ///   - requestTimeout: seconds from connecting to the answer's last byte.
    /// - Throws: ``SyncError`` `config` when `caFile` cannot be read or is no certificate, or on a platform where
    ///   URLSession offers no trust evaluation (Linux: add the CA to the system's store instead).
    public init(
        url: RemoteURL, configuration: URLSessionConfiguration = .ephemeral, caFile: String? = nil,
        requestTimeout: Double = SyncLimits.requestSeconds
    ) throws(SyncError) {
        self.url = url
        self.requestTimeout = requestTimeout
        #if canImport(FoundationNetworking)
            // URLSession here is libcurl, which the `moodledger` binary opens on first use rather than at start: a
            // machine without it gets this error, not a failure inside FoundationNetworking.
            if let reason = SharedLibrary.open("libcurl.so.4") {
                throw SyncError(.config, "https:// needs libcurl (Debian: libcurl4), which cannot be opened: \(reason)")
            }
        #endif
        var anchors: [Data] = []
        if let caFile {
            anchors = try Self.certificates(at: caFile)
            #if canImport(Security)
                // Every certificate is read now: one Security cannot read refuses the file at once, not at the first
                // handshake as a misleading "not trusted".
                for (index, der) in anchors.enumerated() where SecCertificateCreateWithData(nil, der as CFData) == nil {
                    throw SyncError(
                        .config, "certificate \(index + 1) of \(caFile) is not one this system can read (DER X.509)")
                }
            #else
                throw SyncError(
                    .config,
                    "--ca-file is not available on this platform: URLSession here (libcurl) trusts the system's store "
                        + "only; add the CA there (update-ca-certificates)")
            #endif
        }
        let copy = configuration.copy() as? URLSessionConfiguration ?? .ephemeral
        copy.timeoutIntervalForRequest = min(copy.timeoutIntervalForRequest, SyncLimits.readSeconds)
        copy.timeoutIntervalForResource = min(copy.timeoutIntervalForResource, requestTimeout)
        copy.httpCookieStorage = nil
        copy.urlCache = nil
        relay = Relay(host: url.host, anchors: anchors)
        session = URLSession(configuration: copy, delegate: relay, delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    /// Sends one request through the session, awaiting its answer: no thread waits for it.
    public func exchange(_ request: SyncRequest, credentials: SyncCredentials) async -> SyncExchange {
        guard let target = URL(string: url.description + request.path) else {
            return .failure(kind: "network", message: "the request's URL is not valid")
        }
        var outgoing = URLRequest(url: target)
        outgoing.httpMethod = request.method
        outgoing.timeoutInterval = min(requestTimeout, SyncLimits.readSeconds)
        outgoing.setValue("application/json", forHTTPHeaderField: "Accept")
        outgoing.setValue("moodledger-sync", forHTTPHeaderField: "User-Agent")
        for (name, value) in credentials.headers { outgoing.setValue(value, forHTTPHeaderField: name) }
        if let key = request.idempotencyKey { outgoing.setValue(key, forHTTPHeaderField: "Idempotency-Key") }
        if let tag = request.ifMatch { outgoing.setValue(tag, forHTTPHeaderField: "If-Match") }
        if let replaces = request.replaces { outgoing.setValue(replaces, forHTTPHeaderField: "MoodLedger-Replaces") }
        #if canImport(FoundationNetworking)
            // libcurl re-sends a request whose reused connection died before any answer — and re-sends a POST's
            // Content-Length without its body (Foundation cannot rewind it), so the server waits for a body that
            // never comes. A connection used once is never reused, so nothing is ever re-sent behind the engine's
            // back: the engine's own retry, with the same Idempotency-Key, is the only one (`Specs/sync.md`,
            // *Transports*). Apple's URLSession rewinds bodies itself and keeps its connections.
            outgoing.setValue("close", forHTTPHeaderField: "Connection")
        #endif
        if let body = request.body {
            outgoing.setValue("application/json", forHTTPHeaderField: "Content-Type")
            outgoing.httpBody = Data(body)
        }
        let task = session.dataTask(with: outgoing)
        let waiter = relay.begin(task, limit: request.maximumResponseBytes)
        task.resume()
        // The whole request, from connecting to the last byte, within the deadline (a second beyond URLSession's
        // own resource timeout: that one answers first, with its own error).
        if await !waiter.wait(seconds: requestTimeout + 1) {
            // The request's own limit: a timeout, whatever URLSession then says of the cancelled task.
            relay.timedOut(task, after: requestTimeout)
            task.cancel()
            _ = await waiter.wait(seconds: 5)
        }
        return relay.finish(task, host: url.host)
    }

    /// A certificate file's DER certificates: every certificate of a PEM file, in order, or a DER file as it is.
    /// - Throws: ``SyncError`` `config` when the file cannot be read, holds no certificate, or holds a PEM block that
    ///   is not base64.
    static func certificates(at path: String) throws(SyncError) -> [Data] {
        guard let bytes = FileManager.default.contents(atPath: path), bytes.count <= 1 << 20 else {
            throw SyncError(.config, "cannot read the CA file \(path)")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.contains("-----BEGIN CERTIFICATE-----") else {
            guard bytes.first == 0x30 else { throw SyncError(.config, "\(path) holds no certificate (PEM or DER)") }
            return [bytes]
        }
        var found: [Data] = []
        var rest = text[...]
        while let begin = rest.range(of: "-----BEGIN CERTIFICATE-----") {
            guard let end = rest.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<rest.endIndex),
                let der = Data(
                    base64Encoded: String(rest[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }))
            else { throw SyncError(.config, "certificate \(found.count + 1) of \(path) is not readable PEM") }
            found.append(der)
            rest = rest[end.upperBound...]
        }
        return found
    }

    /// The session's delegate: each task's answer gathered within its byte budget, redirects refused, the server's
    /// trust evaluated (with the named CA on Apple platforms), the TLS version noted.
    // @unchecked Sendable: every mutable field is behind a Mutex; the rest is immutable.
    final class Relay: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        struct Answer {
            var response: HTTPURLResponse?
            var body = Data()
            var limit: Int
            var failure: (kind: String, message: String)?
            let done = Completion()
        }

        /// A task's end, awaited by the request that started it.
        final class Completion: Sendable {
            private struct State {
                var done = false
                var waiter: CheckedContinuation<Bool, Never>?
            }
            private let state = Mutex(State())

            /// Marks the task ended and resumes its waiter.
            func signal() {
                state.withLock { state in
                    state.done = true
                    defer { state.waiter = nil }
                    return state.waiter
                }?.resume(returning: true)
            }

            /// Waits at most `seconds` for the end. - Returns: whether it came.
            func wait(seconds: Double) async -> Bool {
                await withCheckedContinuation { continuation in
                    let done = state.withLock { state in
                        if !state.done { state.waiter = continuation }
                        return state.done
                    }
                    if done { return continuation.resume(returning: true) }
                    DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
                        state.withLock { state in
                            defer { state.waiter = nil }
                            return state.waiter
                        }?.resume(returning: false)
                    }
                }
            }
        }

        let host: String
        /// The CA certificates trusted besides the system's store (DER).
        let anchors: [Data]
        let answers = Mutex<[Int: Answer]>([:])
        let tlsVersion = Mutex<String?>(nil)
        /// Why trust was refused, for the task's error (URLSession's own error text is less precise).
        let refusal = Mutex<String?>(nil)

        init(host: String, anchors: [Data]) {
            self.host = host
            self.anchors = anchors
        }

        func begin(_ task: URLSessionTask, limit: Int) -> Completion {
            let answer = Answer(limit: limit)
            answers.withLock { $0[task.taskIdentifier] = answer }
            return answer.done
        }

        /// Marks a task cut by the request's deadline: its outcome is a timeout, not the cancellation that follows.
        func timedOut(_ task: URLSessionTask, after seconds: Double) {
            answers.withLock {
                guard $0[task.taskIdentifier]?.failure == nil else { return }
                $0[task.taskIdentifier]?.failure = (
                    "timeout", "\(host): timed out: the whole response did not arrive within \(Int(seconds)) s"
                )
            }
        }

        func finish(_ task: URLSessionTask, host: String) -> SyncExchange {
            guard let answer = answers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else {
                return .failure(kind: "network", message: "no answer")
            }
            if let failure = answer.failure { return .failure(kind: failure.kind, message: failure.message) }
            guard let response = answer.response else {
                return .failure(kind: "timeout", message: "timed out: the whole response did not arrive in time")
            }
            var headers: [(name: String, value: String)] = []
            for (name, value) in response.allHeaderFields {
                headers.append((String(describing: name), String(describing: value)))
            }
            return .response(status: response.statusCode, headers: headers, body: Array(answer.body))
        }

        func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
        ) {
            answers.withLock { $0[dataTask.taskIdentifier]?.response = response as? HTTPURLResponse }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            let over = answers.withLock { answers -> Bool in
                guard var answer = answers[dataTask.taskIdentifier] else { return false }
                answer.body.append(data)
                let over = answer.body.count > answer.limit
                if over {
                    answer.failure = (
                        "network", "the response is larger than the \(answer.limit) bytes this request allows"
                    )
                    answer.body = Data()
                }
                answers[dataTask.taskIdentifier] = answer
                return over
            }
            if over { dataTask.cancel() }
        }

        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
        ) {
            // Never followed: the answer is the redirect itself (`Specs/sync.md`, *HTTP and limits*).
            completionHandler(nil)
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
            let done = answers.withLock { answers -> Completion? in
                guard var answer = answers[task.taskIdentifier] else { return nil }
                if let error, answer.failure == nil {
                    answer.failure = Self.classify(error, host: host, refusal: refusal.withLock { $0 })
                }
                answers[task.taskIdentifier] = answer
                return answer.done
            }
            done?.signal()
        }

        func urlSession(
            _ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics
        ) {
            #if canImport(Security)
                if let version = metrics.transactionMetrics.last?.negotiatedTLSProtocolVersion {
                    let names: [tls_protocol_version_t: String] = [.TLSv12: "TLS 1.2", .TLSv13: "TLS 1.3"]
                    tlsVersion.withLock { $0 = names[version] ?? "TLS" }
                }
            #endif
        }

        #if canImport(Security)
            func urlSession(
                _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
                completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
            ) {
                guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
                    let trust = challenge.protectionSpace.serverTrust
                else {
                    completionHandler(.performDefaultHandling, nil)
                    return
                }
                func refuse(_ reason: String) {
                    refusal.withLock { $0 = reason }
                    completionHandler(.cancelAuthenticationChallenge, nil)
                }
                if !anchors.isEmpty {
                    let certificates = anchors.compactMap { SecCertificateCreateWithData(nil, $0 as CFData) }
                    let status = SecTrustSetAnchorCertificates(trust, certificates as CFArray)
                    guard status == errSecSuccess, SecTrustSetAnchorCertificatesOnly(trust, false) == errSecSuccess
                    else {
                        return refuse("the CA file's certificates could not be set as anchors (OSStatus \(status))")
                    }
                }
                guard SecTrustSetPolicies(trust, SecPolicyCreateSSL(true, host as CFString)) == errSecSuccess else {
                    return refuse("the TLS policy for \(host) could not be set")
                }
                var error: CFError?
                if SecTrustEvaluateWithError(trust, &error) {
                    completionHandler(.useCredential, URLCredential(trust: trust))
                } else {
                    // The evaluation's own reason (an unknown root, an expired certificate, a name mismatch, a
                    // missing serverAuth usage) and its code.
                    refuse(
                        error.map { "\(CFErrorCopyDescription($0) as String) (code \(CFErrorGetCode($0)))" }
                            ?? "not trusted")
                }
            }
        #endif

        /// An error as the engine reads it: `tls` (certificate or host name; never retried as transient),
        /// `timeout`, or `network`.
        static func classify(_ error: Error, host: String, refusal: String?) -> (kind: String, message: String) {
            let ns = error as NSError
            let text = ns.localizedDescription
            let tlsCodes: Set<Int> = [
                NSURLErrorSecureConnectionFailed, NSURLErrorServerCertificateHasBadDate,
                NSURLErrorServerCertificateUntrusted, NSURLErrorServerCertificateHasUnknownRoot,
                NSURLErrorServerCertificateNotYetValid, NSURLErrorClientCertificateRejected,
                NSURLErrorClientCertificateRequired
            ]
            // libcurl's texts on Linux: "SSL certificate problem: …", "SSL: no alternative certificate subject name
            // matches target host name …", "SSL peer certificate or SSH remote key was not OK".
            if tlsCodes.contains(ns.code) || refusal != nil || text.hasPrefix("SSL") || text.contains("certificate") {
                return ("tls", "the certificate of \(host) was refused: \(refusal ?? text)")
            }
            // A handshake that cannot succeed — a server that speaks only TLS 1.0 or 1.1, no cipher in common — is
            // the remote's configuration, not an outage: refused like a certificate (exit 78), never retried.
            let lowered = text.lowercased()
            let handshake = [
                "ssl routines", "wrong version number", "unsupported protocol", "protocol version", "tlsv1 alert",
                "no protocols available", "sslv3 alert handshake failure", "no shared cipher"
            ]
            if handshake.contains(where: lowered.contains) {
                return (
                    "tls",
                    "the TLS handshake with \(host) failed (its TLS version or ciphers are not accepted): \(text)"
                )
            }
            if ns.code == NSURLErrorTimedOut { return ("timeout", "\(host): timed out: \(text)") }
            return ("network", "\(host): \(text)")
        }
    }
}
