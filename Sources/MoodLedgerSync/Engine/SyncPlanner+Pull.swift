import MoodInterchange
import MoodLedger

/// The pull's decisions: a changes page read and checked before anything of it is applied, and each change turned
/// into what to append.
extension SyncPlanner {
    struct RemoteChangeItem {
        var id: EntryID
        var revision: UInt64
        var entry: JSONValue?
        /// The server says this revision replaced another device's edit: that revision and the fields.
        var replaced: (revision: UInt64, fields: [String])? = nil
    }

    struct ChangesPage {
        var changes: [RemoteChangeItem]
        var revision: UInt64
        var nextSince: UInt64
        var hasMore: Bool
        /// Why the page, though it parsed, cannot be taken (see ``SyncPlanner/refusal(of:cursor:)``).
        var refusal: String? = nil
    }

    /// What to append for one remote change, or `nil` when there is nothing to do (our own change echoed back, or
    /// one already applied).
    /// `lostBase`: the change says it replaced this device's own edit at the revision this device holds, and this
    /// is the base before that edit: the change is recorded as a merge whose result is the server's version, so the
    /// conflict (this device's values lost) is listed here too.
    /// `feedRevision`: the page's own revision. A record's revision above it is impossible (an answer's `ETag` said
    /// more than the server ever reached): it is not trusted to mean "already applied".
    static func decide(
        _ change: RemoteChangeItem, in state: LedgerState, bases: [EntryID: SyncBase] = [:],
        lostBase: SyncBase? = nil, feedRevision: UInt64 = .max
    )
        throws(MoodError) -> MoodEvent?
    {
        let record = state.outbox.record(OutboxKey(entryID: change.id, destination: .backend))
        if let record, record.revision >= change.revision, record.revision <= feedRevision { return nil }
        let local = state.entries[change.id]
        let pendingHere = hasUnsentChange(change.id, in: state)
        guard let json = change.entry else {
            if local == nil && record == nil { return nil }
            // A deletion there wins over a change here (recorded as a conflict: what was changed here is lost).
            return .remoteApplied(
                RemoteChange(
                    origin: .backend, remoteID: change.id.description, entry: nil,
                    entryID: change.id, revision: change.revision, conflict: pendingHere))
        }
        let entry = try RemoteEntry.parse(json, id: change.id)
        if local == nil, record?.operation == .delete {
            // Deleted here, the deletion unsent, changed there: the deletion wins (it reaches the server last), merged
            // as at the push, and the server's change is listed as lost; the delete goes out on this revision.
            return .syncMerged(
                Self.merge(
                    change.id, here: nil, theirs: entry, revision: change.revision,
                    remoteID: record?.remoteID ?? change.id.description, base: bases[change.id]))
        }
        if let lostBase, !pendingHere, let local, let record {
            let merge = SyncMerge(
                entryID: change.id, remoteID: record.remoteID ?? change.id.description, serverRevision: change.revision,
                baseRevision: lostBase.revision, base: lostBase.entry, here: local, theirs: entry, merged: entry)
            if !merge.conflicts.isEmpty { return .syncMerged(merge) }
        }
        guard pendingHere, let local, !RemoteEntry.sameContent(local, entry) else {
            // Nothing unsent here, or the server simply has what is pending here: applied.
            return .remoteApplied(
                RemoteChange(
                    origin: .backend, remoteID: change.id.description, entry: entry,
                    entryID: change.id, revision: change.revision, conflict: false))
        }
        // Changed on both sides: merged field by field against the base; the result is sent next, conditional on
        // this revision.
        return .syncMerged(
            Self.merge(
                change.id, here: local, theirs: entry, revision: change.revision,
                remoteID: record?.remoteID ?? change.id.description, base: bases[change.id]))
    }

    /// Whether the entry exists here with a change the backend has not acknowledged (a pending record, or an
    /// eligible entry never sent).
    static func hasUnsentChange(_ id: EntryID, in state: LedgerState) -> Bool {
        guard let local = state.entries[id] else { return false }
        let record = state.outbox.record(OutboxKey(entryID: id, destination: .backend))
        return record.map { $0.operation != nil } ?? OutboxState.isEligible(local.source, for: .backend)
    }

    /// `{"success": true, "data": {"changes": [{revision, operation, id, entry}], revision, next_since, has_more}}`.
    static func parsePage(_ body: [UInt8]) -> ChangesPage? {
        guard let json = try? JSONParser.parse(String(decoding: body, as: UTF8.self)), let data = json["data"],
            let items = data["changes"]?.arrayValue, let revision = data["revision"]?.intValue, revision >= 0,
            let next = data["next_since"]?.intValue, next >= 0
        else { return nil }
        var changes: [RemoteChangeItem] = []
        for item in items {
            guard let id = item["id"]?.stringValue.flatMap(EntryID.init), let itemRevision = item["revision"]?.intValue,
                itemRevision > 0
            else { return nil }
            let operation = item["operation"]?.stringValue
            guard operation == "upsert" || operation == "delete" else { return nil }
            let entry = operation == "delete" ? nil : item["entry"]
            if operation == "upsert", entry == nil || entry == .null { return nil }
            var replaced: (revision: UInt64, fields: [String])?
            if let note = item["replaced"], note != .null {
                guard let revision = note["revision"]?.intValue, revision > 0,
                    let fields = note["fields"]?.arrayValue?.compactMap(\.stringValue)
                else { return nil }
                replaced = (UInt64(revision), fields)
            }
            if let entry, entry != .null, let inner = entry["id"], inner != .null {
                // The item's id and its entry's must name one entry: which one would be a guess.
                guard let innerID = inner.stringValue.flatMap(EntryID.init), innerID == id else {
                    return ChangesPage(
                        changes: [], revision: UInt64(revision), nextSince: UInt64(next), hasMore: false,
                        refusal: "the change at revision \(itemRevision) names entry \(id) but carries entry "
                            + (inner.stringValue.map { ConsoleText.escaped(String($0.prefix(40))) } ?? "(not a string)")
                    )
                }
            }
            changes.append(
                RemoteChangeItem(id: id, revision: UInt64(itemRevision), entry: entry, replaced: replaced))
        }
        // One id twice in a page: only its highest revision is the entry's state; the others are history.
        var highest: [EntryID: UInt64] = [:]
        for change in changes { highest[change.id] = max(highest[change.id] ?? 0, change.revision) }
        if highest.count < changes.count {
            var seen = Set<EntryID>()
            changes = changes.filter { $0.revision == highest[$0.id] && seen.insert($0.id).inserted }
        }
        return ChangesPage(
            changes: changes, revision: UInt64(revision), nextSince: UInt64(next),
            hasMore: data["has_more"] == .bool(true))
    }

    /// Why a page cannot be true, if it cannot: a change above the feed's own revision, a cursor that goes back
    /// while the feed does not, or one past the feed's revision, an item whose ids disagree (`Specs/sync.md`,
    /// *What the client refuses*).
    static func refusal(of page: ChangesPage, cursor: UInt64) -> String? {
        if let refusal = page.refusal { return refusal }
        if let above = page.changes.first(where: { $0.revision > page.revision }) {
            return "the change of entry \(above.id) has revision \(above.revision), above the feed's own revision "
                + "\(page.revision)"
        }
        if page.nextSince > page.revision {
            return "the next cursor \(page.nextSince) is past the feed's own revision \(page.revision)"
        }
        if page.revision >= cursor, page.nextSince < cursor {
            return "the next cursor \(page.nextSince) goes back from \(cursor) while the feed's revision did not"
        }
        return nil
    }

    /// A feed whose revision went below the cursor (a restore): the changes this device had acknowledged above the
    /// feed's revision are re-queued (the server lacks them), and the cursor follows the feed down.
    static func wentBack(in state: LedgerState, cursor: UInt64, to revision: UInt64) -> [MoodEvent] {
        var events: [MoodEvent] = []
        for (key, record) in state.outbox.records
        where key.destination == .backend
            && record.operation == nil && record.revision > revision
            && state.entries[key.entryID] != nil
        {
            events.append(
                .syncRequeued(
                    key.entryID, .backend,
                    reason:
                        "the server went back from revision \(cursor) to \(revision) (restored from a backup?) and lacks this change (revision \(record.revision))"
                ))
        }
        events.append(
            .syncPulled(SyncPull(cursor: revision, serverRevision: revision, applied: 0, serverWentBack: true)))
        return events
    }
}

/// An entry as a backend's JSON carries it, read with the API's field rules.
enum RemoteEntry {
    /// Parses an entry object (`id`, `logged_at`, `utc_offset_minutes`, `kind`, `typed_score` or `valence` or
    /// `score`, word lists, `notes`, `source`, `source_id`).
    static func parse(_ json: JSONValue, id: EntryID) throws(MoodError) -> MoodEntry {
        guard case .object(let pairs) = json else { throw MoodError.invalid("entry", "must be a JSON object") }
        let typed = json["typed_score"].flatMap { $0.isNull ? nil : $0 }
        let valence = json["valence"].flatMap { $0.isNull ? nil : $0 }
        // One scalar: the typed score if there is one (its valence is its exact translation), else the valence.
        let drop: Set<String> =
            typed != nil
            ? ["valence", "score", "mood_score", "typed_score"]
            : valence != nil ? ["score", "mood_score", "typed_score"] : ["typed_score"]
        var kept = pairs.filter { !drop.contains($0.0) && $0.0 != "labels" }
        if let typed { kept.append(("score", typed)) }
        if let labels = json["labels"]?.arrayValue, !labels.isEmpty { kept.append(("labels", .array(labels))) }
        var draft = try APIRecord.draft(from: .object(kept))
        draft.id = id
        // Storage bounds do not depend on the clock.
        return try MoodRules.validate(draft, now: 0, bounds: .storage, newID: { id })
    }

    /// Whether two versions of an entry carry the same data (timestamps and origin aside).
    static func sameContent(_ a: MoodEntry, _ b: MoodEntry) -> Bool { ThreeWayMerge.sameContent(a, b) }
}
