import Platform
import Synchronization

/// A crash-safe, append-only log of typed, checksummed records in one directory.
///
/// One writer per directory (an exclusive `flock`); readers never block it. An append is acknowledged only
/// after the bytes were written in full and `fdatasync` returned success. The format is `Specs/log-format.md`.
public final class EventLog: Sendable {
    /// The log's directory.
    public let directory: String
    /// The path of the log file.
    public let path: String
    /// How the log was opened.
    public let configuration: Configuration
    /// The 16 random bytes of the file header.
    public let fileID: [UInt8]
    /// What open did about a torn tail, if there was one.
    public let recoveryNotice: RecoveryNotice?
    /// Sequence numbers the configuration's evidence proves were acknowledged and this log no longer holds (a reader's
    /// open; a writer's refuses), with what proves them.
    public let missingSeqs: (seqs: ClosedRange<UInt64>, source: String)?
    /// Whether open found the configured checkpoint intact and scanned only the records after it.
    public let resumedFromCheckpoint: Bool

    let io: any PlatformIO
    let maxPayload: Int
    let baseSeq: UInt64
    let state: Mutex<State>

    /// The mutable state, guarded by ``state``.
    /// @unchecked Sendable: only ever read or written inside ``state``'s Mutex.
    struct State: @unchecked Sendable {
        var fd: Int32
        var lockFD: Int32?
        /// Whether `LOCK`'s flock is held now: for the log's life, or (``Configuration/lockWhileOpen`` off) during a
        /// write only.
        var lockHeld = false
        /// Whether `LOCK` says dirty: set before this writer's first write to the log, cleared at a close with every
        /// byte written durable (a later writer then need not sync on open).
        var lockDirty = true
        /// End of the last acknowledged (written, and in `always` mode synced) record.
        var end: Int64
        var nextSeq: UInt64
        var lastRecordedAt: Int64
        var lastRecord: RecordLocation?
        var durableSeq: UInt64
        var failure: EventLogError?
        var closed = false
        var index: SparseIndex
        /// Counts the in-place redactions that wrote records (``redactInPlace(maximumBytes:_:beforeWriting:)``): a
        /// reader that met a half-written record knows to read it again once the redaction is done.
        var redactions: UInt64 = 0
    }

    private init(
        directory: String, path: String, configuration: Configuration, header: LogFormat.FileHeader,
        notice: RecoveryNotice?, resumed: Bool, state: State, missing: (seqs: ClosedRange<UInt64>, source: String)?
    ) {
        self.missingSeqs = missing
        self.resumedFromCheckpoint = resumed
        self.directory = directory
        self.path = path
        self.configuration = configuration
        self.io = configuration.io
        self.fileID = header.fileID
        self.baseSeq = header.baseSeq
        self.maxPayload = Int(header.maxPayload)
        self.recoveryNotice = notice
        self.state = Mutex(state)
    }

    deinit {
        state.withLock { state in
            if !state.closed { Self.release(&state, io: io) }
        }
    }

    /// Opens (and, by default, creates) the log in `directory`, running recovery.
    ///
    /// - Parameters:
    ///   - directory: the log directory; created with mode 0700 when missing and allowed.
    ///   - configuration: access, durability, checkpoint and the I/O layer.
    /// - Returns: the open log. A torn tail was trimmed if ``recoveryNotice`` is set.
    /// - Throws: ``EventLogError`` — `locked` when another writer holds the lock, `corrupted` (with the offset
    ///   and sequence number) for damage that is not a torn tail, `notFound`, or `io`.
    public static func open(directory: String, configuration: Configuration = Configuration()) throws -> EventLog {
        try open(directory: directory, configuration: configuration, visit: { _ in })
    }

    /// Opens the log like ``open(directory:configuration:)``, handing each record its recovery scan reads to
    /// `visit`: one read of the file serves the recovery and a reader that wants every record from the start (a
    /// replay without a checkpoint), instead of the scan first and the reader's own pass after it.
    ///
    /// `visit` sees the records in order (after the checkpoint, if one was resumed from) before the scan knows
    /// whether their batch is complete: should the file end inside a batch, the records of that batch it saw are
    /// then the torn tail that open trims — those after ``lastSeq`` of the log returned.
    /// - Parameters:
    ///   - directory: the log directory, as for ``open(directory:configuration:)``.
    ///   - configuration: access, durability, checkpoint and the I/O layer.
    ///   - visit: called per record scanned; the payload view is valid only inside it. What it throws ends the
    ///     open (the log is closed and the error rethrown).
    /// - Returns: the open log.
    /// - Throws: as ``open(directory:configuration:)``, or what `visit` throws.
    public static func open(
        directory: String, configuration: Configuration = Configuration(),
        visiting visit: (RecordView) throws -> Void
    ) throws -> EventLog {
        try open(directory: directory, configuration: configuration, visit: visit)
    }

    private static func open(
        directory: String, configuration: Configuration,
        visit: (RecordView) throws -> Void
    ) throws -> EventLog {
        let io = configuration.io
        let path = directory + "/" + LogFormat.logFileName
        let writing = configuration.access == .readWrite
        var lock: EventLogFiles.WriterLock?
        if writing {
            if configuration.createIfMissing {
                let created = try EventLogFiles.makeDirectory(directory, io: io)
                if created { try? io.syncDirectory(EventLogFiles.parent(of: directory)) }
            }
            lock = try EventLogFiles.acquireLock(
                directory: directory, io: io,
                waitMilliseconds: configuration.lockWaitMilliseconds)
        }
        do {
            // Opened first, created only when missing: an open of an existing log pays no separate existence check.
            let fd: Int32
            do {
                fd = try io.open(path, writing ? .readWrite : .readOnly)
            } catch let error as Errno where error == .noSuchFile {
                guard writing, configuration.createIfMissing else {
                    throw EventLogError(.notFound, "no event log at \(path)")
                }
                let header = LogFormat.FileHeader(
                    fileID: io.randomBytes(16), baseSeq: 0,
                    maxPayload: UInt32(LogFormat.maximumPayloadSize))
                try AtomicFile.write(header.encoded(), to: path, io: io)
                fd = try wrapIO("cannot open \(path)") { try io.open(path, .readWrite) }
            } catch let error as Errno {
                throw EventLogError.io("cannot open \(path)", error)
            }
            do {
                return try recover(
                    directory: directory, path: path, fd: fd, lock: lock,
                    configuration: configuration, visit: visit)
            } catch {
                io.close(fd)
                throw error
            }
        } catch {
            if let lock { io.close(lock.fd) }
            throw error
        }
    }

    /// Reads the header, scans (all, or from the checkpoint), trims a torn tail, and builds the log.
    ///
    /// Long because recovery is one sequence over the same file and scanner — redo journal, header, checkpoint, scan,
    /// torn tail, evidence, sync — whose order is the crash rules (`Specs/log-format.md`, *Recovery*).
    private static func recover(
        directory: String, path: String, fd: Int32, lock: EventLogFiles.WriterLock?,
        configuration: Configuration, visit: (RecordView) throws -> Void
    ) throws -> EventLog {
        let io = configuration.io
        let size = try wrapIO("cannot stat \(path)") { try io.size(fd) }
        var reader = ChunkReader(io: io, fd: fd, limit: size)
        let header = try readHeader(reader, path: path)
        // An in-place redaction a crash interrupted is written again before anything reads the records it changes
        // (`Specs/log-format.md`, *Redacting in place*); a reader waits for one under way, or finishes it.
        if lock != nil {
            if try applyRedo(
                directory: directory, fd: fd, fileID: header.fileID, maxPayload: Int(header.maxPayload), io: io) > 0
            {
                reader = ChunkReader(io: io, fd: fd, limit: size)
            }
        } else if try awaitRedo(directory: directory, header: header, configuration: configuration) {
            reader = ChunkReader(io: io, fd: fd, limit: size)
        }
        var index = SparseIndex()
        var scanner = RecordScanner(
            reader: reader, maxPayload: Int(header.maxPayload),
            offset: Int64(LogFormat.fileHeaderSize), nextSeq: header.baseSeq + 1)
        var lastRecord: RecordLocation?
        var resumedFromCheckpoint = false
        if let checkpoint = configuration.checkpoint,
            let resumed = try resume(from: checkpoint, reader: reader, maxPayload: Int(header.maxPayload))
        {
            scanner = resumed
            lastRecord = checkpoint
            resumedFromCheckpoint = true
            index.coveredFrom = checkpoint.seq
        }
        var notice: RecoveryNotice?
        scan: while true {
            switch try scanner.next() {
            case .record(let view):
                index.note(view)
                if !view.continuesBatch { lastRecord = view.location }
                try visit(view)
            case .end:
                break scan
            case .torn(let reason):
                notice = RecoveryNotice(
                    offset: scanner.offset, bytesRemoved: size - scanner.offset,
                    lastSeq: scanner.nextSeq - 1, reason: reason,
                    truncated: configuration.access == .readWrite)
                break scan
            case .damage(let problem):
                throw EventLogError(.corrupted, "\(path): \(problem)", offset: scanner.offset, seq: scanner.nextSeq)
            }
        }
        index.dropEntries(after: scanner.nextSeq - 1)
        var missing: (seqs: ClosedRange<UInt64>, source: String)?
        if let proof = Evidence.strongest(configuration.evidence, for: header.fileID), proof.seq >= scanner.nextSeq {
            missing = (scanner.nextSeq...proof.seq, proof.source)
            if configuration.access == .readWrite {
                // Not a torn tail: records that were acknowledged are gone. Nothing is trimmed or appended until a
                // repair records the loss in the log itself.
                throw EventLogError(
                    .corrupted,
                    "\(path): acknowledged records are missing: the log ends at seq \(scanner.nextSeq - 1) but "
                        + "\(proof.source) proves seqs \(scanner.nextSeq)…\(proof.seq) were written; run repair "
                        + "--salvage to record the loss", offset: scanner.offset, seq: scanner.nextSeq)
            }
        }
        if configuration.access == .readWrite {
            if notice != nil {
                try wrapIO("cannot trim the torn tail of \(path)") { try io.truncate(fd, to: scanner.offset) }
            }
            // Sync once on open: what a writer that died left in the page cache becomes durable before we build on it.
            // Not needed when the last writer closed with every byte durable (`LOCK` says clean) and nothing was
            // trimmed; after a power cut the page cache is gone and every byte read is on the disk already.
            if notice != nil || lock?.previousClean != true {
                try wrapIO("cannot sync \(path)") { try io.syncData(fd) }
            }
        }
        let state = State(
            fd: fd, lockFD: lock?.fd, lockHeld: lock != nil, lockDirty: lock?.previousClean != true,
            end: scanner.offset,
            nextSeq: scanner.nextSeq,
            lastRecordedAt: scanner.lastRecordedAt, lastRecord: lastRecord,
            durableSeq: scanner.nextSeq - 1, index: index)
        let log = EventLog(
            directory: directory, path: path, configuration: configuration, header: header,
            notice: notice, resumed: resumedFromCheckpoint, state: state, missing: missing)
        // Writing in turn: recovery done, the lock is released until the first write.
        if lock != nil { log.endWrite() }
        return log
    }

    static func readHeader(_ reader: ChunkReader, path: String) throws -> LogFormat.FileHeader {
        // The header alone: a warm open goes on at its checkpoint, far from the start (no 1 MiB read-ahead here).
        let bytes = try reader.bytes(at: 0, count: min(Int(reader.limit), LogFormat.fileHeaderSize), readAhead: false)!
        switch LogFormat.FileHeader.decode(bytes) {
        case .success(let header): return header
        case .failure(let problem): throw EventLogError(.corrupted, "\(path): \(problem.text)", offset: 0, seq: 0)
        }
    }

    /// A scanner positioned after `checkpoint`, if that record is still exactly where and what it was.
    private static func resume(
        from checkpoint: RecordLocation, reader: ChunkReader,
        maxPayload: Int
    ) throws -> RecordScanner? {
        guard checkpoint.offset >= Int64(LogFormat.fileHeaderSize), checkpoint.end <= reader.limit else { return nil }
        var probe = RecordScanner(
            reader: reader, maxPayload: maxPayload, offset: checkpoint.offset,
            nextSeq: checkpoint.seq)
        guard case .record(let view) = try probe.next(), view.crc == checkpoint.crc,
            view.size == checkpoint.size, !view.continuesBatch
        else { return nil }
        return probe
    }

    /// Whether the log's path still names the file this log has open: `false` once another process replaced it
    /// (an erasure's or a repair's rename), and a reader must open the log again to see the file as it is now.
    public var isCurrentFile: Bool {
        guard
            let open = try? state.withLock({ state -> FileIdentity in
                if state.closed { throw EventLogError(.notWritable, "the log is closed") }
                return try io.identity(state.fd)
            })
        else { return false }
        return io.identity(ofPath: path) == open
    }

    /// Whether the file holds bytes past the last record this log knows of: another process appended to it (or is
    /// appending) since it was opened.
    public var hasBytesPastEnd: Bool {
        (try? state.withLock { state -> Bool in
            if state.closed { return false }
            return try io.size(state.fd) > state.end
        }) ?? false
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Closes the log, releasing the writer lock. Later calls fail with `notWritable`.
    public func close() {
        state.withLock { state in
            if !state.closed { Self.release(&state, io: io) }
        }
    }

    private static func release(_ state: inout State, io: any PlatformIO) {
        if let lockFD = state.lockFD, state.lockHeld, state.lockDirty, state.failure == nil,
            state.durableSeq == state.nextSeq - 1
        {
            // Every byte this writer wrote is durable: the next writer need not sync on open. The mark itself needs
            // no sync (see *Files* in Specs/log-format.md).
            if (try? EventLogFiles.writeLockState(clean: true, to: lockFD, io: io)) != nil { state.lockDirty = false }
        }
        io.close(state.fd)
        if let lockFD = state.lockFD { io.close(lockFD) }
        state.closed = true
    }

    /// Marks `LOCK` dirty before this writer's first write to the log: should the process die before its bytes
    /// are durable, the next writer syncs them on open.
    /// - Throws: ``EventLogError`` `io` (nothing was written to the log).
    func markDirty(_ state: inout State) throws {
        guard !state.lockDirty, let lockFD = state.lockFD else { return }
        try EventLogFiles.writeLockState(clean: false, to: lockFD, io: io)
        state.lockDirty = true
    }

    /// The highest sequence number in the log (0 when empty).
    public var lastSeq: UInt64 { state.withLock { $0.nextSeq - 1 } }

    /// The recorded-at time of the last record (µs since 1970), or `Int64.min` when the log is empty.
    public var lastRecordedAt: Int64 { state.withLock { $0.lastRecordedAt } }

    /// The highest sequence number known to be durable.
    public var durableSeq: UInt64 { state.withLock { $0.durableSeq } }

    /// The last record, if any (its location lets a snapshot recognise it later).
    public var lastRecord: RecordLocation? { state.withLock { $0.lastRecord } }

    /// The size of the log file up to the end of the last acknowledged record.
    public var endOffset: Int64 { state.withLock { $0.end } }

    /// The error that put the log in the failed state, if an append or sync failed.
    public var failure: EventLogError? { state.withLock { $0.failure } }
}
