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
        if survey.header == nil { header.baseSeq = 0 }
        // The last seq the damaged file appears to have held: every seq after what is kept, up to it, is lost.
        let lastFound = max(survey.runs.last?.lastSeq ?? header.baseSeq,
                            survey.problems.compactMap(\.lostThrough).max() ?? header.baseSeq)
        var runs = survey.runs
        if mode == .truncate {
            // Keep only the run that starts the file (if the header is sound and the first record is valid).
            let firstDamage = survey.problems[0].offset
            runs = runs.filter { $0.end <= firstDamage }
            if survey.header == nil { runs = [] }
            report.droppedBytes = [(runs.last?.end ?? Int64(LogFormat.fileHeaderSize))..<survey.size]
        }

        let fd = try wrapIO("cannot read \(path)") { try io.open(path, .readOnly) }
        defer { io.close(fd) }
        let reader = ChunkReader(io: io, fd: fd, limit: survey.size)
        var salvage = Salvage(output: header.encoded(), expected: header.baseSeq + 1,
                              lastTime: runs.first?.firstRecordedAt ?? 0)
        for run in runs {
            try salvage.copy(run, from: reader, maxPayload: Int(header.maxPayload))
        }
        if mode == .salvage {
            salvage.markLost(through: lastFound)
        } else if lastFound >= salvage.expected {
            salvage.lost.append(salvage.expected...lastFound)
        }
        report.lostSeqs = salvage.lost
        report.keptRecords = salvage.kept
        if mode == .salvage {
            report.droppedBytes = salvage.droppedBytes(of: runs, problems: survey.problems, size: survey.size)
        }
        // The repaired file must itself pass every rule of the format before it replaces the damaged one.
        try AtomicFile.write(salvage.output, to: path, io: io) { temp in
            let check = try LogSurvey.survey(path: temp, io: io)
            if let problem = check.problems.first {
                throw EventLogError(.corrupted, "repair could not produce a valid log (\(problem.problem) at byte "
                    + "offset \(problem.offset)); \(path) was left as it was", offset: problem.offset, seq: problem.seq)
            }
        }
        return report
    }

    /// The repaired file being built: whole batches copied from runs of valid records, *lost* records for gaps.
    private struct Salvage {
        var output: [UInt8]
        /// The next seq the output needs.
        var expected: UInt64
        /// The recorded_at of the last record written (records never go back in time).
        var lastTime: Int64
        var lost: [ClosedRange<UInt64>] = []
        var kept: UInt64 = 0

        /// Writes one *lost* record standing for `expected…last` (an empty payload for a single seq, else the
        /// range's last seq as 8 bytes), if that range is not empty.
        mutating func markLost(through last: UInt64) {
            guard last >= expected else { return }
            var payload: [UInt8] = []
            if last > expected { payload.appendLE(last) }
            payload.withUnsafeBytes {
                _ = LogFormat.appendRecord(to: &output, seq: expected, type: LogFormat.lostRecordType,
                                           recordedAt: lastTime, payload: $0)
            }
            lost.append(expected...last)
            expected = last + 1
        }

        /// Copies a run batch by batch; a batch that would go back in time is dropped (its seqs become lost).
        mutating func copy(_ run: LogSurvey.Run, from reader: ChunkReader, maxPayload: Int) throws {
            var scanner = RecordScanner(reader: reader, maxPayload: maxPayload, offset: run.start, nextSeq: run.firstSeq)
            var batch: [UInt8] = []
            var batchFirstSeq = run.firstSeq
            var batchTime: Int64 = .min
            var batchRecords: UInt64 = 0
            while scanner.offset < run.end {
                guard case .record(let view) = try scanner.next() else {
                    throw EventLogError(.io, "the log changed while it was being repaired", offset: scanner.offset)
                }
                if batch.isEmpty {
                    batchFirstSeq = view.seq
                    batchTime = view.recordedAt
                    batchRecords = 0
                }
                batch.append(contentsOf: try reader.bytes(at: view.offset, count: view.size)!)
                batchRecords += view.lastSeq - view.seq + 1
                if view.continuesBatch { continue }
                if batchTime >= lastTime {
                    markLost(through: batchFirstSeq - 1)
                    output.append(contentsOf: batch)
                    kept += batchRecords
                    expected = view.lastSeq + 1
                    lastTime = view.recordedAt
                }
                batch.removeAll(keepingCapacity: true)
            }
        }

        /// The byte ranges of the damaged file that the output does not carry.
        func droppedBytes(of runs: [LogSurvey.Run], problems: [LogSurvey.Problem], size: Int64) -> [Range<Int64>] {
            var dropped: [Range<Int64>] = []
            var position = Int64(LogFormat.fileHeaderSize)
            for run in runs {
                if run.start > position { dropped.append(position..<run.start) }
                position = max(position, run.end)
            }
            if size > position { dropped.append(position..<size) }
            if problems.first?.offset == 0 { dropped.insert(0..<Int64(LogFormat.fileHeaderSize), at: 0) }
            return dropped
        }
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
