extension EventLog {
    /// The result of ``EventLog/verify(directory:io:)``.
    public struct VerifyReport: Sendable, Equatable {
        /// Whether the log has no damage and no torn tail.
        public var ok: Bool { problems.isEmpty }
        /// How many valid records were read.
        public var records: UInt64
        /// Every problem found, in file order (after damage the check resynchronises and goes on).
        public var problems: [LogDamage]
    }

    /// How ``EventLog/repair(directory:mode:io:)`` mends damage.
    public enum RepairMode: String, Sendable {
        /// Cut the log at the first damage.
        case truncate
        /// Keep every valid record after the damage; mark destroyed sequence numbers as lost.
        case salvage
    }

    /// What a repair did.
    public struct RepairReport: Sendable, Equatable {
        /// Where the copy of the damaged file was put (`nil` when nothing needed repair).
        public var backupPath: String?
        /// The mode used.
        public var mode: RepairMode
        /// Valid records kept.
        public var keptRecords: UInt64
        /// Sequence numbers lost (in salvage they are now *lost* records; in truncate everything after the cut).
        public var lostSeqs: [ClosedRange<UInt64>]
        /// Byte ranges of the old file that were dropped.
        public var droppedBytes: [Range<Int64>]
        /// The problems that were repaired.
        public var problems: [LogDamage]
    }

    /// Checks every record of the log in `directory` without changing anything. Takes no lock.
    /// - Parameters:
    ///   - directory: the log directory.
    ///   - io: the system-call layer.
    /// - Returns: the records counted and every problem found.
    /// - Throws: ``EventLogError`` `notFound` or `io`.
    public static func verify(directory: String, io: any PlatformIO = SystemIO()) throws -> VerifyReport {
        let path = directory + "/" + LogFormat.logFileName
        guard io.exists(path) else { throw EventLogError(.notFound, "no event log at \(path)") }
        let survey = try LogSurvey.survey(path: path, io: io)
        return VerifyReport(records: survey.recordCount, problems: survey.problems.map {
            LogDamage(offset: $0.offset, seq: $0.seq, problem: $0.problem)
        })
    }

    /// Repairs a damaged log: copies it aside first (`events.log.broken-<timestamp>`), then truncates at the
    /// first damage or salvages every valid record after it.
    ///
    /// - Parameters:
    ///   - directory: the log directory; its writer lock is taken for the repair.
    ///   - mode: truncate or salvage.
    ///   - io: the system-call layer.
    /// - Returns: what was kept, what was lost and where the copy is.
    /// - Throws: ``EventLogError`` `locked`, `notFound` or `io`.
    public static func repair(directory: String, mode: RepairMode, io: any PlatformIO = SystemIO()) throws
        -> RepairReport {
        let path = directory + "/" + LogFormat.logFileName
        guard io.exists(path) else { throw EventLogError(.notFound, "no event log at \(path)") }
        let lockFD = try EventLogFiles.acquireLock(directory: directory, io: io)
        defer { io.close(lockFD) }
        let survey = try LogSurvey.survey(path: path, io: io)
        var report = RepairReport(backupPath: nil, mode: mode, keptRecords: survey.recordCount, lostSeqs: [],
                                  droppedBytes: [], problems: survey.problems.map {
                                      LogDamage(offset: $0.offset, seq: $0.seq, problem: $0.problem)
                                  })
        guard !survey.problems.isEmpty else { return report }
        let backup = try backupName(for: path, io: io)
        try EventLogFiles.copy(path, to: backup, io: io)
        report.backupPath = backup

        var header = survey.header ?? LogFormat.FileHeader(fileID: io.randomBytes(16), baseSeq: 0,
                                                           maxPayload: UInt32(LogFormat.maximumPayloadSize))
        var runs = survey.runs
        if mode == .truncate {
            // Keep only the run that starts the file (if the header is sound and the first record is valid).
            let firstDamage = survey.problems[0].offset
            runs = runs.filter { $0.end <= firstDamage }
            if survey.header == nil { runs = [] }
            let kept = runs.last?.lastSeq ?? header.baseSeq
            let lastFound = survey.runs.last?.lastSeq ?? kept
            if lastFound > kept { report.lostSeqs = [(kept + 1)...lastFound] }
            report.keptRecords = runs.reduce(0) { $0 + ($1.lastSeq - $1.firstSeq + 1) }
            report.droppedBytes = [firstDamage..<survey.size]
        } else {
            report.droppedBytes = survey.problems.map { $0.offset..<($0.offset + $0.length) }
        }
        if survey.header == nil { header.baseSeq = 0 }

        let fd = try wrapIO("cannot read \(path)") { try io.open(path, .readOnly) }
        defer { io.close(fd) }
        let reader = ChunkReader(io: io, fd: fd, limit: survey.size)
        var output = header.encoded()
        var expected = header.baseSeq + 1
        var lastTime = runs.first?.firstRecordedAt ?? 0
        for run in runs {
            if run.firstSeq > expected {
                report.lostSeqs.append(expected...(run.firstSeq - 1))
                for seq in expected..<run.firstSeq {
                    LogFormat.appendRecord(to: &output, seq: seq, type: LogFormat.lostRecordType, recordedAt: lastTime,
                                           payload: UnsafeRawBufferPointer(start: nil, count: 0))
                }
            }
            var offset = run.start
            while offset < run.end {
                let count = Int(min(Int64(1 << 20), run.end - offset))
                output.append(contentsOf: try reader.bytes(at: offset, count: count)!)
                offset += Int64(count)
            }
            expected = run.lastSeq + 1
            lastTime = run.lastRecordedAt
        }
        try AtomicFile.write(output, to: path, io: io)
        return report
    }

    /// `events.log.broken-<yyyyMMdd'T'HHmmss'Z'>`, with `-2`, `-3`… if that name is taken.
    private static func backupName(for path: String, io: any PlatformIO) throws -> String {
        let base = path + ".broken-" + UTCTimestamp.compact(microseconds: io.now())
        var candidate = base
        var n = 2
        while io.exists(candidate) {
            candidate = base + "-\(n)"
            n += 1
        }
        return candidate
    }
}

/// Formats instants as UTC text without Foundation.
enum UTCTimestamp {
    /// `yyyyMMdd'T'HHmmss'Z'`.
    static func compact(microseconds: Int64) -> String {
        let seconds = microseconds >= 0 ? microseconds / 1_000_000 : (microseconds - 999_999) / 1_000_000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilCalendar.date(daysSinceEpoch: days)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return pad(year, 4) + pad(month, 2) + pad(day, 2) + "T" + pad(secondOfDay / 3600, 2)
            + pad(secondOfDay % 3600 / 60, 2) + pad(secondOfDay % 60, 2) + "Z"
    }
}

/// The proleptic Gregorian calendar by day number (Howard Hinnant's algorithms), shared by every layer.
public enum CivilCalendar {
    /// (year, month 1–12, day 1–31) of a day counted from 1970-01-01.
    public static func date(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
