import MoodLedger

extension SyncEngine {
    /// The header in which the reference server names the identity of the account it answered for.
    static let accountHeader = "moodledger-account"

    /// The accounts the remote's answers named since the ledger last recorded one, and the latest of them.
    struct HeardAccounts: Sendable {
        var names: Set<String> = []
        var latest: String?
    }

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

    /// What the accounts heard since the last call mean against `state`, as events to append after the outcomes
    /// being recorded (`Specs/sync.md`, *The account*): nothing when the server named none or the recorded one; the
    /// account recorded when none was; and when another account answered — the one this device synced with was
    /// erased and created again — every record the old account acknowledged is re-queued (sent again, as a create,
    /// in this run), and the cursor goes back to 0, as for a server that went back.
    /// - Parameter delivered: entries whose delivery is recorded just before these events (a batch's outcomes):
    ///   re-queued too when the account changed, since which account took them is not known.
    /// - Returns: the events, and the reason when the account changed.
    func accountEvents(in state: LedgerState, delivered: [EntryID] = []) -> (events: [MoodEvent], changed: String?) {
        let heard = heardAccounts.withLock { heard -> HeardAccounts in
            defer { heard = HeardAccounts() }
            return heard
        }
        guard let latest = heard.latest else { return ([], nil) }
        let progress = state.outbox.progress(.backend)
        guard let recorded = progress.account else {
            if heard.names.count == 1 {
                return (
                    [
                        .syncPulled(
                            SyncPull(
                                cursor: progress.cursor, serverRevision: progress.serverRevision, applied: 0,
                                account: latest))
                    ], nil
                )
            }
            // Two accounts already in this run: which one acknowledged what is unknown, so as below.
            let reason = "the server's account changed during the run"
            return (requeueAll(in: state, delivered: delivered, account: latest, reason: reason), reason)
        }
        guard heard.names != [recorded] else { return ([], nil) }
        let reason =
            "the server answers for another account than the one this device synced with (erased and created again?)"
        return (requeueAll(in: state, delivered: delivered, account: latest, reason: reason), reason)
    }

    private func requeueAll(
        in state: LedgerState, delivered: [EntryID], account: String, reason: String
    ) -> [MoodEvent] {
        var ids = Set(delivered.filter { state.entries[$0] != nil })
        for (key, record) in state.outbox.records
        where key.destination == .backend && record.remoteID != nil && state.entries[key.entryID] != nil {
            ids.insert(key.entryID)
        }
        var events = ids.sorted().map { MoodEvent.syncRequeued($0, .backend, reason: reason + ": sent again") }
        events.append(
            .syncPulled(
                SyncPull(cursor: 0, serverRevision: 0, applied: 0, serverWentBack: true, account: account)))
        return events
    }
}
