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
        try distrustingTakenPositions {
            let start = try startPosition(forSeq: first)
            try walk(offset: start.offset, nextSeq: start.seq, from: first, through: last, body)
            return
        }
    }

    /// Runs `read` again, once, with the index built by reading, when it failed at a position taken from a cache
    /// (``adoptIndexPositions(_:)``) before any record was read there: a cache that kept wrong positions costs a
    /// read of the log, never an answer.
    func distrustingTakenPositions<T>(_ read: () throws -> T) throws -> T {
        do {
            return try read()
        } catch let error as EventLogError where error.code == .corrupted {
            let distrusted = state.withLock { state in
                guard let offset = error.offset, let seq = error.seq,
                    let taken = state.index.entries.first(where: { $0.offset == offset && $0.seq == seq }),
                    state.index.isTaken(taken)
                else { return false }
                state.index.distrustTaken()
                return true
            }
            guard distrusted else { throw error }
            return try read()
        }
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
        try distrustingTakenPositions { try lastSeq(atOrBefore: time, index: try completeIndex()) }
    }

    private func lastSeq(atOrBefore time: Int64, index: SparseIndex) throws -> UInt64 {
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

    /// Calls `body` for each record in each of `ranges` (ascending, not overlapping), checking every checksum on
    /// the way: a read of a few blocks of records found elsewhere (a ledger's index of an entry's records), each
    /// started at the sparse index's position at or before it and read in pieces about the size of the range.
    ///
    /// Sees the records acknowledged when the call starts. The payload view is valid only inside `body`.
    /// - Parameters:
    ///   - ranges: the sequence numbers wanted.
    ///   - body: called per record; return `false` to stop early (the whole call).
    /// - Throws: as ``forEach(from:through:_:)``.
    public func forEach(in ranges: [ClosedRange<UInt64>], _ body: (RecordView) throws -> Bool) throws {
        guard !ranges.isEmpty else { return }
        var done = 0
        try distrustingTakenPositions { try forEach(in: ranges[done...], done: &done, body) }
    }

    /// ``forEach(in:_:)`` from a range on, counting in `done` the ranges read whole.
    private func forEach(
        in ranges: ArraySlice<ClosedRange<UInt64>>, done: inout Int, _ body: (RecordView) throws -> Bool
    ) throws {
        let index = try completeIndex()
        var stopped = false
        for range in ranges where !stopped {
            let (start, chunkSize) = index.read(of: range, baseSeq: baseSeq)
            try walk(
                offset: start.offset, nextSeq: start.seq, from: range.lowerBound, through: range.upperBound,
                chunkSize: chunkSize
            ) { view in
                stopped = try !body(view)
                return !stopped
            }
            done += 1
        }
    }

    /// Where to start reading to reach `seq`: the greatest indexed record at or before it.
    private func startPosition(forSeq seq: UInt64) throws -> (offset: Int64, seq: UInt64) {
        let origin = (offset: Int64(LogFormat.fileHeaderSize), seq: baseSeq + 1)
        guard seq > baseSeq + 1 else { return origin }
        let index = try completeIndex()
        guard let entry = index.entry(atOrBefore: seq) else { return origin }
        return (entry.offset, entry.seq)
    }

    /// The sparse index's positions (every 1,024th record: seq, offset, recorded-at) through `seq`, for a cache to
    /// keep beside what it covers (a ledger's snapshot), so that a later open from it need not read the records
    /// before it to find them (``adoptIndexPositions(_:)``).
    /// - Throws: ``EventLogError`` for damage met while building the part an open from a checkpoint skipped.
    public func indexPositions(through seq: UInt64) throws -> [IndexPosition] {
        Array(try completeIndex().entries.prefix { $0.seq <= seq })
    }

    /// The sparse index's positions through `seq` when they are known without reading the log (`nil` while the
    /// part before an open's checkpoint has not been read or taken).
    public func knownIndexPositions(through seq: UInt64) -> [IndexPosition]? {
        state.withLock { state in state.index.isComplete ? Array(state.index.entries.prefix { $0.seq <= seq }) : nil }
    }

    /// Takes the sparse index's positions before the open's checkpoint from a cache that kept them
    /// (``indexPositions(through:)``), instead of reading the records before the checkpoint when a read first needs
    /// them. Positions that are not exactly every 1,024th record through the checkpoint, from the first record's
    /// offset, ascending and before the checkpoint's offset, are not taken (that part is then built by reading, as
    /// without them); should a read find no record where a taken position says, they are dropped and that part is
    /// read (``distrustingTakenPositions(_:)``).
    /// - Returns: whether they were taken (or nothing was missing).
    @discardableResult
    public func adoptIndexPositions(_ positions: [IndexPosition]) -> Bool {
        state.withLock { state in
            if state.index.isComplete { return true }
            guard let checkpoint = configuration.checkpoint, state.index.coveredFrom == checkpoint.seq,
                SparseIndex.isPrefix(positions, through: checkpoint, baseSeq: baseSeq)
            else { return false }
            state.index.take(positions)
            return true
        }
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
        while scanner.nextSeq <= index.coveredFrom {
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
        offset: Int64, nextSeq: UInt64, from first: UInt64, through last: UInt64, chunkSize: Int = 1 << 20,
        _ body: (RecordView) throws -> Bool
    ) throws {
        var (fd, end, redactions) = try state.withLock { state in
            if state.closed { throw EventLogError(.notWritable, "the log is closed") }
            return (state.fd, state.end, state.redactions)
        }
        var scanner = RecordScanner(
            reader: ChunkReader(io: io, fd: fd, limit: end, chunkSize: chunkSize), maxPayload: maxPayload,
            offset: offset, nextSeq: nextSeq)
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
