import Platform

extension EventLog {
    /// The result of ``EventLog/verify(directory:io:evidence:)``.
    public struct VerifyReport: Sendable, Equatable {
        /// Whether the log has no damage (an unfinished write at the end is not damage).
        public var ok: Bool { problems.isEmpty }
        /// How many valid records were read.
        public var records: UInt64
        /// Every problem found, in file order (after damage the check resynchronises and goes on).
        public var problems: [LogDamage]
        /// A torn tail: bytes at the end that no acknowledged write owns — a batch a writer is appending now, or
        /// one whose writer stopped before its sync returned. Never acknowledged, so nothing is lost; the next
        /// writer trims it.
        public var unfinishedWrite: LogDamage?
        /// An in-place redaction recorded in `events.log.redo` and not finished (a writer redacting now, or one that
        /// stopped): not damage — the records it changes read as it leaves them, and the next open finishes it.
        public var unfinishedRedaction: LogDamage?

        /// A report from its parts.
        public init(
            records: UInt64, problems: [LogDamage], unfinishedWrite: LogDamage? = nil,
            unfinishedRedaction: LogDamage? = nil
        ) {
            self.records = records
            self.problems = problems
            self.unfinishedWrite = unfinishedWrite
            self.unfinishedRedaction = unfinishedRedaction
        }
    }

    /// How ``EventLog/repair(directory:mode:io:evidence:rejecting:)`` mends damage.
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
    ///   - evidence: what proves the log once reached a sequence number (see ``Configuration/evidence``): a log that
    ///     ends below it has lost acknowledged records, reported as damage naming the range (and a torn tail beside
    ///     such a loss is damage too, not an unfinished write).
    /// - Returns: the records counted and every problem found.
    /// - Throws: ``EventLogError`` `notFound` or `io`.
    public static func verify(
        directory: String, io: any PlatformIO = SystemIO(), evidence: [Evidence] = []
    ) throws -> VerifyReport {
        let path = directory + "/" + LogFormat.logFileName
        guard io.exists(path) else { throw EventLogError(.notFound, "no event log at \(path)") }
        let survey = try LogSurvey.survey(path: path, io: io)
        var torn = survey.problems.last.flatMap { $0.isTornTail ? $0 : nil }
        var problems = survey.problems.filter { !$0.isTornTail }.map {
            LogDamage(offset: $0.offset, seq: $0.seq, problem: $0.problem)
        }
        // A redo journal: the records it rewrites may be half written (a writer between its steps); they read as
        // the journal leaves them. A journal that does not fit the log is damage.
        var redaction: LogDamage?
        let journalPath = directory + "/" + redoFileName
        if io.exists(journalPath), let header = survey.header {
            do {
                // The open's own decision: a journal an open would refuse is damage here too.
                let fd = try wrapIO("cannot open \(path)") { try io.open(path, .readOnly) }
                defer { io.close(fd) }
                let patches =
                    try applicableRedo(
                        directory: directory, fd: fd, fileID: header.fileID, maxPayload: Int(header.maxPayload), io: io)
                    ?? []
                let offsets = Set(patches.map(\.offset))
                problems.removeAll { offsets.contains($0.offset) }
                if let first = patches.first {
                    redaction = LogDamage(
                        offset: first.offset, seq: first.bytes.withUnsafeBytes { $0.u64(16) },
                        problem: "an in-place redaction of \(patches.count) record(s) is unfinished (\(redoFileName)); "
                            + "the next open finishes it")
                }
            } catch let error as EventLogError {
                problems.append(LogDamage(offset: 0, seq: 0, problem: error.message))
            }
        }
        if let missing = missing(in: survey, evidence: evidence) {
            if let tail = torn {
                problems.append(LogDamage(offset: tail.offset, seq: tail.seq, problem: tail.problem))
                torn = nil
            }
            problems.append(
                LogDamage(
                    offset: survey.size, seq: missing.seqs.lowerBound,
                    problem:
                        "acknowledged records are missing: seqs \(missing.seqs.lowerBound)…\(missing.seqs.upperBound) "
                        + "(\(missing.source) proves the log reached seq \(missing.seqs.upperBound))"))
        }
        return VerifyReport(
            records: survey.recordCount,
            problems: problems,
            unfinishedWrite: torn.map {
                LogDamage(
                    offset: $0.offset, seq: $0.seq,
                    problem: "an unfinished write of \($0.length) bytes, never acknowledged; "
                        + "the next writer trims it (\($0.problem))")
            }, unfinishedRedaction: redaction)
    }

    /// The sequence numbers `evidence` proves were written beyond the last one the surveyed file holds.
    static func missing(in survey: LogSurvey, evidence: [Evidence]) -> (seqs: ClosedRange<UInt64>, source: String)? {
        guard let header = survey.header, let proof = Evidence.strongest(evidence, for: header.fileID) else {
            return nil
        }
        let last = survey.runs.last?.lastSeq ?? header.baseSeq
        return proof.seq > last ? ((last + 1)...proof.seq, proof.source) : nil
    }

    /// Repairs a damaged log: writes an unfinished redaction's journal into it first (or keeps a journal that does
    /// not fit aside, `events.log.redo.broken-<timestamp>`), copies the log aside (`events.log.broken-<timestamp>`),
    /// then truncates at the first damage or salvages every valid record after it.
    ///
    /// - Parameters:
    ///   - directory: the log directory; its writer lock is taken for the repair.
    ///   - mode: truncate or salvage.
    ///   - io: the system-call layer.
    ///   - evidence: what proves the log once reached a sequence number (see ``verify(directory:io:evidence:)``):
    ///     seqs it proves that the file no longer holds are recorded as lost.
    ///   - reject: says why a record whose framing is valid cannot be kept (its content does not decode for the
    ///     layer above), or `nil` to keep it. A rejected record is damage like a framing error: its batch is
    ///     dropped and its seqs are lost (salvage), or the log is cut before its batch (truncate).
    /// - Returns: what was kept, what was lost and where the copy is.
    /// - Throws: ``EventLogError`` `locked`, `notFound` or `io`.
    ///
    /// Long because a repair is one sequence under the writer lock — journal, survey, backup, copy, loss records,
    /// replace — whose order is what keeps a copy of the damaged file before anything changes.
    public static func repair(
        directory: String, mode: RepairMode, io: any PlatformIO = SystemIO(), evidence: [Evidence] = [],
        rejecting reject: (RecordView) -> String? = { _ in nil }
    ) throws -> RepairReport {
        let path = directory + "/" + LogFormat.logFileName
        guard io.exists(path) else { throw EventLogError(.notFound, "no event log at \(path)") }
        let lock = try EventLogFiles.acquireLock(directory: directory, io: io)
        defer { io.close(lock.fd) }
        // A repair replaces the file: the next writer syncs on open, whatever happens here.
        try EventLogFiles.writeLockState(clean: false, to: lock.fd, io: io)
        let journalProblem = try finishRedoBeforeRepair(directory: directory, path: path, io: io)
        var survey = try LogSurvey.survey(path: path, io: io)
        let rejected = try rejectedRecords(in: survey, path: path, io: io, reject: reject)
        survey.problems = (survey.problems + rejected).sorted { $0.offset < $1.offset }
        var report = RepairReport(
            backupPath: nil, mode: mode, keptRecords: survey.recordCount, lostSeqs: [],
            droppedBytes: [],
            problems: journalProblem.map { [$0] } ?? [])
        report.problems += survey.problems.map { LogDamage(offset: $0.offset, seq: $0.seq, problem: $0.problem) }
        // A log that ends below what its evidence proves has lost acknowledged records even where its bytes read well
        // (a cut exactly at a record boundary): repaired like damage, the loss recorded.
        let proven = missing(in: survey, evidence: evidence)
        guard !survey.problems.isEmpty || proven != nil else { return report }
        let backup = try backupName(for: path, io: io)
        try EventLogFiles.copy(path, to: backup, io: io)
        report.backupPath = backup

        var header =
            survey.header
            ?? LogFormat.FileHeader(
                fileID: io.randomBytes(16), baseSeq: 0,
                maxPayload: UInt32(LogFormat.maximumPayloadSize))
        if survey.header == nil { header.baseSeq = 0 }
        // The last seq the damaged file appears to have held: every seq after what is kept, up to it, is lost.
        let lastFound = max(
            survey.runs.last?.lastSeq ?? header.baseSeq,
            survey.problems.compactMap(\.lostThrough).max() ?? header.baseSeq,
            proven?.seqs.upperBound ?? 0)
        var runs = survey.runs
        var limit = Int64.max
        if mode == .truncate {
            // Keep only the run that starts the file (if the header is sound and the first record is valid).
            let firstDamage = survey.problems.first?.offset ?? survey.size
            runs = runs.filter { $0.start < firstDamage }
            if survey.header == nil { runs = [] }
            limit = firstDamage
        }

        let fd = try wrapIO("cannot read \(path)") { try io.open(path, .readOnly) }
        defer { io.close(fd) }
        let reader = ChunkReader(io: io, fd: fd, limit: survey.size)
        var salvage = Salvage(
            output: header.encoded(), expected: header.baseSeq + 1,
            lastTime: runs.first?.firstRecordedAt ?? 0)
        for run in runs {
            try salvage.copy(run, from: reader, maxPayload: Int(header.maxPayload), before: limit, reject: reject)
        }
        if mode == .truncate { report.droppedBytes = [salvage.copiedThrough..<survey.size] }
        if mode == .salvage {
            salvage.markLost(through: lastFound)
        } else if let proven, proven.seqs.upperBound >= salvage.expected {
            // Truncate cuts at the damage, but a seq the evidence proves was written is never numbered again: the
            // cut log ends with a lost record up to it.
            salvage.markLost(through: proven.seqs.upperBound)
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
                throw EventLogError(
                    .corrupted,
                    "repair could not produce a valid log (\(problem.problem) at byte "
                        + "offset \(problem.offset)); \(path) was left as it was", offset: problem.offset,
                    seq: problem.seq)
            }
        }
        return report
    }

    /// The records of the survey's runs that `reject` refuses, as problems (with the reason it gave).
    private static func rejectedRecords(
        in survey: LogSurvey, path: String, io: any PlatformIO,
        reject: (RecordView) -> String?
    ) throws -> [LogSurvey.Problem] {
        guard let header = survey.header else { return [] }
        let fd = try wrapIO("cannot read \(path)") { try io.open(path, .readOnly) }
        defer { io.close(fd) }
        let reader = ChunkReader(io: io, fd: fd, limit: survey.size)
        var problems: [LogSurvey.Problem] = []
        for run in survey.runs {
            var scanner = RecordScanner(
                reader: reader, maxPayload: Int(header.maxPayload), offset: run.start,
                nextSeq: run.firstSeq)
            while scanner.offset < run.end {
                guard case .record(let view) = try scanner.next() else { break }
                if let why = reject(view) {
                    problems.append(
                        LogSurvey.Problem(offset: view.offset, length: Int64(view.size), seq: view.seq, problem: why))
                }
            }
        }
        return problems
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
        /// Where, in the damaged file, the last batch copied ends.
        var copiedThrough = Int64(LogFormat.fileHeaderSize)

        /// Writes one *lost* record standing for `expected…last` (an empty payload for a single seq, else the
        /// range's last seq as 8 bytes), if that range is not empty.
        mutating func markLost(through last: UInt64) {
            guard last >= expected else { return }
            var payload: [UInt8] = []
            if last > expected { payload.appendLE(last) }
            payload.withUnsafeBytes {
                _ = LogFormat.appendRecord(
                    to: &output, seq: expected, type: LogFormat.lostRecordType,
                    recordedAt: lastTime, payload: $0)
            }
            lost.append(expected...last)
            expected = last + 1
        }

        /// Copies a run batch by batch, up to the batch that reaches `limit`; a batch that would go back in time or
        /// holds a rejected record is dropped (its seqs become lost).
        mutating func copy(
            _ run: LogSurvey.Run, from reader: ChunkReader, maxPayload: Int, before limit: Int64,
            reject: (RecordView) -> String?
        ) throws {
            var scanner = RecordScanner(
                reader: reader, maxPayload: maxPayload, offset: run.start, nextSeq: run.firstSeq)
            var batch: [UInt8] = []
            var batchFirstSeq = run.firstSeq
            var batchTime: Int64 = .min
            var batchRecords: UInt64 = 0
            var batchRejected = false
            while scanner.offset < run.end {
                guard case .record(let view) = try scanner.next() else {
                    throw EventLogError(.io, "the log changed while it was being repaired", offset: scanner.offset)
                }
                if view.offset + Int64(view.size) > limit { return }
                if batch.isEmpty {
                    batchFirstSeq = view.seq
                    batchTime = view.recordedAt
                    batchRecords = 0
                    batchRejected = false
                }
                batch.append(contentsOf: try reader.bytes(at: view.offset, count: view.size)!)
                batchRecords += 1
                batchRejected = batchRejected || reject(view) != nil
                if view.continuesBatch { continue }
                if batchTime >= lastTime, !batchRejected {
                    markLost(through: batchFirstSeq - 1)
                    output.append(contentsOf: batch)
                    kept += batchRecords
                    expected = view.lastSeq + 1
                    lastTime = view.recordedAt
                    copiedThrough = view.offset + Int64(view.size)
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

    /// Before a repair reads the log: a redo journal that fits it is written into it (as an open would); one that
    /// does not is moved aside (`events.log.redo.broken-<timestamp>`, kept like a damaged log) and reported.
    /// - Returns: the journal's problem, if it had one.
    private static func finishRedoBeforeRepair(directory: String, path: String, io: any PlatformIO) throws -> LogDamage?
    {
        let journalPath = directory + "/" + redoFileName
        guard io.exists(journalPath) else { return nil }
        let fd = try wrapIO("cannot open \(path)") { try io.open(path, .readWrite) }
        defer { io.close(fd) }
        var header = [UInt8](repeating: 0, count: LogFormat.fileHeaderSize)
        let read = try wrapIO("cannot read \(path)") {
            try header.withUnsafeMutableBytes { try io.read(fd, into: $0, at: 0) }
        }
        let decoded = header.withUnsafeBytes {
            LogFormat.FileHeader.decode(UnsafeRawBufferPointer(rebasing: $0[0..<read]))
        }
        do {
            guard case .success(let fileHeader) = decoded else {
                throw EventLogError(.corrupted, "\(journalPath): the log's header is damaged")
            }
            _ = try applyRedo(
                directory: directory, fd: fd, fileID: fileHeader.fileID, maxPayload: Int(fileHeader.maxPayload), io: io)
            return nil
        } catch let error as EventLogError where error.code == .corrupted {
            let aside = try backupName(for: journalPath, io: io)
            try wrapIO("cannot move \(journalPath) aside") {
                try io.rename(journalPath, aside)
                try io.syncDirectory(directory)
            }
            return LogDamage(offset: 0, seq: 0, problem: "\(error.message); kept as \(aside)")
        }
    }

    /// `<path>.broken-<yyyyMMdd'T'HHmmss'Z'>`, with `-2`, `-3`… if that name is taken.
    private static func backupName(for path: String, io: any PlatformIO) throws -> String {
        let base = path + ".broken-" + UTCTimestamp.compact(microseconds: io.nowMicroseconds())
        var candidate = base
        var n = 2
        while io.exists(candidate) {
            candidate = base + "-\(n)"
            n += 1
        }
        return candidate
    }
}
