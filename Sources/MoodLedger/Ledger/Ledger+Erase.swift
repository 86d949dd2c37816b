import EventLog

/// What an erasure did (`Specs/erasure.md`).
public struct EraseReport: Sendable, Equatable {
    /// The entries erased (empty for an erasure of every entry: see ``erasedAll``).
    public var erased: [EntryID]
    /// For an erasure of every entry (``Ledger/eraseAll(keepingHealthKit:reason:requestedBy:ignoringDestinations:)-374wa``):
    /// how many current entries it removed (the deleted ones' records were redacted too); nil otherwise.
    public var erasedAll: Int?
    /// Current entries the erasure of every entry kept: HealthKit's copies, when it keeps them.
    public var kept = 0
    /// Earlier records rewritten as redacted.
    public var recordsRedacted: Int
    /// Bytes the erasure wrote to the log: its redo journal and the records redacted in place, or the whole new
    /// log when it was rewritten.
    public var bytesWritten: Int64
    /// Repair backups (`events.log.broken-*`) still in the directory: erasure does not reach them.
    public var backups: [String]

    /// A report (a store other than the ledger's log makes one for its erasures).
    package init(
        erased: [EntryID], erasedAll: Int? = nil, kept: Int = 0, recordsRedacted: Int, bytesWritten: Int64,
        backups: [String]
    ) {
        self.erased = erased
        self.erasedAll = erasedAll
        self.kept = kept
        self.recordsRedacted = recordsRedacted
        self.bytesWritten = bytesWritten
        self.backups = backups
    }

    /// The report as JSON (`moodledger erase --json`).
    public var json: JSONValue {
        .object([
            erasedAll.map { ("erased_all", .int(Int64($0))) } ?? (
                "erased", .array(erased.map { .string($0.description) })
            ),
            ("records_redacted", .int(Int64(recordsRedacted))), ("bytes_written", .int(bytesWritten)),
            ("backups", .array(backups.map { .string($0) }))
        ])
    }
}

extension Ledger {
    /// Erases entries' personal data from the ledger: appends `entry.erased` for each (durably), then rewrites every
    /// earlier record about them as a redacted record (same seq, type and recorded_at; only the entry id kept) —
    /// in place, through a redo journal, removing the snapshots that held them; or, past 16 MiB of such records, by
    /// replacing the log file atomically and rewriting the snapshots (`Specs/erasure.md`).
    ///
    /// A crash at any point leaves the old records with the erasure pending, or the journal or new file that
    /// finishes it; opening a ledger whose erasure is incomplete finishes it.
    /// - Parameters:
    ///   - ids: the entries (current or deleted; each must appear in the log and not be erased already).
    ///   - reason: the person's reason (stored; keep personal data out of it).
    ///   - requestedBy: what asked (`cli`, `server`, `account`).
    ///   - ignoringDestinations: erase even when a destination still holds a copy (which then stays there).
    /// - Returns: what was erased and rewritten.
    /// - Throws: ``MoodError`` `not_found` (never in the log, or already erased), `held_elsewhere` (a destination
    ///   has a copy: deliver a delete first); `EventLogError`.
    @discardableResult
    public func erase(
        _ ids: [EntryID], reason: String = "", requestedBy: String = "cli",
        ignoringDestinations: Bool = false
    ) throws -> EraseReport {
        try writing { core in
            guard !options.readOnly else { throw EventLogError(.notWritable, "the ledger was opened read-only") }
            let wanted = Set(ids)
            guard !wanted.isEmpty else {
                return EraseReport(erased: [], recordsRedacted: 0, bytesWritten: 0, backups: backups())
            }
            // An erasure recorded but not finished (its rewrite failed: a full disk, a directory not writable) is
            // not "already erased": asking again finishes it, appending nothing more for it.
            let unfinished = core.state.pendingErasures
            // A current entry is named by the log; only another id needs the walk that finds deleted ones.
            let current = core.state.entries
            let unknown = ids.filter { !current.contains($0) && unfinished[$0] == nil }
            let named =
                unknown.isEmpty
                ? [] : try Self.namedEntryIDs(in: Self.history(of: core), concerning: unknown)
            for id in ids where !named.contains(id) && !current.contains(id) && unfinished[id] == nil {
                throw MoodError(
                    code: .notFound, field: "entry_id",
                    rule: "no entry \(id) to erase (never logged, or already erased)")
            }
            let fresh = ids.filter { unfinished[$0] == nil }
            if !ignoringDestinations {
                try deciding(&core) { state in
                    for id in ids {
                        for destination in SyncDestination.allCases {
                            if state.outbox.record(OutboxKey(entryID: id, destination: destination))?.remoteID != nil {
                                throw MoodError(
                                    code: .heldElsewhere, field: "entry_id",
                                    rule:
                                        "\(destination.rawValue) holds a copy of entry \(id): delete it there first (a sync "
                                        + "after a deletion does), or erase only here")
                            }
                        }
                    }
                }
            }
            let now = options.clock()
            // Streamed: `erase --all` of a large ledger appends one event per entry.
            if !fresh.isEmpty {
                try appendStreaming(
                    fresh.lazy.map { .entryErased($0, Erasure(reason: reason, requestedBy: requestedBy)) },
                    now: now, to: &core)
                try core.log.sync()
            }
            return try finishErasures(&core)
        }
    }

    /// Erases every entry's personal data at once (`Specs/erasure.md`, *Erasing everything*): appends one
    /// `ledger.erased` (durably), whose fold empties the entries, the outbox records and the analytics, then rewrites
    /// every earlier record about an entry as redacted, replaces the log atomically and rewrites the snapshots. Its
    /// cost does not grow with the number of entries beyond the rewrite's one pass over the log.
    /// - Parameters:
    ///   - keepingHealthKit: keep the current entries whose source is HealthKit (copies of samples that live in the
    ///     Health app) and their records.
    ///   - reason: the person's reason (stored; keep personal data out of it).
    ///   - requestedBy: what asked (`cli`, `server`, `account`).
    ///   - ignoringDestinations: erase even when a destination still holds a copy (which then stays there).
    /// - Returns: what was erased and rewritten; nothing is appended when no entry is left to erase.
    /// - Throws: ``MoodError`` `held_elsewhere` (a destination has a copy of an entry to erase); `EventLogError`.
    @discardableResult
    public func eraseAll(
        keepingHealthKit: Bool, reason: String = "", requestedBy: String = "cli", ignoringDestinations: Bool = false
    ) throws -> EraseReport {
        try writing { core in
            guard !options.readOnly else { throw EventLogError(.notWritable, "the ledger was opened read-only") }
            let erasure = Erasure(reason: reason, requestedBy: requestedBy, keepsHealthKit: keepingHealthKit)
            let current = try deciding(&core) { state in
                if !ignoringDestinations {
                    for destination in SyncDestination.allCases {
                        for id in state.outbox.entriesHeld(at: destination)
                        where !erasure.keeps(state.entries[id]) {
                            throw MoodError(
                                code: .heldElsewhere, field: "entry_id",
                                rule:
                                    "\(destination.rawValue) holds a copy of entry \(id): delete it there first (a sync "
                                    + "after a deletion does), or erase only here")
                        }
                    }
                }
                return state.entries
            }
            guard try Self.namesEntries(in: core.log, besides: { erasure.keeps(current[$0]) }) else {
                var report = EraseReport(erased: [], recordsRedacted: 0, bytesWritten: 0, backups: backups())
                report.erasedAll = 0
                report.kept = keepingHealthKit ? current.count(source: .healthkit) : 0
                return report
            }
            let before = current.count
            try appendStreaming(CollectionOfOne(.ledgerErased(erasure)), now: options.clock(), to: &core)
            try core.log.sync()
            let kept = core.state.entries.count
            var report = try finishErasures(&core)
            report.erasedAll = before - kept
            report.kept = kept
            return report
        }
    }

    /// Whether a record of the log names an entry with its data (not redacted) that `kept` does not accept.
    static func namesEntries(in log: EventLog, besides kept: (EntryID) -> Bool) throws -> Bool {
        var found = false
        try log.forEach(from: 1) { view in
            guard view.type & LogFormat.safeToIgnoreBit == 0, !EventCodec.isRedacted(view.payload),
                view.type != EventType.entryErased.rawValue,
                let id = EventCodec.entryID(inPayload: view.payload), id != .none
            else { return true }
            found = !kept(id)
            return !found
        }
        return found
    }

    /// Rewrites every record about the pending erasures as redacted, marks their `entry.erased` (or `ledger.erased`)
    /// complete, and replaces the snapshots. Idempotent: what is already redacted stays as it is.
    func finishErasures(_ core: inout Core) throws -> EraseReport {
        var pending = core.state.pendingErasures
        guard !pending.isEmpty else {
            return EraseReport(erased: [], recordsRedacted: 0, bytesWritten: 0, backups: backups())
        }
        // An erasure of every entry is pending under the all-zero id: it reaches every record before it about an
        // entry that is not current (the kept HealthKit copies are; nothing is appended before it completes).
        let everything = pending.removeValue(forKey: .none)
        let current = core.state.entries
        // A few entries' erasure reads every record of the log: their ids are compared directly (no hashing per
        // record), and only a record naming one is decoded.
        let few = everything == nil && pending.count <= 16 ? Array(pending.keys) : nil
        let redact = { (view: RecordView) throws -> [UInt8]? in
            if let few {
                guard let id = EventCodec.entryID(inPayload: view.payload), few.contains(id) else { return nil }
            }
            return try Self.redaction(of: view, pending: pending, everything: everything, current: current)
        }
        let report: EventLog.RewriteReport
        if everything == nil,
            let inPlace = try core.log.redactInPlace(
                within: Self.history(of: core).ranges(naming: Array(pending.keys), from: 1, through: .max),
                { view in try redact(view).map { EventCodec.redactedInPlace($0, length: view.payload.count) ?? $0 } },
                beforeWriting: { [store] first in
                    // Snapshots from the first changed record on hold the entries' data: removed before any record
                    // changes, so a crash cannot leave them behind. Older ones never held it, and stay.
                    try store.remove(coveringFrom: first)
                })
        {
            // Records redacted where they are: offsets stay, so the snapshots kept stay valid. The next one is
            // written by the usual policy (the interval, or the close).
            report = inPlace
            core.rewrites += 1
            core.state.pendingErasures = [:]
            core.sinceSnapshot = max(core.sinceSnapshot, options.snapshotOnCloseMinimum, 1)
        } else {
            // Snapshots hold the entries' data: removed before the new log replaces the old one, so a crash after the
            // rename cannot leave them behind (before it, the erasure is still pending and finished on the next open).
            try store.removeAll()
            // A rewrite killed before its rename left its temp file (redacted data only): the writer lock is ours.
            for name in (try? options.io.contents(ofDirectory: path)) ?? []
            where name.hasPrefix(LogFormat.logFileName + ".tmp-") {
                try? options.io.remove(path + "/" + name)
            }
            report = try core.log.rewritePayloads(redact)
            // Earlier records changed: observers read their views again (an erasure of every entry names no entry).
            core.rewrites += 1
            // What replaying the rewritten records gives: the erasures are complete.
            core.state.pendingErasures = [:]
            _ = try writeSnapshot(&core)
        }
        return EraseReport(
            erased: pending.keys.sorted(), recordsRedacted: report.recordsRewritten,
            bytesWritten: report.bytesWritten, backups: backups())
    }

    /// The writer's log read through its state's index of each entry's records.
    static func history(of core: Core) -> LogHistory {
        LogHistory(log: core.log, index: (core.state.records, core.state.seq))
    }

    /// The new payload of a record an erasure reaches (redacted, or the erasure's own record marked complete), or
    /// `nil` to keep it as it is.
    /// - Parameters:
    ///   - pending: each entry's pending erasure: the seq of its `entry.erased`.
    ///   - everything: the seq of a pending `ledger.erased`, if one is.
    ///   - current: the current entries (those an erasure of everything keeps).
    package static func redaction(
        of view: RecordView, pending: [EntryID: UInt64], everything: UInt64?, current: EntriesState
    ) throws -> [UInt8]? {
        guard view.type & LogFormat.safeToIgnoreBit == 0, let id = EventCodec.entryID(inPayload: view.payload)
        else { return nil }
        if id == .none {
            guard view.seq == everything, view.type == EventType.ledgerErased.rawValue else { return nil }
            let decoded = try Self.decode(view)
            guard case .ledgerErased(var erasure) = decoded.event, !erasure.complete else { return nil }
            erasure.complete = true
            return EventCodec.encode(.ledgerErased(erasure), commandID: decoded.commandID)
        }
        let erasedAt = pending[id]
        if let erasedAt, view.seq <= erasedAt {
            // One entry's erasure.
        } else if let everything, view.seq < everything, !current.contains(id) {
            // Every entry's: an earlier erasure's own record stays (it holds no personal data).
            if view.type == EventType.entryErased.rawValue { return nil }
        } else {
            return nil
        }
        if EventCodec.isRedacted(view.payload) { return nil }
        let decoded = try Self.decode(view)
        if case .entryErased(let id, var erasure) = decoded.event {
            guard view.seq == erasedAt, !erasure.complete else { return nil }
            erasure.complete = true
            return EventCodec.encode(.entryErased(id, erasure), commandID: decoded.commandID)
        }
        if case .redacted = decoded.event { return nil }
        guard let type = EventType(rawValue: view.type) else { return nil }
        var redaction = Redaction(type: type)
        switch decoded.event {
        case .syncAttempted(_, let destination, _, _), .syncSucceeded(_, let destination, _, _),
            .syncFailed(_, let destination, _), .syncRequeued(_, let destination, _), .syncReleased(_, let destination):
            redaction.destination = destination
        default: break
        }
        return EventCodec.encode(.redacted(id, redaction), commandID: decoded.commandID)
    }

    /// The entries whose erasure was recorded but not finished (their records still hold data): a rewrite that
    /// failed after the `entry.erased` was durable. ``finishErasures()`` or asking to erase them again finishes them.
    public var unfinishedErasures: Set<EntryID> { Set(published.state.pendingErasures.keys) }

    /// Finishes every erasure recorded but not finished: the rewrite and the snapshots, as ``erase(_:reason:requestedBy:ignoringDestinations:)-8eyxk``
    /// would have. Nothing to do is not an error.
    /// - Returns: what was rewritten.
    /// - Throws: `EventLogError` when the rewrite fails again (the erasures stay unfinished).
    @discardableResult
    public func finishErasures() throws -> EraseReport {
        try writing { core in
            guard !options.readOnly else { throw EventLogError(.notWritable, "the ledger was opened read-only") }
            return try finishErasures(&core)
        }
    }

    /// Repair backups in the ledger directory (`events.log.broken-*`).
    public func backups() -> [String] {
        ((try? options.io.contents(ofDirectory: path)) ?? []).filter {
            $0.hasPrefix(LogFormat.logFileName + ".broken-")
        }
        .sorted().map { path + "/" + $0 }
    }
}

extension Ledger {
    /// Every entry `erase --all` reaches: with no date, each entry the log names with its data (deleted ones
    /// included); with a date, the current entries logged (local date) before it.
    /// - Throws: `EventLogError` met while reading.
    public func erasableEntryIDs(loggedBefore date: LocalDate? = nil) throws -> [EntryID] {
        if let date {
            return state.entries.all.filter { $0.loggedAt.localDate < date }.map(\.id).sorted()
        }
        return try Self.namedEntryIDs(in: LogHistory(log: eventLog)).sorted()
    }

    /// The entries the log names with their data: every event's entry id, minus those whose `entry.erased` came
    /// after their last event (redacted records and the all-zero id do not count).
    /// - Parameter ids: the only ids asked about (the answer is right for those only: the records read are those that
    ///   may concern them); `nil`: every id, every record read.
    static func namedEntryIDs(in history: LogHistory, concerning ids: [EntryID]? = nil) throws -> Set<EntryID> {
        var named = Set<EntryID>()
        let visit = { (view: RecordView) throws -> Bool in
            if view.type == EventType.ledgerErased.rawValue {
                // Until its rewrite completes (which redacts them): the erased entries are the ones not kept.
                guard case .ledgerErased(let erasure) = try decode(view).event else { return true }
                if !erasure.keepsHealthKit { named.removeAll() }
                return true
            }
            guard view.type & LogFormat.safeToIgnoreBit == 0, !EventCodec.isRedacted(view.payload),
                let id = EventCodec.entryID(inPayload: view.payload),
                id != .none
            else { return true }
            if view.type == EventType.entryErased.rawValue { named.remove(id) } else { named.insert(id) }
            return true
        }
        if let ids {
            try history.forEachRecord(concerning: ids, visit)
        } else {
            try history.log.forEach(from: 1, visit)
        }
        return named
    }
}
