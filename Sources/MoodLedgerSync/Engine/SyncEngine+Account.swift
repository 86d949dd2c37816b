import MoodLedger

extension SyncEngine {
    /// The header in which the reference server names the identity of the account it answered for.
    static let accountHeader = "moodledger-account"

    /// Notes the account an answer names, if it names a usable one.
    func hearAccount(_ headers: [(name: String, value: String)]) {
        guard let value = headers.first(where: { $0.name.lowercased() == Self.accountHeader })?.value,
            SyncPull.isUsableAccount(value)
        else { return }
        heardAccounts.withLock {
            $0.names.insert(value)
            $0.latest = value
        }
    }

    /// The accounts heard since the last call, forgotten here: what the planner's
    /// ``SyncPlanner/accountEvents(_:in:delivered:)`` judges against the recorded one.
    func takeHeardAccounts() -> SyncPlanner.HeardAccounts {
        heardAccounts.withLock { heard in
            defer { heard = SyncPlanner.HeardAccounts() }
            return heard
        }
    }
}
