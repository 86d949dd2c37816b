import EventLog

/// What an erasure did (`Specs/erasure.md`).
public struct EraseReport: Sendable, Equatable {
    /// The entries erased.
    public var erased: [EntryID]
    /// Earlier records rewritten as redacted.
    public var recordsRedacted: Int
    /// Size of the rewritten log.
    public var bytesWritten: Int64
    /// Repair backups (`events.log.broken-*`) still in the directory: erasure does not reach them.
    public var backups: [String]

    /// The report as JSON (`moodledger erase --json`).
    public var json: JSONValue {
        .object([
            ("erased", .array(erased.map { .string($0.description) })),
            ("records_redacted", .int(Int64(recordsRedacted))), ("bytes_written", .int(bytesWritten)),
            ("backups", .array(backups.map { .string($0) }))
        ])
    }
}

extension Ledger {
    /// Erases entries' personal data from the ledger: appends `entry.erased` for each (durably), then rewrites every
    /// earlier record about them as a redacted record (same seq, type and recorded_at; only the entry id kept),
    /// replaces the log file atomically, and rewrites the snapshots.
    ///
    /// A crash at any point leaves the old file or the new one; opening a ledger whose erasure is incomplete
    /// finishes it.
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
        try core.withLock { core in
            guard !options.readOnly else { throw EventLogError(.notWritable, "the ledger was opened read-only") }
            let wanted = Set(ids)
            guard !wanted.isEmpty else {
                return EraseReport(erased: [], recordsRedacted: 0, bytesWritten: 0, backups: backups())
            }
            let named = try Self.namedEntryIDs(in: core.log)
            for id in ids where !named.contains(id) {
                throw MoodError(
                    code: .notFound, field: "entry_id",
                    rule: "no entry \(id) to erase (never logged, or already erased)")
            }
            if !ignoringDestinations {
                try deciding(&core) { state in
                    for id in ids {
                        for destination in SyncDestination.allCases {
                            if state.outbox.record(OutboxKey(entryID: id, destination: destination))?.remoteID != nil {
                                throw MoodError(
                                    code: .heldElsewhere, field: "entry_id",
                                    rule:
                                        "\(destination.rawValue) holds a copy of entry \(id): delete it and sync first "
                                        + "(moodledger erase does that), or erase only here")
                            }
                        }
                    }
                }
            }
            let now = options.clock()
            // Streamed: `erase --all` of a large ledger appends one event per entry.
            try appendStreaming(
                ids.lazy.map { .entryErased($0, Erasure(reason: reason, requestedBy: requestedBy)) },
                now: now, to: &core)
            try core.log.sync()
            return try finishErasures(&core)
        }
    }

    /// Rewrites every record about the pending erasures as redacted, marks their `entry.erased` complete, and
    /// replaces the snapshots. Idempotent: what is already redacted stays as it is.
    func finishErasures(_ core: inout Core) throws -> EraseReport {
        let pending = core.state.pendingErasures
        guard !pending.isEmpty else {
            return EraseReport(erased: [], recordsRedacted: 0, bytesWritten: 0, backups: backups())
        }
        // Snapshots hold the entries' data: removed before the new log replaces the old one, so a crash after the
        // rename cannot leave them behind (before it, the erasure is still pending and finished on the next open).
        try store.removeAll()
        // A rewrite killed before its rename left its temp file (redacted data only): the writer lock is ours.
        for name in (try? options.io.contents(ofDirectory: path)) ?? []
        where name.hasPrefix(LogFormat.logFileName + ".tmp-") {
            try? options.io.remove(path + "/" + name)
        }
        let report = try core.log.rewritePayloads { view in
            guard view.type & LogFormat.safeToIgnoreBit == 0, view.payload.count >= 33,
                let id = EventCodec.entryID(inPayload: view.payload), let erasedAt = pending[id], view.seq <= erasedAt
            else { return nil }
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
                .syncFailed(_, let destination, _), .syncRequeued(_, let destination, _):
                redaction.destination = destination
            default: break
            }
            return EventCodec.encode(.redacted(id, redaction), commandID: decoded.commandID)
        }
        // What replaying the rewritten records gives: the erasures are complete.
        core.state.pendingErasures = [:]
        _ = try writeSnapshot(&core)
        return EraseReport(
            erased: pending.keys.sorted(), recordsRedacted: report.recordsRewritten,
            bytesWritten: report.bytesWritten, backups: backups())
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
        return try Self.namedEntryIDs(in: eventLog).sorted()
    }

    /// The entries the log names with their data: every event's entry id, minus those whose `entry.erased` came
    /// after their last event (redacted records and the all-zero id do not count).
    static func namedEntryIDs(in log: EventLog) throws -> Set<EntryID> {
        var named = Set<EntryID>()
        try log.forEach(from: 1) { view in
            guard view.type & LogFormat.safeToIgnoreBit == 0, !EventCodec.isRedacted(view.payload),
                let id = EventCodec.entryID(inPayload: view.payload),
                id != .none
            else { return true }
            if view.type == EventType.entryErased.rawValue { named.remove(id) } else { named.insert(id) }
            return true
        }
        return named
    }
}
