import EventLog

/// Several processes, one ledger (`Specs/ledger.md`, *Several processes*): unless ``Options/keepsWriterLock`` is set,
/// every write takes the writer lock, first folds what other processes appended since this one last looked (or opens
/// the log again when another process replaced it), then decides, appends, syncs, and releases the lock.
extension Ledger {
    /// Runs `body` as a write: under the ledger's own lock and, when the ledger writes in turn with other processes,
    /// under the file's writer lock with the state caught up with the log first.
    /// - Parameter waitMilliseconds: how long to wait for another process's write; default: the options'.
    func writing<T>(waitMilliseconds: Int? = nil, _ body: (inout Core) throws -> T) throws -> T {
        try core.withLock { core in
            guard !options.readOnly, !options.keepsWriterLock else { return try body(&core) }
            try takeWriterLock(&core, waitMilliseconds: waitMilliseconds)
            defer { core.log.endWrite() }
            return try body(&core)
        }
    }

    /// Takes the file's writer lock and brings the state up to date with the log: the records another process
    /// appended are folded in; a replaced file is opened again (through its newest snapshot), and the lock taken on it.
    func takeWriterLock(_ core: inout Core, waitMilliseconds: Int?) throws {
        for _ in 0..<8 {
            switch try core.log.beginWrite(waitMilliseconds: waitMilliseconds) {
            case .current:
                return
            case .appended(let after):
                do {
                    var state = core.state
                    let before = state.seq
                    try Replayer.replay(
                        core.log, from: after.map { .after($0) } ?? .beginning, into: &state,
                        pipelineThreshold: options.parallelReplayThreshold)
                    // An erasure in the tail redacts earlier records where they are (the file stays the same one).
                    let erasing = state.pendingErasures.keys.contains { core.state.pendingErasures[$0] == nil }
                    core.sinceSnapshot += Int(state.seq - before)
                    core.state = state  // published whole: readers see the other process's commits at once
                    if erasing { core.rewrites += 1 }
                } catch {
                    core.log.endWrite()
                    throw error
                }
                return
            case .reopen:
                core.log.endWrite()
                var reopening = options
                reopening.keepsWriterLock = false
                let fresh = try Ledger.open(at: path, options: reopening)
                let (log, state) = fresh.core.withLock { ($0.log, $0.state) }
                let old = core.log
                core.published.publish(state, log: log)
                core.sinceSnapshot = 0
                core.rewrites += 1
                old.close()
            }
        }
        throw EventLogError(.locked, "the ledger's log kept being replaced by another process; try again")
    }
}
