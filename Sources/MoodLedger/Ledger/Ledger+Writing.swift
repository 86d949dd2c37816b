import EventLog

/// Several processes, one ledger (`Specs/ledger.md`, *Several processes*): unless ``Options/keepsWriterLock`` is set,
/// every write takes the writer lock, first folds what other processes appended since this one last looked (or opens
/// the log again when another process replaced it), then decides, appends, syncs, and releases the lock.
extension Ledger {
    /// Runs `body` as a write: under the ledger's own lock and, when the ledger writes in turn with other processes,
    /// under the file's writer lock with the state caught up with the log first.
    func writing<T>(_ body: (inout Core) throws -> T) throws -> T {
        try core.withLock { core in
            guard !options.readOnly, !options.keepsWriterLock else { return try body(&core) }
            try takeWriterLock(&core, waitMilliseconds: nil)
            defer { core.log.endWrite() }
            return try body(&core)
        }
    }

    /// Takes the file's writer lock and brings the state up to date with the log: the records another process
    /// appended are folded in; a replaced file is opened again (through its newest snapshot), and the lock taken on it.
    /// - Parameter waitMilliseconds: how long to wait for another process's write; `nil`: the options'.
    func takeWriterLock(_ core: inout Core, waitMilliseconds: Int?) throws {
        for _ in 0..<8 {
            switch try core.log.beginWrite(waitMilliseconds: waitMilliseconds) {
            case .current:
                return
            case .appended(let after):
                do { try foldTail(of: core.log, after: after, into: &core) } catch {
                    core.log.endWrite()
                    throw error
                }
                return
            case .reopen:
                core.log.endWrite()
                var reopening = options
                reopening.keepsWriterLock = false
                try reopen(&core, options: reopening)
            }
        }
        throw EventLogError(.locked, "the ledger's log kept being replaced by another process; try again")
    }

    /// Folds the records of `log` after `after` (`nil`: all of them) into the state and publishes the two together:
    /// another process's commits, seen by a reader's refresh or a writer's catch-up.
    func foldTail(of log: EventLog, after: RecordLocation?, into core: inout Core) throws {
        var state = core.state
        let before = state.seq
        try Replayer.replay(
            log, from: after.map { .after($0) } ?? .beginning, into: &state,
            pipelineThreshold: options.parallelReplayThreshold)
        // An erasure in the tail redacts earlier records where they are (the file stays the same one).
        let erasing = state.pendingErasures.keys.contains { core.state.pendingErasures[$0] == nil }
        core.sinceSnapshot += Int(state.seq - before)
        core.published.publish(state, log: log)  // the log and its state, in one step: readers see whole commits
        if erasing { core.rewrites += 1 }
    }

    /// Opens the ledger again (its log file was replaced by another process) and makes the fresh log and state this
    /// ledger's; the old log is closed.
    func reopen(_ core: inout Core, options: Options) throws {
        let fresh = try Ledger.open(at: path, options: options)
        let (log, state) = fresh.core.withLock { ($0.log, $0.state) }
        let old = core.log
        core.published.publish(state, log: log)
        core.sinceSnapshot = 0
        core.rewrites += 1
        old.close()
    }
}
