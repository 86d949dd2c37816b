extension EventLog {
    /// Calls `body` for each record from sequence number `first` through `last`, oldest first, checking every
    /// checksum on the way.
    ///
    /// Sees the records acknowledged when the call starts. The payload view is valid only inside `body`.
    /// - Parameters:
    ///   - first: the first sequence number wanted (default 1).
    ///   - last: the last one wanted (default: the end of the log).
    ///   - body: called per record; return `false` to stop early.
    /// - Throws: ``EventLogError`` `corrupted` (offset and seq) for damage met on the way, `io`, or what `body` throws.
    public func forEach(
        from first: UInt64 = 1, through last: UInt64 = .max,
        _ body: (RecordView) throws -> Bool
    ) throws {
        let start = try startPosition(forSeq: first)
        try walk(offset: start.offset, nextSeq: start.seq, from: first, through: last, body)
    }

    /// Calls `body` for each record after a known record, checking that record is still the same one.
    ///
    /// - Parameters:
    ///   - location: a record read earlier (e.g. the one a snapshot covers up to).
    ///   - last: the last sequence number wanted (default: the end).
    ///   - body: called per record; return `false` to stop early.
    /// - Throws: ``EventLogError`` `corrupted` if the record at `location` is not that record any more.
    public func forEach(
        after location: RecordLocation, through last: UInt64 = .max,
        _ body: (RecordView) throws -> Bool
    ) throws {
        var matched = false
        try walk(offset: location.offset, nextSeq: location.seq, from: location.seq, through: last) { view in
            if !matched {
                guard view.crc == location.crc, view.size == location.size else {
                    throw EventLogError(
                        .corrupted, "\(path): record does not match the expected checksum",
                        offset: location.offset, seq: location.seq)
                }
                matched = true
                return true
            }
            return try body(view)
        }
    }

    /// All records from `first` through `last`, with their payloads copied.
    /// - Throws: as ``forEach(from:through:_:)``.
    public func records(from first: UInt64 = 1, through last: UInt64 = .max) throws -> [LogRecord] {
        var result: [LogRecord] = []
        try forEach(from: first, through: last) {
            result.append(LogRecord($0)); return true
        }
        return result
    }

    /// The highest sequence number whose record was recorded at or before `time` (0 if none).
    /// - Parameter time: microseconds since 1970.
    /// - Throws: ``EventLogError`` for damage met while reading.
    public func lastSeq(atOrBefore time: Int64) throws -> UInt64 {
        let index = try completeIndex()
        let start = index.entry(atOrBeforeTime: time)
        var found = (start?.seq ?? baseSeq + 1) - 1
        try walk(
            offset: start?.offset ?? Int64(LogFormat.fileHeaderSize), nextSeq: start?.seq ?? baseSeq + 1,
            from: 0, through: .max
        ) { view in
            guard view.recordedAt <= time else { return false }
            found = view.seq
            return true
        }
        return found
    }

    /// Where to start reading to reach `seq`: the greatest indexed record at or before it.
    private func startPosition(forSeq seq: UInt64) throws -> (offset: Int64, seq: UInt64) {
        let origin = (offset: Int64(LogFormat.fileHeaderSize), seq: baseSeq + 1)
        guard seq > baseSeq + 1 else { return origin }
        let index = try completeIndex()
        guard let entry = index.entry(atOrBefore: seq) else { return origin }
        return (entry.offset, entry.seq)
    }

    /// The sparse index, first building the part before an open checkpoint if that was skipped.
    private func completeIndex() throws -> SparseIndex {
        let (index, fd) = try state.withLock { state in
            if state.closed { throw EventLogError(.notWritable, "the log is closed") }
            return (state.index, state.fd)
        }
        if index.isComplete { return index }
        var prefix = SparseIndex()
        let reader = ChunkReader(io: io, fd: fd, limit: try wrapIO("cannot stat \(path)") { try io.size(fd) })
        var scanner = RecordScanner(
            reader: reader, maxPayload: maxPayload, offset: Int64(LogFormat.fileHeaderSize),
            nextSeq: baseSeq + 1)
        while scanner.nextSeq < index.coveredFrom {
            switch try scanner.next() {
            case .record(let view): prefix.note(view)
            case .end, .torn:
                throw EventLogError(
                    .corrupted, "\(path): log ends before its checkpoint", offset: scanner.offset,
                    seq: scanner.nextSeq)
            case .damage(let problem):
                throw EventLogError(.corrupted, "\(path): \(problem)", offset: scanner.offset, seq: scanner.nextSeq)
            }
        }
        return state.withLock { state in
            if !state.index.isComplete { state.index.fill(prefix: prefix.entries) }
            return state.index
        }
    }

    /// The one reading loop: records at `offset` onward, passing those in `first...last` to `body`.
    private func walk(
        offset: Int64, nextSeq: UInt64, from first: UInt64, through last: UInt64,
        _ body: (RecordView) throws -> Bool
    ) throws {
        var (fd, end, redactions) = try state.withLock { state in
            if state.closed { throw EventLogError(.notWritable, "the log is closed") }
            return (state.fd, state.end, state.redactions)
        }
        var scanner = RecordScanner(
            reader: ChunkReader(io: io, fd: fd, limit: end), maxPayload: maxPayload, offset: offset, nextSeq: nextSeq)
        while true {
            switch try scanner.next() {
            case .record(let view):
                if view.seq > last { return }
                if view.seq >= first, try !body(view) { return }
            case .end:
                return
            case .torn(let reason):
                throw EventLogError(
                    .corrupted, "\(path): \(reason) inside the acknowledged log",
                    offset: scanner.offset, seq: scanner.nextSeq)
            case .damage(let problem):
                // A record this process was redacting in place while it was read (half written): once the redaction
                // is done (its lock is this one), it is read again from where the walk stopped.
                let now = try state.withLock { state in
                    if state.closed { throw EventLogError(.notWritable, "the log is closed") }
                    return (state.fd, state.redactions)
                }
                guard now.1 != redactions else {
                    throw EventLogError(.corrupted, "\(path): \(problem)", offset: scanner.offset, seq: scanner.nextSeq)
                }
                (fd, redactions) = now
                scanner = RecordScanner(
                    reader: ChunkReader(io: io, fd: fd, limit: end), maxPayload: maxPayload, offset: scanner.offset,
                    nextSeq: scanner.nextSeq)
            }
        }
    }
}
