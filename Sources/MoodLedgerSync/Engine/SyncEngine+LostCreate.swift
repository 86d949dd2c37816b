import MoodLedger

extension SyncEngine {
    /// Before a create is sent again to a seed backend that assigns its own ids (`wellness`, `progress`): an earlier
    /// attempt whose answer was lost (a reset, a timeout — perhaps followed by other failures) may have made the
    /// record, and a seed backend may have forgotten the key since (it keeps none at all, or for a day). The list route is read for
    /// the entry's days; a record with the same instant (to the second), the same score or valence and the same notes
    /// is the one the lost attempt made, and is taken as delivered instead of making a second (`Specs/sync.md`,
    /// *A create whose answer was lost*); a record no entry here names with the same instant but other content (the
    /// entry was edited since) is that record too, and is sent the current content as an update. Any failure to look
    /// leaves the create to be sent as before.
    /// - Returns: the verdict when the record was found, else `nil`.
    func findLostCreate(_ item: Due, entry: MoodEntry) -> SyncVerdict? {
        guard item.operation == .create, item.attempts > 0, dialect.dialect != .moodAPI else { return nil }
        let day = LocalDate(daysSinceEpoch: Int32(entry.loggedAt.milliseconds.floorDivided(by: 86_400_000)))
        let from = LocalDate(daysSinceEpoch: day.daysSinceEpoch - 1)
        let to = LocalDate(daysSinceEpoch: day.daysSinceEpoch + 1)
        let query =
            dialect.dialect == .progress
            ? "?type=mood_score&from=\(from)&to=\(to)" : "?from=\(from)&to=\(to)&limit=100"
        guard let credentials = try? currentCredentials(refresh: false),
            case .response(200, _, let body) = ask(
                SyncRequest(
                    method: "GET", path: dialect.collection + query, maximumResponseBytes: SyncLimits.probeAnswerBytes),
                credentials: credentials),
            let json = try? JSONParser.parse(String(decoding: body, as: UTF8.self))
        else { return nil }
        let records = json["data"]?.arrayValue ?? json["data"]?["entries"]?.arrayValue ?? []
        let second = entry.loggedAt.milliseconds.floorDivided(by: 1000)
        // Ids some entry here already names are never another's.
        let named = ledger.read { state in
            Set(state.outbox.records.compactMap { $0.key.destination == .backend ? $0.value.remoteID : nil })
        }
        var edited: String?
        for record in records {
            guard let id = record["id"]?.stringValue, SyncPolicy.isUsableRemoteID(id), !named.contains(id),
                let at = record["logged_at"]?.stringValue.flatMap(ISO8601.parse),
                at.milliseconds.floorDivided(by: 1000) == second
            else { continue }
            let same: Bool
            if dialect.dialect == .progress {
                same = record["quantity"]?.doubleValue == Double(entry.enteredScore ?? entry.score ?? 5)
            } else {
                same =
                    record["valence"]?.doubleValue.map { abs($0 - (SyncDialect.valence(entry) ?? 0)) < 1e-6 } ?? false
            }
            if same && (record["notes"]?.stringValue ?? nil) == entry.notes {
                return .delivered(remoteID: id, revision: 0)
            }
            // The same instant, content since edited here: the lost attempt's record, given the current content.
            if edited == nil { edited = id }
        }
        guard let edited, dialect.remote.has(.update) else { return nil }
        var update = item
        update.operation = .update
        update.remoteID = edited
        return exchange(.update, item: update, entry: entry, key: "\(item.entryID).found.\(edited)")
    }
}
