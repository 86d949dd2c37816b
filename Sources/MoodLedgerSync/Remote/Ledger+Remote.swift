import Foundation
import MoodLedger

extension Ledger {
    /// The backend the outbox is delivered to, if one is set.
    public var remote: RemoteConfig? { read { $0.outbox.progress(.backend).remote } }

    /// Sets the backend the outbox is delivered to (what `moodledger remote set` does): one `remote.configured`
    /// event, none when it is already the backend. Setting the same server again keeps what was learned about it;
    /// another server (URL or dialect) starts afresh: every entry is sent there as new. Credentials are never stored:
    /// the ``SyncEngine``'s provider gives them.
    /// - Parameters:
    ///   - url: the server's base URL (`http` or `https`, a host, an optional port and path prefix).
    ///   - dialect: the API it speaks; default: the reference `mood-api`.
    /// - Returns: the configuration now in force.
    /// - Throws: ``MoodError`` `invalid_input` (field `url`) for a URL that is not one; `EventLogError`.
    @discardableResult
    public func setRemote(_ url: URL, dialect: RemoteDialect = .moodAPI) throws -> RemoteConfig {
        try setRemote(url.absoluteString, dialect: dialect)
    }

    /// Sets the backend from its URL's text, as the `URL` form does.
    @discardableResult
    public func setRemote(_ url: String, dialect: RemoteDialect = .moodAPI) throws -> RemoteConfig {
        let parsed = try RemoteURL(url)
        var config = RemoteConfig(url: parsed.description, dialect: dialect)
        _ = try execute { state, _ in
            let current = state.outbox.progress(.backend).remote
            if let current, current.sameServer(as: config) { config = current }
            return (current == config ? [] : [.remoteConfigured(config)], .none, false)
        }
        return config
    }

    /// Removes the backend: nothing is delivered until one is set again, and what was delivered is forgotten (a
    /// backend set later, even the same one, is sent every entry as new). One event; none when no backend is set.
    /// - Throws: `EventLogError`.
    public func removeRemote() throws {
        _ = try execute { state, _ in
            guard let current = state.outbox.progress(.backend).remote else { return ([], .none, false) }
            return ([.remoteConfigured(RemoteConfig(url: "", dialect: current.dialect))], .none, false)
        }
    }

    /// Sets the backend without blocking the caller's executor. See the synchronous ``setRemote(_:dialect:)``.
    @discardableResult
    public func setRemote(_ url: URL, dialect: RemoteDialect = .moodAPI) async throws -> RemoteConfig {
        try await offload { try self.setRemote(url, dialect: dialect) }
    }

    /// Removes the backend without blocking the caller's executor. See ``removeRemote()``.
    public func removeRemote() async throws { try await offload { try self.removeRemote() } }
}
