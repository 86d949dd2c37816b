import EventLog

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
        .object([("rows", .int(Int64(rows))), ("created", .int(Int64(created))), ("existing", .int(Int64(existing))),
                 ("merged", .int(Int64(merged))), ("differing", .int(Int64(differing))), ("updated", .int(Int64(updated))),
                 ("appended_events", .int(Int64(appended))),
                 ("truncated_lines", .array(truncatedLines.map { .int(Int64($0)) })),
                 ("skipped", .array(skipped.map { .string($0) })),
                 ("adjusted_times", .array(adjustedTimes.map { .string($0) })), ("dry_run", .bool(dryRun))])
    }
}

extension Ledger {
    /// Imports a parsed file atomically: every row is validated against the ledger first (later rows see earlier
    /// ones), then all events are appended as one batch with one sync. A bad row imports nothing.
    /// - Parameters:
    ///   - plan: the parsed file.
    ///   - dryRun: report what would happen, append nothing.
    /// - Returns: the report.
    /// - Throws: ``ImportError`` naming the line and field of the first invalid row; ``EventLogError``.
    ///   - updateExisting: rows already imported (same source id) whose values differ update their entry (one
    ///     update and word edits per changed entry); otherwise they are only counted in ``ImportReport/differing``.
    public func importPlan(_ plan: ImportPlan, dryRun: Bool = false, updateExisting: Bool = false) throws -> ImportReport {
        try core.withLock { core in
            if !dryRun, options.readOnly { throw EventLogError(.notWritable, "the ledger was opened read-only") }
            var report = ImportReport(rows: plan.rows.count, truncatedLines: plan.truncatedLines,
                                      skipped: plan.skipped.map { "line \($0.line): \($0.reason)" },
                                      adjustedTimes: plan.adjustedTimes, dryRun: dryRun)
            let now = options.clock()
            var scratch = core.state
            var events: [MoodEvent] = []
            for row in plan.rows {
                let decided: ([MoodEvent], EntryID, Bool)
                var corrected = false
                do {
                    if let sourceID = row.draft.sourceID,
                       let existing = scratch.entries.entry(source: row.draft.source, sourceID: sourceID) {
                        // Already imported: do the values differ (a corrected --tz, --mood-map…)?
                        let events = (try? Self.events(replacing: existing.id, with: MoodReplacement(row.draft), in: scratch,
                                                       now: now, bounds: options.loggedAtBounds)) ?? []
                        if !events.isEmpty { report.differing += 1 }
                        corrected = updateExisting && !events.isEmpty
                        decided = (corrected ? events : [], existing.id, false)
                    } else {
                        decided = try Self.decide(row.draft, in: scratch, now: now, options: options)
                    }
                } catch let error as MoodError {
                    throw ImportError(line: row.line, field: error.field, problem: error.rule)
                }
                let (rowEvents, _, created) = decided
                if corrected { report.updated += 1 } else if rowEvents.isEmpty { report.existing += 1 }
                else if created { report.created += 1 } else { report.merged += 1 }
                for event in rowEvents {
                    scratch.apply(RecordedEvent(seq: scratch.seq + 1, recordedAt: now * 1000, commandID: EntryID(high: 0, low: 0),
                                                event: event))
                }
                events += rowEvents
            }
            guard !dryRun else { return report }
            try append(events, now: now, to: &core)
            report.appended = events.count
            return report
        }
    }
}
