import MoodLedger

extension SyncEngine {
    /// Before a create is sent again to a seed backend that assigns its own ids (`wellness`, `progress`), when the
    /// previous attempt's answer was lost (no status: a reset, a timeout): that attempt may have made the record, and
    /// a seed backend may have forgotten the key since (it keeps none at all, or for a day). The list route is read for
    /// the entry's days; a record with the same instant (to the second), the same score or valence and the same notes
    /// is the one the lost attempt made, and is taken as delivered instead of making a second (`Specs/sync.md`,
    /// *A create whose answer was lost*). Any failure to look leaves the create to be sent as before.
    /// - Returns: the verdict when the record was found, else `nil`.
    func findLostCreate(_ item: Due, entry: MoodEntry) -> SyncVerdict? {
        guard item.operation == .create, item.attempts > 0, dialect.dialect != .moodAPI else { return nil }
        let unknown = ledger.read { state -> Bool in
            guard let record = state.outbox.record(OutboxKey(entryID: item.entryID, destination: .backend)) else {
                return false
            }
            return record.lastStatus == nil && record.lastError != nil
        }
        guard unknown else { return nil }
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
        for record in records {
            guard let id = record["id"]?.stringValue, SyncPolicy.isUsableRemoteID(id),
                let at = record["logged_at"]?.stringValue.flatMap(ISO8601.parse),
                at.milliseconds.floorDivided(by: 1000) == second,
                (record["notes"]?.stringValue ?? nil) == entry.notes
            else { continue }
            let same: Bool
            if dialect.dialect == .progress {
                same = record["quantity"]?.doubleValue == Double(entry.enteredScore ?? entry.score ?? 5)
            } else {
                same =
                    record["valence"]?.doubleValue.map { abs($0 - (SyncDialect.valence(entry) ?? 0)) < 1e-6 } ?? false
            }
            if same { return .delivered(remoteID: id, revision: 0) }
        }
        return nil
    }
}

extension Int64 {
    /// The quotient rounded toward negative infinity (days and seconds before 1970 included).
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
