import EventLog

/// The result of ``Ledger/verify(at:io:)``: the log's records and every event's payload checked.
public struct LedgerVerifyReport: Sendable, Equatable {
    public var ok: Bool { problems.isEmpty }
    public var records: UInt64
    public var problems: [LogDamage]

    /// `{"ok", "records", "problems": [{"offset", "seq", "problem"}]}`.
    public var json: JSONValue {
        .object([("ok", .bool(ok)), ("records", .int(Int64(records))),
                 ("problems", .array(problems.map {
                     .object([("offset", .int($0.offset)), ("seq", .int(Int64($0.seq))), ("problem", .string($0.problem))])
                 }))])
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
        .object([("events", .int(Int64(events))), ("entries", .int(Int64(entries))), ("last_seq", .int(Int64(lastSeq))),
                 ("log_files", .array(logFiles.map { .string($0) })),
                 ("snapshot_files", .array(snapshotFiles.map { .string($0) })), ("bytes", .int(bytes))])
    }
}

extension Ledger {
    /// Checks every record's checksums and that every event decodes, without opening the ledger for writing.
    /// - Parameters:
    ///   - path: the ledger directory.
    ///   - io: the system-call layer.
    /// - Throws: `EventLogError` `notFound` or `io`.
    public static func verify(at path: String, io: any PlatformIO = SystemIO()) throws -> LedgerVerifyReport {
        let report = try EventLog.verify(directory: path, io: io)
        var problems = report.problems
        if report.ok {
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
        return LedgerVerifyReport(records: report.records, problems: problems)
    }

    /// Repairs a damaged ledger log (see `EventLog/repair(directory:mode:io:)`) and discards the snapshots,
    /// which may describe records that are gone. The ledger must not be open.
    /// - Throws: `EventLogError` `locked`, `notFound` or `io`.
    public static func repair(at path: String, mode: EventLog.RepairMode, io: any PlatformIO = SystemIO()) throws
        -> EventLog.RepairReport {
        let report = try EventLog.repair(directory: path, mode: mode, io: io)
        if report.backupPath != nil { try SnapshotStore(ledgerDirectory: path, io: io).removeAll() }
        return report
    }

    /// Counts and files.
    public var stats: LedgerStats {
        let (state, log) = core.withLock { ($0.state, $0.log) }
        let snapshots = snapshotFiles
        let snapshotBytes = snapshots.reduce(Int64(0)) { sum, file in
            sum + ((try? AtomicFile.size(of: file, io: options.io)) ?? 0)
        }
        return LedgerStats(events: log.lastSeq, entries: state.entries.count, lastSeq: log.lastSeq,
                           logFiles: [log.path], snapshotFiles: snapshots, bytes: log.endOffset + snapshotBytes)
    }
}
