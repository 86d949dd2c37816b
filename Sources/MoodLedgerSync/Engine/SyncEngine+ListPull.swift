import MoodInterchange
import MoodLedger

extension SyncEngine {
    /// The pull of a seed backend that has no changes feed but lists its entries (`mood-api`, `wellness`;
    /// `Specs/sync.md`, *Pulling from a list*): the list route is read for the days since the last such pull (two days
    /// of overlap; 30 days the first time), every page, and each record is compared with what this device holds.
    /// A record no entry here names is a new entry (another client made it); a record of an entry here that is in
    /// step and whose carried fields differ is the server's edit, applied over those fields only; the rest is left
    /// alone. All of it, and the `sync.pulled` that moves the day cursor, is one batch.
    func pullList(into report: inout SyncReport) async throws {
        let now = ledger.options.clock()
        let today = Int64(now.floorDivided(by: 86_400_000))
        let cursor = ledger.read { $0.outbox.progress(.backend).cursor }
        // The cursor is the day of the last list pull, plus one (0: never pulled).
        let firstDay = cursor == 0 ? today - Self.firstListDays : Int64(cursor) - 1 - Self.listOverlapDays
        let from = LocalDate(daysSinceEpoch: Int32(clamping: firstDay))
        let to = LocalDate(daysSinceEpoch: Int32(clamping: today + 1))
        var records: [JSONValue] = []
        var offset = 0
        var pages = 0
        while true {
            if cancelRequested.load(ordering: .relaxed) { return }
            if pages == SyncLimits.pullPagesPerRun {
                report.pullError = "pull: the list had more than \(pages) pages: stopped, nothing of it applied"
                return
            }
            pages += 1
            let path =
                dialect.collection + "?from=\(from)&to=\(to)&limit=\(Self.listPageSize)&offset=\(offset)"
            let credentials: SyncCredentials
            do { credentials = try await currentCredentials(refresh: false) } catch {
                throw SyncError(.unauthorized, "the server refused the credentials (\(error.message))")
            }
            let request = SyncRequest(
                method: "GET", path: path, maximumResponseBytes: SyncLimits.changesPageBytes(limit: Self.listPageSize))
            let body: [UInt8]
            switch await ask(request, credentials: credentials) {
            case .failure(let kind, let message):
                report.pullError = "pull: \(kind): \(message)"
                return
            case .response(401, _, let answer):
                throw SyncError(
                    .unauthorized,
                    "the server refused the credentials (HTTP 401: \(SyncPolicy.serverMessage(answer) ?? "unauthorized"))"
                )
            case .response(200, _, let answer):
                body = answer
            case .response(let status, _, _) where [400, 404, 405, 501].contains(status):
                // A remote without the documented list (or one that refuses its query): it is pushed to, never
                // failed for it on every run.
                report.pullSkipped =
                    "the remote answered HTTP \(status) to its documented list: this device only pushes there"
                return
            case .response(let status, _, let answer):
                report.pullError =
                    "pull: HTTP \(status) on the list" + (SyncPolicy.serverMessage(answer).map { ": \($0)" } ?? "")
                return
            }
            guard let json = try? JSONParser.parse(String(decoding: body, as: UTF8.self)),
                let page = json["data"]?["entries"]?.arrayValue ?? json["entries"]?.arrayValue,
                page.count <= Self.listPageSize
            else {
                report.pullError = "pull: the list's answer is not the documented shape"
                return
            }
            records += page
            let more = json["data"]?["has_more"] == .bool(true)
            if !more || page.isEmpty { break }
            offset += page.count
        }
        // Creates attempted and never acknowledged (their answers lost, perhaps after they made records): the
        // instants, to the second, of every version they sent. A listed record at one of them is never taken for a
        // new entry: it may be ours, and the push's look for a lost create links it (one pass over the log, only
        // when there are such creates).
        let unacknowledged = ledger.read { state in
            Set(
                state.outbox.records.compactMap { key, record in
                    key.destination == .backend && record.remoteID == nil
                        && (record.idempotencyKey != nil || record.attempts > 0) ? key.entryID : nil
                })
        }
        let sentSeconds = Set(
            try ledger.attemptedVersions(of: unacknowledged).values.joined().map {
                $0.loggedAt.milliseconds.floorDivided(by: 1000)
            })
        var applied = 0
        var refused = 0
        _ = try ledger.execute { state, _ in
            var events: [MoodEvent] = []
            applied = 0
            refused = 0
            var known: [String: EntryID] = [:]
            for (key, record) in state.outbox.records where key.destination == .backend {
                if let remoteID = record.remoteID { known[remoteID] = key.entryID }
            }
            var seen = Set<String>()
            for record in records {
                guard let id = record["id"]?.stringValue, SyncPolicy.isUsableRemoteID(id), seen.insert(id).inserted
                else { continue }
                do {
                    guard
                        let event = try self.listedChange(
                            record, remoteID: id, known: known, sentSeconds: sentSeconds, in: state)
                    else {
                        continue
                    }
                    events.append(event)
                    applied += 1
                } catch {
                    refused += 1  // a record this ledger's rules refuse stays on the server, unapplied
                }
            }
            let day = UInt64(today + 1)
            if events.isEmpty && day == cursor { return ([], .none, false) }
            events.append(.syncPulled(SyncPull(cursor: day, serverRevision: 0, applied: applied)))
            return (events, .none, false)
        }
        report.pulled += applied
        if refused > 0 {
            report.pullSkipped =
                "\(refused) listed record\(refused == 1 ? "" : "s") broke this ledger's rules and stayed on the server"
        }
    }

    /// Days a first list pull reads back (the seeds' own default window).
    static let firstListDays: Int64 = 30
    /// Days a list pull reads again before the last one's (late writes, other time zones).
    static let listOverlapDays: Int64 = 2
    /// Records asked per list page (the seeds' largest `limit`).
    static let listPageSize = 100

    /// What to append for one listed record, or `nil` when there is nothing to do.
    private func listedChange(
        _ record: JSONValue, remoteID: String, known: [String: EntryID], sentSeconds: Set<Int64>,
        in state: LedgerState
    ) throws -> MoodEvent? {
        let listed = try listedEntry(record, id: EntryID(remoteID) ?? EntryID.random())
        let present = Self.present(in: record)
        // Ours: by the remote id recorded at delivery, or (mood-api) by the entry id we sent as its source_id.
        var ownerID = known[remoteID]
        if ownerID == nil, let sourceID = record["source_id"]?.stringValue {
            if let id = EntryID(sourceID), state.entries[id] != nil {
                ownerID = id
            } else if listed.source == .healthkit,
                let twin = state.entries.entries(on: listed.localDate).first(where: {
                    $0.source == .healthkit && $0.sourceID == sourceID
                })
            {
                ownerID = twin.id
            }
        }
        if let ownerID {
            guard let local = state.entries[ownerID], !SyncPlanner.hasUnsentChange(ownerID, in: state),
                !sameCarried(listed, local, present: present)
            else { return nil }
            return .remoteApplied(
                RemoteChange(
                    origin: .backend, remoteID: remoteID, entry: try merged(listed, present: present, over: local),
                    entryID: ownerID,
                    revision: state.outbox.record(OutboxKey(entryID: ownerID, destination: .backend))?.revision ?? 0))
        }
        // A record no entry here names that an entry here could have made (the same second and content): a create
        // of ours whose answer was lost. The push links it; it is never taken for a new entry.
        if sentSeconds.contains(Self.second(of: listed)) { return nil }
        for day in -1...1 {
            let date = LocalDate(daysSinceEpoch: listed.localDate.daysSinceEpoch + Int32(day))
            if state.entries.entries(on: date).contains(where: { sameCarried(listed, $0, present: present) }) {
                return nil
            }
        }
        var entryID = listed.id
        if let sourceID = record["source_id"]?.stringValue, listed.source != .healthkit, let own = EntryID(sourceID),
            state.entries[own] == nil
        {
            entryID = own  // another device of ours: its entry id, so both devices name the entry alike
        }
        guard state.entries[entryID] == nil else { return nil }
        var entry = listed
        entry.id = entryID
        return .remoteApplied(
            RemoteChange(origin: .backend, remoteID: remoteID, entry: entry, entryID: entryID, revision: 0))
    }

    /// A listed record read as an entry (the dialect's spellings read back as the words they stand for).
    private func listedEntry(_ record: JSONValue, id: EntryID) throws -> MoodEntry {
        var pairs: [(String, JSONValue)] = []
        for key in ["valence", "notes", "logged_at"] { if let value = record[key] { pairs.append((key, value)) } }
        pairs.append(("labels", .array(words(record["labels"]))))
        pairs.append(("associations", .array(words(record["associations"]))))
        let source = record["source"]?.stringValue
        pairs.append(
            (
                "source",
                .string(source == "healthkit" ? "healthkit" : source == "ai_analysis" ? "ai_analysis" : "manual")
            ))
        if source == "healthkit", let sourceID = record["source_id"]?.stringValue {
            pairs.append(("source_id", .string(sourceID)))
        }
        return try RemoteEntry.parse(.object(pairs), id: id)
    }

    /// A list of words as the dialect spells them, read back (seed 002's `tired`, `social`, `finances`).
    private func words(_ value: JSONValue?) -> [JSONValue] {
        (value?.arrayValue ?? []).compactMap { word in
            guard let text = word.stringValue else { return nil }
            return .string(dialect.dialect == .wellness ? SyncDialect.wellnessReading(text) : text)
        }
    }

    /// The fields a listed record holds (a key present, `null` included): a list may answer an abbreviated shape
    /// (seed 001's example has no `notes`), and a field it does not show is never taken for one cleared.
    static func present(in record: JSONValue) -> Set<String> {
        Set(["valence", "labels", "associations", "notes"].filter { record[$0] != nil })
    }

    /// Whether a listed entry holds what this device would send of `local`, in the fields the record shows: the
    /// instant to the second, the valence as the dialect sends it, the words it carries, the notes.
    private func sameCarried(_ listed: MoodEntry, _ local: MoodEntry, present: Set<String>) -> Bool {
        guard Self.second(of: listed) == Self.second(of: local) else { return false }
        if present.contains("notes"), listed.notes != local.notes { return false }
        if present.contains("valence"), !Self.sameValence(listed, local) { return false }
        if present.contains("labels"), Set(carriedWords(listed.labels)) != Set(carriedWords(local.labels)) {
            return false
        }
        return !present.contains("associations")
            || Set(carriedWords(listed.associations)) == Set(carriedWords(local.associations))
    }

    /// Whether a listed entry's valence is the one this device sends for `local` (within 10⁻⁶), or both have none.
    private static func sameValence(_ listed: MoodEntry, _ local: MoodEntry) -> Bool {
        switch (listed.valence.map(Valence.display), SyncDialect.valence(local)) {
        case (nil, nil): return true
        case (let a?, let b?): return abs(a - b) < 1e-6
        default: return false
        }
    }

    /// An entry's instant to the second: what the seeds keep of it.
    private static func second(of entry: MoodEntry) -> Int64 { entry.loggedAt.milliseconds.floorDivided(by: 1000) }

    /// The words of a list this dialect carries, as it spells them.
    private func carriedWords<D>(_ words: [VocabularyWord<D>]) -> [String] {
        dialect.dialect == .wellness ? words.compactMap(SyncDialect.wellnessWord) : words.map(\.wireName)
    }

    /// The server's edit of an entry here: the fields the dialect carries from the record, the rest kept (tags, kind,
    /// the UTC offset, words the dialect cannot carry, the typed score when the valence is its translation).
    /// - Parameters:
    ///   - listed: the record read as an entry; `present`: the fields the record shows.
    private func merged(_ listed: MoodEntry, present: Set<String>, over local: MoodEntry) throws -> MoodEntry {
        guard case .object(var pairs) = local.json else { return local }
        func replace(_ key: String, _ value: JSONValue) {
            pairs.removeAll { $0.0 == key }
            pairs.append((key, value))
        }
        if present.contains("valence"), !Self.sameValence(listed, local) {
            pairs.removeAll { ["score", "typed_score", "mood_score", "valence"].contains($0.0) }
            if let valence = listed.valence { pairs.append(("valence", .double(Valence.display(valence)))) }
        }
        func kept<D>(_ words: [VocabularyWord<D>], listed: [VocabularyWord<D>]) -> JSONValue {
            let uncarried = dialect.dialect == .wellness ? words.filter { SyncDialect.wellnessWord($0) == nil } : []
            return .array((listed + uncarried).map { .string($0.wireName) })
        }
        if present.contains("labels") { replace("labels", kept(local.labels, listed: listed.labels)) }
        if present.contains("associations") {
            replace("associations", kept(local.associations, listed: listed.associations))
        }
        if present.contains("notes") { replace("notes", .optional(listed.notes) { .string($0) }) }
        if Self.second(of: listed) != Self.second(of: local) {
            let moved = LoggedAt(
                milliseconds: listed.loggedAt.milliseconds, utcOffsetMinutes: local.loggedAt.utcOffsetMinutes)
            replace("logged_at", .string(moved.iso8601))
            replace("utc_offset_minutes", .int(Int64(local.loggedAt.utcOffsetMinutes)))
        }
        return try RemoteEntry.parse(.object(pairs), id: local.id)
    }
}
