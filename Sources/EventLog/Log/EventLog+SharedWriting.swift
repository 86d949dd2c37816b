import Platform

/// Writing in turn: a log opened with ``EventLog/Configuration/lockWhileOpen`` off holds `LOCK` only while it writes
/// (`Specs/log-format.md`, *Writing in turn*), so several processes — an app, its widget, the command line — can
/// each keep the log open and write.
extension EventLog {
    /// What a writer found when it took the lock.
    public enum CatchUp: Sendable, Equatable {
        /// Nothing was written since this log last wrote or looked.
        case current
        /// Another process appended: this log now knows its records, those after `after` (`nil`: from the start).
        case appended(after: RecordLocation?)
        /// The file was replaced (an erasure's or a repair's rewrite), cut shorter, or an in-place redaction is
        /// unfinished: the log must be opened again, and the lock taken on the new one.
        case reopen
    }

    /// Takes `LOCK` for a write and catches up with the file: another process's complete batches become this log's
    /// (a torn tail a writer that died left is trimmed, as an open would), or the log is found replaced. Call
    /// ``endWrite()`` when the write is done, whatever happened. A log that holds the lock while open answers
    /// ``CatchUp/current`` at once.
    /// - Parameter waitMilliseconds: how long to wait for another writer; default: the configuration's.
    /// - Returns: what changed in the file since this log last held the lock.
    /// - Throws: `locked` when the wait ran out, `corrupted` (offset and seq) for damage in the new records, `io`,
    ///   `notWritable` for a read-only or closed log.
    public func beginWrite(waitMilliseconds: Int? = nil) throws -> CatchUp {
        guard !configuration.lockWhileOpen else { return .current }
        let lockFD = try state.withLock { state -> Int32 in
            guard !state.closed, configuration.access == .readWrite, let fd = state.lockFD else {
                throw EventLogError(.notWritable, "the log is closed or read-only")
            }
            precondition(!state.lockHeld, "a write began while another of this log's was under way")
            return fd
        }
        var locked = try wrapIO("cannot lock \(directory)") { try io.tryLock(lockFD) }
        var waited = 0
        let wait = waitMilliseconds ?? configuration.lockWaitMilliseconds
        while !locked, waited < wait {
            io.sleep(milliseconds: 2)
            waited += 2
            locked = try wrapIO("cannot lock \(directory)") { try io.tryLock(lockFD) }
        }
        guard locked else {
            let holder = EventLogFiles.holder(of: lockFD, io: io)
            throw EventLogError(
                .locked, "the ledger at \(directory) is being written by pid \(holder.map(String.init) ?? "?")",
                lockHolderPID: holder)
        }
        do {
            return try state.withLock { state in
                state.lockHeld = true
                return try catchUp(&state, lockFD: lockFD)
            }
        } catch {
            state.withLock { $0.lockHeld = false }
            io.unlock(lockFD)
            throw error
        }
    }

    /// Releases `LOCK` after a write (marking it clean when every byte this log wrote is durable). Harmless when no
    /// write is under way, or when the log holds the lock while open.
    public func endWrite() {
        guard !configuration.lockWhileOpen else { return }
        state.withLock { state in
            guard state.lockHeld, let fd = state.lockFD else { return }
            if state.lockDirty, state.failure == nil, state.durableSeq == state.nextSeq - 1,
                (try? EventLogFiles.writeLockState(clean: true, to: fd, io: io)) != nil
            {
                state.lockDirty = false
            }
            state.lockHeld = false
            io.unlock(fd)
        }
    }

    /// Under the lock: this process's pid and the last writer's state line read from `LOCK`, then the file compared
    /// with what this log knows.
    private func catchUp(_ state: inout State, lockFD: Int32) throws -> CatchUp {
        let previousClean = try EventLogFiles.claim(lockFD, io: io)
        state.lockDirty = !previousClean
        if io.exists(directory + "/" + Self.redoFileName) { return .reopen }
        let open = try wrapIO("cannot stat \(path)") { try io.identity(state.fd) }
        guard io.identity(ofPath: path) == open else { return .reopen }
        let size = try wrapIO("cannot stat \(path)") { try io.size(state.fd) }
        if size == state.end { return .current }
        if size < state.end { return .reopen }
        // What a writer that died left in the page cache becomes durable before anything is built on it.
        if !previousClean { try wrapIO("cannot sync \(path)") { try io.syncData(state.fd) } }
        let before = state.lastRecord
        let reader = ChunkReader(io: io, fd: state.fd, limit: size)
        var scanner = RecordScanner(
            reader: reader, maxPayload: maxPayload, offset: state.end, nextSeq: state.nextSeq,
            lastRecordedAt: state.lastRecordedAt)
        scan: while true {
            switch try scanner.next() {
            case .record(let view):
                state.index.note(view)
                if !view.continuesBatch { state.lastRecord = view.location }
            case .end:
                break scan
            case .torn:
                // A writer died inside its batch: nothing of it was acknowledged, and the lock is ours now.
                try wrapIO("cannot trim the torn tail of \(path)") {
                    try io.truncate(state.fd, to: scanner.offset)
                    try io.syncData(state.fd)
                }
                break scan
            case .damage(let problem):
                throw EventLogError(.corrupted, "\(path): \(problem)", offset: scanner.offset, seq: scanner.nextSeq)
            }
        }
        state.index.dropEntries(after: scanner.nextSeq - 1)
        state.end = scanner.offset  // after a trimmed tail, where the last whole batch ends
        guard scanner.nextSeq != state.nextSeq else { return .current }
        state.nextSeq = scanner.nextSeq
        state.lastRecordedAt = max(state.lastRecordedAt, scanner.committed.lastRecordedAt)
        state.durableSeq = scanner.nextSeq - 1
        return .appended(after: before)
    }
}
