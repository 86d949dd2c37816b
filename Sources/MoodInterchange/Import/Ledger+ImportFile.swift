import MoodLedger

extension Ledger {
    /// Imports a parsed file atomically: every row is validated against the ledger (later rows see earlier ones),
    /// and all events are appended as one batch with one sync. A bad row imports nothing.
    /// - Parameters:
    ///   - plan: the parsed file.
    ///   - dryRun: report what would happen, append nothing.
    ///   - updateExisting: rows already imported (same source id) whose values differ update their entry (one
    ///     update and word edits per changed entry); otherwise they are only counted in ``ImportReport/differing``.
    /// - Returns: the report.
    /// - Throws: ``ImportError`` naming the line and field of the first invalid row; `EventLogError`.
    public func importPlan(
        _ plan: ImportPlan, dryRun: Bool = false, updateExisting: Bool = false
    ) throws -> ImportReport {
        var index = 0
        var report = try importRows(dryRun: dryRun, updateExisting: updateExisting, nowMilliseconds: options.clock()) {
            defer { index += 1 }
            return index < plan.rows.count ? (plan.rows[index], nil) : nil
        }
        report.note(plan)
        return report
    }

    /// Imports a file read row by row (``ImportStream``, parsed on a second thread a few batches ahead), atomically,
    /// with memory that does not grow with the file: each row is validated, its events encoded and written as it
    /// comes, and the batch is synced once at the end
    /// (an unfinished batch, after a crash or a bad row, is never visible: `Specs/log-format.md`, *Batches*).
    /// - Parameters:
    ///   - stream: the rows.
    ///   - dryRun: report what would happen, append nothing.
    ///   - updateExisting: as for ``importPlan(_:dryRun:updateExisting:)``.
    /// - Returns: the report.
    /// - Throws: ``ImportError`` naming the line and field of the first invalid row (nothing imported);
    ///   `EventLogError`; what reading the file throws.
    public func importStream(
        _ stream: inout ImportStream, dryRun: Bool = false, updateExisting: Bool = false
    ) throws
        -> ImportReport
    {
        // The file is parsed and each draft validated on a second thread while this one decides and writes
        // (`RowPipeline`): validation needs no ledger state, only the import's time and the ledger's rules.
        let now = options.clock()
        let (zone, offset, bounds) = (options.zone, options.utcOffsetMinutes, options.loggedAtBounds)
        let pipeline = RowPipeline(stream) { draft in
            Result { () throws(MoodError) in
                try MoodRules.validate(
                    draft, now: now, defaultOffsetMinutes: zone?.offsetMinutes(atUTC: now) ?? offset, bounds: bounds,
                    newID: { .none })
            }
        }
        let result = Result {
            try importRows(dryRun: dryRun, updateExisting: updateExisting, nowMilliseconds: now) {
                try pipeline.next().map { ($0.row, $0.entry) }
            }
        }
        stream = pipeline.finish()
        var report = try result.get()
        report.note(stream.plan)
        return report
    }
}

extension ImportReport {
    /// Takes what the reader noted beside the rows.
    mutating func note(_ plan: ImportPlan) {
        truncatedLines = plan.truncatedLines
        skipped = plan.skipped.map { "line \($0.line): \($0.reason)" }
        adjustedTimes = plan.adjustedTimes
    }
}
