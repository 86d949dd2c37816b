import EventLog
import Platform

/// What an import did (or, dry, would do).
public struct ImportReport: Sendable, Equatable {
    /// Rows in the file.
    public var rows = 0
    /// Entries created.
    public var created = 0
    /// Rows already in the ledger (same source id or id): nothing appended for them.
    public var existing = 0
    /// Daily moods that updated the day's existing one.
    public var merged = 0
    /// Rows already imported (same source id) whose values differ from the entry's now.
    public var differing = 0
    /// Of those, how many were updated (with `updateExisting`).
    public var updated = 0
    /// Events appended (0 for a dry run).
    public var appended = 0
    /// Lines whose notes were cut to 500 characters.
    public var truncatedLines: [Int] = []
    /// Records skipped on purpose, with why.
    public var skipped: [String] = []
    /// Local times the zone skipped or repeated, and what was done with each.
    public var adjustedTimes: [String] = []
    /// Whether nothing was appended on purpose.
    public var dryRun = false

    public var json: JSONValue {
        .object([
            ("rows", .int(Int64(rows))), ("created", .int(Int64(created))), ("existing", .int(Int64(existing))),
            ("merged", .int(Int64(merged))), ("differing", .int(Int64(differing))), ("updated", .int(Int64(updated))),
            ("appended_events", .int(Int64(appended))),
            ("truncated_lines", .array(truncatedLines.map { .int(Int64($0)) })),
            ("skipped", .array(skipped.map { .string($0) })),
            ("adjusted_times", .array(adjustedTimes.map { .string($0) })), ("dry_run", .bool(dryRun))
        ])
    }
}

extension Ledger {
    /// The one import path: rows decided against a scratch state that sees the earlier rows, their events streamed
    /// into one batch; the scratch state becomes the ledger's once the batch is durable. The scratch holds the
    /// entries the import creates apart, compactly, and reads them back from the log when a later row asks
    /// (``ImportScratch``): an import's memory does not grow with its entries' contents. When the import makes a
    /// snapshot due, it is written from the state and the held entries read back day by day, and the ledger reads
    /// through it; otherwise the held entries join the state.
    /// - Parameter next: the next row, with its draft already validated (at `now`, without an id) when it was.
    ///
    /// Long because its nested row handler shares the command, the time, the scratch and the counts with the
    /// streamed append around it; they live and fail together.
    package func importRows(
        dryRun: Bool, updateExisting: Bool, nowMilliseconds now: Int64,
        next: () throws -> (ImportRow, Result<MoodEntry, MoodError>?)?
    ) throws -> ImportReport {
        try writing { core in
            if !dryRun, options.readOnly { throw EventLogError(.notWritable, "the ledger was opened read-only") }
            var report = ImportReport(dryRun: dryRun)
            let time = max(core.log.lastRecordedAt, now * 1000)
            let command = options.newID()
            replaceIfDamaged(&core)
            let scratch = ImportScratch(core.state, holds: !dryRun)
            var appended = 0
            func handle(
                _ row: ImportRow, validated: Result<MoodEntry, MoodError>?,
                emit: ((PendingRecord) throws -> StreamedRecord)?
            ) throws {
                report.rows += 1
                let decided: ([MoodEvent], EntryID, Bool)
                var corrected = false
                do {
                    if let sourceID = row.draft.sourceID,
                        let existing = try scratch.entry(source: row.draft.source, sourceID: sourceID)
                    {
                        // Already imported: do the values differ (a corrected --tz, --mood-map…)?
                        let events =
                            (try? Self.events(
                                replacing: existing, with: MoodReplacement(row.draft), now: now,
                                bounds: options.loggedAtBounds)) ?? []
                        if !events.isEmpty { report.differing += 1 }
                        corrected = updateExisting && !events.isEmpty
                        decided = (corrected ? events : [], existing.id, false)
                    } else {
                        decided = try Self.decide(
                            row.draft, in: scratch, now: now, options: options, validated: validated)
                    }
                } catch let error as MoodError {
                    throw ImportError(line: row.line, field: error.field, problem: error.rule)
                }
                if scratch.readsDamagedSnapshot {
                    // Decided from a snapshot piece that fails its checksum: nothing of the import is appended.
                    throw EventLogError(
                        .corrupted,
                        "a snapshot piece failed its checksum during the import (nothing was "
                            + "imported); open the ledger again and repeat the import")
                }
                let (events, _, created) = decided
                if corrected {
                    report.updated += 1
                } else if events.isEmpty {
                    report.existing += 1
                } else if created {
                    report.created += 1
                } else {
                    report.merged += 1
                }
                for event in events {
                    let written = try emit?(Self.record(event, command: command, recordedAtMicroseconds: time))
                    try scratch.apply(
                        RecordedEvent(seq: scratch.seq + 1, recordedAt: time, commandID: command, event: event),
                        at: written)
                    appended += 1
                }
            }
            guard !dryRun else {
                while let (row, validated) = try next() { try handle(row, validated: validated, emit: nil) }
                return report
            }
            let seqs = try core.log.appendStream { emit, payload in
                try withoutActuallyEscaping(emit) { emit in
                    try withoutActuallyEscaping(payload) { payload in
                        scratch.fetch = { record in
                            try payload(record).withUnsafeBytes {
                                try ImportScratch.entry(createdBy: $0, recordedAt: time)
                            }
                        }
                        defer { scratch.fetch = nil }
                        while let (row, validated) = try next() { try handle(row, validated: validated, emit: emit) }
                    }
                }
            }
            guard let seqs else { return report }
            // The scratch state folded exactly these events at these seqs and this time: it is the ledger's now.
            precondition(seqs.upperBound == scratch.seq, "the import's scratch state and the log disagree")
            scratch.endBatch()
            report.appended = appended
            core.sinceSnapshot += appended
            settle(scratch, into: &core)
            return report
        }
    }

    /// Makes an import's scratch state the ledger's, its batch being durable: through a snapshot written from it when
    /// one is due (the held entries read back day by day), else with the held entries read back into it. The import
    /// has happened whatever this meets: should its records not read back, the state is rebuilt from the log, and
    /// failing that a notice says to open the ledger again.
    private func settle(_ scratch: ImportScratch, into core: inout Core) {
        // The ids' table stays while a snapshot may ask which ids are entries (its revisions are listed apart from
        // the rows' for the others); the rest goes, and its pages go back before the end's own tables grow.
        scratch.dropLookups(keepingIDs: true)
        defer { scratch.dropIDs() }
        SystemIO.releaseFreeMemory()
        do {
            let fetcher = try core.log.fetcher()
            if options.snapshotInterval > 0, core.sinceSnapshot >= options.snapshotInterval,
                let location = core.log.lastRecord
            {
                do {
                    try store.write(
                        scratch.state, days: scratch.days(from: fetcher), rowCapacity: scratch.entryCount,
                        isEntry: { scratch.contains($0) }, revision: { scratch.revision(of: $0) },
                        positions: Self.positions(of: core.log, through: location), location: location,
                        fileID: core.log.fileID)
                    store.prune(sparseInterval: options.sparseSnapshotInterval, logBytes: core.log.endOffset)
                    if case .success(let image) = store.load(
                        seq: location.seq, fileID: core.log.fileID,
                        checkWhereReadFrom: options.checkSnapshotsWhereReadFrom)
                    {
                        core.state = LedgerState(image: image)
                        core.sinceSnapshot = 0
                        return
                    }
                } catch {
                    // A snapshot is a cache: a failed one never fails the import (the entries join the state below).
                }
            }
            scratch.dropIDs()
            core.state = try scratch.materialized(from: fetcher)
        } catch {
            var fresh = LedgerState()
            if (try? Replayer.replay(
                core.log, from: .beginning, into: &fresh, pipelineThreshold: options.parallelReplayThreshold)) != nil
            {
                core.state = fresh
            } else {
                core.state = scratch.state
                core.laterNotices.append(
                    "the import was written, but its entries could not be read back (\(error)): "
                        + "open the ledger again to see them")
            }
        }
    }
}
