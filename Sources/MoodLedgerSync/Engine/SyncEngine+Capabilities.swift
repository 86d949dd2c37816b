import MoodLedger

extension SyncEngine {
    /// The header in which the reference server says what it can do beyond the seed documents (`Specs/server.md`).
    static let capabilitiesHeader = "moodledger-capabilities"

    /// Learns what the remote can do when the ledger does not know yet: one documented read (the dialect's list
    /// route, one entry), and the answer's `MoodLedger-Capabilities` header — a remote without it speaks exactly its
    /// seed's documents. Recorded as a `remote.configured` (same URL and dialect), so time travel shows what the
    /// client believed. Nothing is appended when the remote does not answer; the run stops with an error.
    ///
    /// A probed remote is heard again on every answer of a run: one that carries the header with another set is
    /// recorded at the end of the run (``adoptHeardCapabilities()``), so one odd first answer — a missing route while
    /// a server is deployed — never downgrades a remote for good.
    /// - Throws: ``SyncError`` `unavailable` when the remote does not answer; `unauthorized` after two 401s.
    func learnCapabilities() async throws {
        let current = dialect.remote
        guard current.capabilitySource == .unknown else { return }
        let learned = try await probe(current.dialect)
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
    func checkTrust() async throws {
        guard transport is URLSessionTransport, !trustChecked.withLock({ $0 }) else { return }
        let credentials = (try? await currentCredentials(refresh: false)) ?? SyncCredentials()
        let request = SyncRequest(method: "GET", path: probePath, maximumResponseBytes: SyncLimits.probeAnswerBytes)
        if case .failure("tls", let message) = await transport.exchange(request, credentials: credentials) {
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
    func probe(_ dialect: RemoteDialect) async throws -> RemoteCapabilities {
        var refreshed = false
        while true {
            let credentials = try await currentCredentials(refresh: refreshed)
            let request = SyncRequest(
                method: "GET", path: probePath, maximumResponseBytes: SyncLimits.probeAnswerBytes)
            switch await ask(request, credentials: credentials) {
            case .failure("tls", let message):
                throw SyncError(.untrusted, message)
            case .failure(let kind, let message):
                throw SyncError(.unavailable, "could not ask the remote what it can do: \(kind): \(message)")
            case .response(401, _, let body):
                if refreshed {
                    throw SyncError(
                        .unauthorized,
                        "the server refused the credentials (HTTP 401: "
                            + "\(SyncPolicy.serverMessage(body) ?? "unauthorized")))")
                }
                refreshed = true
            case .response(let status, let headers, let body):
                trustChecked.withLock { $0 = true }
                if let said = Self.capabilities(in: headers) { return said.intersection(.ceiling(dialect)) }
                // A seed backend's own answer to its documented read — a 2xx JSON object, or a 4xx such as 400, 404
                // or 405 — says it speaks exactly its seed's documents. A redirect (not followed), 403 and 407 (a
                // proxy or a firewall), 408, 429, a 5xx, or a 2xx that is no JSON object (a proxy's login page) say
                // nothing about the remote: nothing is recorded, and the next run asks again.
                let isJSONObject: Bool = {
                    guard let json = try? JSONParser.parse(String(decoding: body, as: UTF8.self)),
                        case .object = json
                    else { return false }
                    return true
                }()
                let seedAnswer =
                    (200..<300).contains(status)
                    ? isJSONObject
                    : (400..<500).contains(status)
                        && ![403, 407, 408, 429].contains(status)
                guard seedAnswer else {
                    let location = headers.first { $0.name.lowercased() == "location" }.map {
                        " (to \(ConsoleText.escaped(String($0.value.prefix(200)))), not followed)"
                    }
                    throw SyncError(
                        .unavailable,
                        "could not ask the remote what it can do: HTTP \(status)\(location ?? "")"
                            + ((200..<300).contains(status)
                                ? ": the answer is not a JSON object"
                                : SyncPolicy.serverMessage(body).map { ": \($0)" } ?? ""))
                }
                return .seed(dialect)
            }
        }
    }

    /// What a `MoodLedger-Capabilities` header names (unknown names passed over), or `nil` without the header.
    static func capabilities(in headers: [(name: String, value: String)]) -> RemoteCapabilities? {
        guard let header = headers.first(where: { $0.name.lowercased() == capabilitiesHeader }) else { return nil }
        var result: RemoteCapabilities = []
        for name in header.value.split(separator: ",") {
            let trimmed = String(name.filter { $0 != " " && $0 != "\t" })
            if let known = RemoteCapabilities.named.first(where: { $0.name == trimmed }) {
                result.insert(known.capability)
            }
        }
        return result
    }

    /// Sends one request through the transport and hears the capabilities and the account its answer names, if any.
    func ask(_ request: SyncRequest, credentials: SyncCredentials) async -> SyncExchange {
        let exchange = await transport.exchange(request, credentials: credentials)
        if case .response(_, let headers, _) = exchange {
            if let said = Self.capabilities(in: headers) { heard.withLock { $0 = said } }
            hearAccount(headers)
        }
        return exchange
    }

    /// At the end of a run: a probed remote whose answers named another set than the one recorded (it answered its
    /// first probe without the header, or its software changed) is recorded with what it said. A set the user chose
    /// stands.
    func adoptHeardCapabilities() throws {
        guard let said = heard.withLock({ $0 }) else { return }
        let current = dialect.remote
        let learned = said.intersection(.ceiling(current.dialect))
        guard current.capabilitySource == .probed, learned != current.capabilities else { return }
        var config = current
        _ = try ledger.execute { state, _ in
            guard let now = state.outbox.progress(.backend).remote, now == current else { return ([], .none, false) }
            config = RemoteConfig(url: current.url, dialect: current.dialect, capabilities: learned, source: .probed)
            return ([.remoteConfigured(config)], .none, false)
        }
        codec.withLock { $0 = SyncDialect(config) }
    }
}
