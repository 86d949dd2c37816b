import Platform

/// A walk over a whole log file that does not stop at damage: it notes each damaged region, resynchronises on
/// the next valid record, and goes on. `verify` reports it; `repair` rebuilds the file from it.
struct LogSurvey {
    /// A run of consecutive valid records.
    struct Run {
        var start: Int64
        var end: Int64
        var firstSeq: UInt64
        var lastSeq: UInt64
        var firstRecordedAt: Int64
        var lastRecordedAt: Int64
        /// How many records the run holds (a *lost* record standing for many seqs counts once).
        var records: UInt64 = 0
    }

    /// Something wrong in the file.
    struct Problem {
        var offset: Int64
        var length: Int64
        /// The sequence number expected at `offset`.
        var seq: UInt64
        var problem: String
        /// For damage that runs to the end of the file: the last seq it appears to have held (see
        /// ``RecordScanner/lastSeqInDamagedTail()``), so that repair reports every seq it drops.
        var lostThrough: UInt64? = nil
        /// Whether this is a torn tail: an unfinished write at the end (a writer appending now, or one that stopped
        /// before its sync returned), which was never acknowledged and which the next writer trims.
        var isTornTail = false
    }

    /// The file header, or `nil` when it is damaged.
    var header: LogFormat.FileHeader?
    var runs: [Run] = []
    var problems: [Problem] = []
    var size: Int64 = 0

    /// How many valid records the file holds: records, not sequence numbers.
    var recordCount: UInt64 { runs.reduce(0) { $0 + $1.records } }

    /// Surveys the log file at `path`.
    ///
    /// Long because it is one scan whose resynchronisation after damage shares the scanner's position and the current
    /// run with the scan itself.
    static func survey(path: String, io: any PlatformIO) throws -> LogSurvey {
        let fd = try wrapIO("cannot open \(path)") { try io.open(path, .readOnly) }
        defer { io.close(fd) }
        var survey = LogSurvey()
        survey.size = try wrapIO("cannot stat \(path)") { try io.size(fd) }
        let reader = ChunkReader(io: io, fd: fd, limit: survey.size)
        let headerBytes = try reader.bytes(at: 0, count: Int(min(survey.size, Int64(LogFormat.fileHeaderSize))))!
        var nextSeq: UInt64 = 1
        var maxPayload = LogFormat.maximumPayloadSize
        var offset = Int64(LogFormat.fileHeaderSize)
        switch LogFormat.FileHeader.decode(headerBytes) {
        case .success(let header):
            survey.header = header
            nextSeq = header.baseSeq + 1
            maxPayload = Int(header.maxPayload)
        case .failure(let problem):
            survey.problems.append(
                Problem(
                    offset: 0, length: min(survey.size, offset), seq: 0,
                    problem: problem.text))
            if survey.size < offset { return survey }
            // Resynchronise from just after where the header should end.
            var probe = RecordScanner(reader: reader, maxPayload: maxPayload, offset: offset - 1, nextSeq: 1)
            probe.offset = offset - 1
            guard let found = try probe.resynchronise(minimumSeq: 1) else {
                survey.problems[0].length = survey.size
                return survey
            }
            survey.problems[0].length = found
            offset = found
            nextSeq = try reader.bytes(at: found, count: LogFormat.recordHeaderSize)!.u64(16)
        }
        var scanner = RecordScanner(reader: reader, maxPayload: maxPayload, offset: offset, nextSeq: nextSeq)
        var run: Run?
        // The first record of the batch being read: a run only ever grows by whole batches.
        var batchFirst: RecordView?
        var batchRecords: UInt64 = 0
        func closeRun() {
            if let finished = run { survey.runs.append(finished) }
            run = nil
            batchFirst = nil
            batchRecords = 0
        }
        while true {
            switch try scanner.next() {
            case .record(let view):
                if batchFirst == nil { batchFirst = view }
                batchRecords += 1
                if view.continuesBatch { continue }
                let first = batchFirst!
                batchFirst = nil
                if run == nil {
                    run = Run(
                        start: first.offset, end: first.offset, firstSeq: first.seq, lastSeq: first.seq,
                        firstRecordedAt: first.recordedAt, lastRecordedAt: first.recordedAt)
                }
                run!.end = view.offset + Int64(view.size)
                run!.lastSeq = view.lastSeq
                run!.lastRecordedAt = view.recordedAt
                run!.records += batchRecords
                batchRecords = 0
            case .end:
                closeRun()
                return survey
            case .torn(let reason):
                closeRun()
                survey.problems.append(
                    Problem(
                        offset: scanner.offset, length: survey.size - scanner.offset,
                        seq: scanner.nextSeq, problem: "torn tail (\(reason))", isTornTail: true))
                return survey
            case .damage(let problem):
                closeRun()
                let found = try scanner.resynchronise(minimumSeq: scanner.nextSeq)
                var damage = Problem(
                    offset: scanner.offset, length: (found ?? survey.size) - scanner.offset,
                    seq: scanner.nextSeq, problem: problem)
                guard let found else {
                    damage.lostThrough = try scanner.lastSeqInDamagedTail()
                    survey.problems.append(damage)
                    return survey
                }
                survey.problems.append(damage)
                let next = try reader.bytes(at: found, count: LogFormat.recordHeaderSize)!.u64(16)
                scanner = RecordScanner(reader: reader, maxPayload: maxPayload, offset: found, nextSeq: next)
            }
        }
    }
}
