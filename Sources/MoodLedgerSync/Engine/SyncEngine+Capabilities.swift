import MoodLedger

extension SyncEngine {
    /// The header in which the reference server says what it can do beyond the seed documents (`Specs/server.md`).
    static let capabilitiesHeader = "moodledger-capabilities"

    /// Learns what the remote can do when the ledger does not know yet: one documented read (the dialect's list
    /// route, one entry), and the answer's `MoodLedger-Capabilities` header — a remote without it speaks exactly its
    /// seed's documents. Recorded as a `remote.configured` (same URL and dialect), so time travel shows what the
    /// client believed. Nothing is appended when the remote does not answer; the run stops with an error.
    /// - Throws: ``SyncError`` `unavailable` when the remote does not answer; `unauthorized` after two 401s.
    func learnCapabilities() throws {
        let current = dialect.remote
        guard current.capabilitySource == .unknown else { return }
        let learned = try probe(current.dialect)
        var config = current
        _ = try ledger.execute { state, _ in
            // Another process may have learned (or the user set) them meanwhile: theirs stands.
            guard let now = state.outbox.progress(.backend).remote, now.sameServer(as: current) else {
                return ([], .none, false)
            }
            if now.capabilitySource != .unknown {
                config = now
                return ([], .none, false)
            }
            config = RemoteConfig(url: current.url, dialect: current.dialect, capabilities: learned, source: .probed)
            return ([.remoteConfigured(config)], .none, false)
        }
        codec.withLock { $0 = SyncDialect(config) }
    }

    /// Before anything is appended to a run against an `https` remote whose capabilities are known: the dialect's
    /// documented read, answer discarded, so that a refused certificate or host name stops the run (exit 78) with
    /// nothing recorded, and the TLS version is known for the attempts' record.
    /// - Throws: ``SyncError`` `untrusted`.
    func checkTrust() throws {
        guard transport is URLSessionTransport, !trustChecked.withLock({ $0 }) else { return }
        let credentials = (try? currentCredentials(refresh: false)) ?? SyncCredentials()
        let request = SyncRequest(method: "GET", path: probePath, maximumResponseBytes: SyncLimits.probeAnswerBytes)
        if case .failure("tls", let message) = transport.perform(request, credentials: credentials) {
            throw SyncError(.untrusted, message)
        }
        trustChecked.withLock { $0 = true }
    }

    /// The dialect's documented list route, asked for one entry.
    var probePath: String {
        switch dialect.dialect {
        case .moodAPI: return "/api/v1/mood?limit=1"
        case .wellness: return "/api/v1/wellness/mood-entries?limit=1"
        case .progress: return "/api/v1/progress?type=mood_score"
        }
    }

    /// Asks the remote what it can do (nothing recorded here).
    func probe(_ dialect: RemoteDialect) throws -> RemoteCapabilities {
        var refreshed = false
        while true {
            let credentials = try currentCredentials(refresh: refreshed)
            let request = SyncRequest(
                method: "GET", path: probePath, maximumResponseBytes: SyncLimits.probeAnswerBytes)
            switch transport.perform(request, credentials: credentials) {
            case .failure("tls", let message):
                throw SyncError(.untrusted, message)
            case .failure(let kind, let message):
                throw SyncError(.unavailable, "could not ask the remote what it can do: \(kind): \(message)")
            case .response(401, _, let body):
                if refreshed {
                    throw SyncError(
                        .unauthorized,
                        "the server refused the credentials (HTTP 401: "
                            + "\(SyncPolicy.serverMessage(body) ?? "unauthorized")); check MOODLEDGER_API_KEY and "
                            + "MOODLEDGER_TOKEN or --credentials FILE")
                }
                refreshed = true
            case .response(let status, let headers, let body):
                trustChecked.withLock { $0 = true }
                if let header = headers.first(where: { $0.name.lowercased() == Self.capabilitiesHeader }) {
                    var result: RemoteCapabilities = []
                    for name in header.value.split(separator: ",") {
                        let trimmed = String(name.filter { $0 != " " && $0 != "\t" })
                        if let known = RemoteCapabilities.named.first(where: { $0.name == trimmed }) {
                            result.insert(known.capability)
                        }
                    }
                    return result.intersection(.ceiling(dialect))
                }
                // 408, 429, 5xx and redirects say nothing about the remote (a redirect is not followed: a proxy's
                // login page or a moved server is no seed backend's answer): ask again next run. Anything else is
                // its answer.
                if [408, 429].contains(status) || status >= 500 || (300..<400).contains(status) {
                    throw SyncError(
                        .unavailable,
                        "could not ask the remote what it can do: HTTP \(status)"
                            + (SyncPolicy.serverMessage(body).map { ": \($0)" } ?? ""))
                }
                return .seed(dialect)
            }
        }
    }
}
