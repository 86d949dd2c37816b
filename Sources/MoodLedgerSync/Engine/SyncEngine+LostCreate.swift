import MoodLedger

extension SyncEngine {
    /// Before a create is sent again to a seed backend that assigns its own ids (`wellness`, `progress`): an earlier
    /// attempt whose answer was lost (a reset, a timeout — perhaps followed by other failures) may have made the
    /// record, and a seed backend may have forgotten the key since (it keeps none at all, or for a day). The list route
    /// is read for the days of what earlier attempts sent; a record no entry here names that is exactly one of those
    /// versions (the same instant to the second, the same score or valence, the same notes) is the one a lost attempt
    /// made: taken as delivered when that version is the entry's current one, else sent the current content as an
    /// update (`Specs/sync.md`, *A create whose answer was lost*). Any failure to look leaves the create to be sent as
    /// before.
    /// A look that fails for a passing reason (the network, a 5xx, a redirect, a 429) sends nothing: the item is retried
    /// later. A remote whose list cannot answer at all (another 4xx) gets the create as before.
    /// - Parameter key: this attempt's key.
    /// - Returns: the verdict when the record was found or the look must be made again, else `nil`.
    func findLostCreate(_ item: Due, entry: MoodEntry, key: String) async -> SyncVerdict? {
        guard item.operation == .create, planner.needsSentVersions(item), !item.sent.isEmpty else { return nil }
        let id: String
        let version: MoodEntry
        switch await lookUpLostCreate(item.sent) {
        case .found(let found, let sent):
            (id, version) = (found, sent)
        case .none, .cannot:
            return nil
        case .failed(let reason):
            // Sent anyway, the create could make a second record beside the one a lost attempt made: later.
            return .retry(
                status: nil, error: "could not look for the record a lost create may have made: \(reason)",
                retryAfter: nil)
        }
        if RemoteEntry.sameContent(version, entry), version.loggedAt == entry.loggedAt {
            return .delivered(remoteID: id, revision: 0)
        }
        guard dialect.remote.has(.update) else { return nil }
        var update = item
        update.operation = .update
        update.remoteID = id
        // Under this attempt's key (new for every version of the entry): a found record given another version is
        // another request, never the replay of an earlier one.
        return await exchange(.update, item: update, entry: entry, key: "\(key).found")
    }

    /// What a look for a lost create's record found.
    enum LostCreate {
        /// A record no entry here names that is exactly one of the versions looked for.
        case found(String, MoodEntry)
        /// The lists were read: no such record.
        case none
        /// A list could not be read for a passing reason (the network, a 5xx, a redirect, a 429, a body not of the
        /// documented shape).
        case failed(String)
        /// The remote cannot answer the look (its list answers another 4xx).
        case cannot(String)
    }

    /// Reads the list route around each version's day: a record no entry here names that is exactly that version.
    func lookUpLostCreate(_ versions: [MoodEntry]) async -> LostCreate {
        let credentials: SyncCredentials
        do { credentials = try await currentCredentials(refresh: false) } catch { return .failed(error.message) }
        // Ids some entry here already names are never another's.
        let named = ledger.read { state in
            Set(state.outbox.records.compactMap { $0.key.destination == .backend ? $0.value.remoteID : nil })
        }
        var days: [Int64: [MoodEntry]] = [:]
        for version in versions {
            days[version.loggedAt.milliseconds.floorDivided(by: 86_400_000), default: []].append(version)
        }
        for (daysSinceEpoch, wanted) in days.sorted(by: { $0.key < $1.key }) {
            let from = LocalDate(daysSinceEpoch: Int32(daysSinceEpoch - 1))
            let to = LocalDate(daysSinceEpoch: Int32(daysSinceEpoch + 1))
            let query =
                dialect.dialect == .progress
                ? "?type=mood_score&from=\(from)&to=\(to)" : "?from=\(from)&to=\(to)&limit=100"
            let body: [UInt8]
            switch await ask(
                SyncRequest(
                    method: "GET", path: dialect.collection + query,
                    maximumResponseBytes: SyncLimits.probeAnswerBytes),
                credentials: credentials)
            {
            case .response(200, _, let answer): body = answer
            case .response(let status, _, _) where (400..<500).contains(status) && status != 408 && status != 429:
                return .cannot("HTTP \(status)")
            case .response(let status, _, _): return .failed("HTTP \(status)")
            case .failure(let kind, let message): return .failed("\(kind): \(message)")
            }
            guard let json = try? JSONParser.parse(String(decoding: body, as: UTF8.self)),
                let records = json["data"]?.arrayValue ?? json["data"]?["entries"]?.arrayValue
            else { return .failed("the list is not the documented shape") }
            for record in records {
                guard let id = record["id"]?.stringValue, SyncPolicy.isUsableRemoteID(id), !named.contains(id),
                    let at = record["logged_at"]?.stringValue.flatMap(ISO8601.parse),
                    let version = wanted.first(where: { matches(record, at: at, $0) })
                else { continue }
                return .found(id, version)
            }
        }
        return .none
    }

    /// Whether a listed record is exactly `version` as this dialect sends it: the instant to the second, the score or
    /// valence, the notes.
    private func matches(_ record: JSONValue, at: LoggedAt, _ version: MoodEntry) -> Bool {
        guard at.milliseconds.floorDivided(by: 1000) == version.loggedAt.milliseconds.floorDivided(by: 1000) else {
            return false
        }
        let same: Bool
        if dialect.dialect == .progress {
            same = record["quantity"]?.doubleValue == Double(version.enteredScore ?? version.score ?? 5)
        } else {
            same = record["valence"]?.doubleValue.map { abs($0 - (SyncDialect.valence(version) ?? 0)) < 1e-6 } ?? false
        }
        return same && (record["notes"]?.stringValue ?? nil) == version.notes
    }

    /// A delete of an entry whose create was attempted and never acknowledged (`Specs/sync.md`, *A create whose
    /// answer was lost*): that create may have made a record. A remote that keeps our ids is sent the delete under the
    /// entry's own id (404: there was none). A seed backend that makes its own ids is looked in for a record no entry
    /// here names that is exactly what one of the attempts sent: found, it is deleted; not there, nothing is sent and
    /// the delete is done; a look that fails is retried later. A record that another entry here could equally have
    /// made (the same instant and content) is never deleted.
    func deleteUnacknowledged(_ item: Due, key: String) async -> SyncVerdict {
        if dialect.dialect == .moodAPI { return await exchange(.delete, item: item, entry: nil, key: key) }
        let twins = ledger.read { state in
            item.sent.contains { version in
                state.entries.entries(on: version.localDate).contains {
                    $0.id != item.entryID && RemoteEntry.sameContent($0, version)
                        && $0.loggedAt.milliseconds.floorDivided(by: 1000)
                            == version.loggedAt.milliseconds.floorDivided(by: 1000)
                }
            }
        }
        if item.sent.isEmpty || twins { return .delivered(remoteID: item.entryID.description, revision: 0) }
        switch await lookUpLostCreate(item.sent) {
        case .found(let id, _):
            var delete = item
            delete.remoteID = id
            return await exchange(.delete, item: delete, entry: nil, key: "\(key).found")
        case .none, .cannot:
            return .delivered(remoteID: item.entryID.description, revision: 0)
        case .failed(let reason):
            return .retry(
                status: nil, error: "could not look for the record a lost create may have made: \(reason)",
                retryAfter: nil)
        }
    }
}
