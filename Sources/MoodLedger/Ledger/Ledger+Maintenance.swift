import EventLog
import Platform

/// The result of ``Ledger/verify(at:io:)``: the log's records and every event's payload checked.
public struct LedgerVerifyReport: Sendable, Equatable {
    /// Whether nothing is damaged (an unfinished write at the end is not damage).
    public var ok: Bool { problems.isEmpty }
    /// How many valid records were read.
    public var records: UInt64
    /// Damage to the log and events that do not decode, in file order.
    public var problems: [LogDamage]
    /// Bytes at the end that no acknowledged write owns (a writer appending now, or one that stopped before its
    /// sync returned): nothing acknowledged is in them, and the next writer trims them.
    public var unfinishedWrite: LogDamage?
    /// An erasure's redaction in place that is not finished (`events.log.redo`): not damage; the next open finishes
    /// it. The events are not decoded meanwhile (some of its records may be half written): verify again after.
    public var unfinishedRedaction: LogDamage?

    /// `{"ok", "records", "problems": [{"offset", "seq", "problem"}], "unfinished_write": {"offset", "seq",
    /// "problem"} or null, "unfinished_redaction": the same or null}`.
    public var json: JSONValue {
        func damage(_ item: LogDamage) -> JSONValue {
            .object([("offset", .int(item.offset)), ("seq", .int(Int64(item.seq))), ("problem", .string(item.problem))])
        }
        return .object([
            ("ok", .bool(ok)), ("records", .int(Int64(records))), ("problems", .array(problems.map(damage))),
            ("unfinished_write", unfinishedWrite.map(damage) ?? .null),
            ("unfinished_redaction", unfinishedRedaction.map(damage) ?? .null)
        ])
    }
}

/// Sizes and files of a ledger.
public struct LedgerStats: Sendable, Equatable {
    public var events: UInt64
    public var entries: Int
    public var lastSeq: UInt64
    public var logFiles: [String]
    public var snapshotFiles: [String]
    public var bytes: Int64

    public var json: JSONValue {
        .object([
            ("events", .int(Int64(events))), ("entries", .int(Int64(entries))), ("last_seq", .int(Int64(lastSeq))),
            ("log_files", .array(logFiles.map { .string($0) })),
            ("snapshot_files", .array(snapshotFiles.map { .string($0) })), ("bytes", .int(bytes))
        ])
    }
}

extension Ledger {
    /// Checks every record's checksums and that every event decodes, without opening the ledger for writing.
    /// - Parameters:
    ///   - path: the ledger directory.
    ///   - io: the system-call layer.
    /// - Throws: `EventLogError` `notFound` or `io`.
    public static func verify(at path: String, io: any PlatformIO = SystemIO()) throws -> LedgerVerifyReport {
        let evidence = SnapshotStore(ledgerDirectory: path, io: io).evidence()
        let report = try EventLog.verify(directory: path, io: io, evidence: evidence)
        var problems = report.problems
        if report.ok, report.unfinishedRedaction == nil {
            var configuration = EventLog.Configuration()
            configuration.access = .readOnly
            configuration.io = io
            let log = try EventLog.open(directory: path, configuration: configuration)
            defer { log.close() }
            try log.forEach { view in
                if view.type & LogFormat.safeToIgnoreBit == 0 {
                    do throws(MoodError) { _ = try decode(view) } catch {
                        problems.append(LogDamage(offset: view.offset, seq: view.seq, problem: error.rule))
                    }
                }
                return true
            }
        }
        return LedgerVerifyReport(
            records: report.records, problems: problems, unfinishedWrite: report.unfinishedWrite,
            unfinishedRedaction: report.unfinishedRedaction)
    }

    /// Repairs a damaged ledger log (see `EventLog/repair(directory:mode:io:evidence:rejecting:)`) and discards the snapshots,
    /// which may describe records that are gone. The ledger must not be open.
    /// - Throws: `EventLogError` `locked`, `notFound` or `io`.
    public static func repair(
        at path: String, mode: EventLog.RepairMode, io: any PlatformIO = SystemIO()
    ) throws
        -> EventLog.RepairReport
    {
        // A record whose framing is sound but whose event does not decode is damage like any other: repair drops its
        // batch (salvage) or cuts before it (truncate), so that the repaired log verifies.
        // The snapshots' evidence first: a loss they prove is recorded in the log (lost records) before they go.
        let evidence = SnapshotStore(ledgerDirectory: path, io: io).evidence()
        let report = try EventLog.repair(directory: path, mode: mode, io: io, evidence: evidence) { view in
            guard view.type & LogFormat.safeToIgnoreBit == 0 else { return nil }
            do throws(MoodError) { _ = try decode(view) } catch { return error.rule }
            return nil
        }
        if report.backupPath != nil { try SnapshotStore(ledgerDirectory: path, io: io).removeAll() }
        return report
    }

    /// Counts and files.
    public var stats: LedgerStats {
        let (state, log) = { ($0.state, $0.log) }(published.current)
        let snapshots = snapshotFiles
        let snapshotBytes = snapshots.reduce(Int64(0)) { sum, file in
            sum + ((try? AtomicFile.size(of: file, io: options.io)) ?? 0)
        }
        return LedgerStats(
            events: log.lastSeq, entries: state.entries.count, lastSeq: log.lastSeq,
            logFiles: [log.path], snapshotFiles: snapshots, bytes: log.endOffset + snapshotBytes)
    }
}
