import Dispatch
import EventLog

/// What one or more commits appended to a ledger: the sequence numbers and the entries they touched.
public struct LedgerChange: Sendable, Equatable {
    /// The first sequence number appended since the previous change (or since observing began).
    public var firstSeq: UInt64
    /// The last sequence number appended: the state now includes every event through it.
    public var lastSeq: UInt64
    /// The entries the appended events concern, in ascending order, without duplicates (events about no entry,
    /// such as `remote.configured`, add none).
    public var entryIDs: [EntryID]
    /// Whether earlier records changed (an erasure, which redacts them in place or replaces the log file, or a
    /// repair's rewrite, here or in another process), so a view of the whole ledger should be read again, not only
    /// the entries listed.
    public var logRewritten: Bool

    /// A change from its parts.
    public init(firstSeq: UInt64, lastSeq: UInt64, entryIDs: [EntryID], logRewritten: Bool = false) {
        self.firstSeq = firstSeq
        self.lastSeq = lastSeq
        self.entryIDs = entryIDs
        self.logRewritten = logRewritten
    }
}

extension Ledger {
    /// Brings the ledger up to date with what other processes appended since it was opened (or last refreshed): the
    /// events after its last record are folded into its state, and a log file that was replaced is opened again. A
    /// ledger that writes in turn with other processes does this at every write anyway; one that keeps the writer
    /// lock (``Options/keepsWriterLock``) is always current, and this returns at once.
    ///
    /// An unfinished write of another process (a batch without its last record) is not read: it is not
    /// acknowledged yet.
    /// - Returns: the last sequence number now applied.
    /// - Throws: `EventLogError` for damage met in the new records, or ``MoodError`` `corrupt_event`.
    @discardableResult
    public func refresh() throws -> UInt64 { try refreshed().seq }

    /// ``refresh()``, saying also whether another writer held the log while it looked: its write is then not read
    /// yet, and a caller that must see it looks again.
    func refreshed() throws -> (seq: UInt64, writerBusy: Bool) {
        try core.withLock { core in
            guard !core.log.isClosed else { return (core.state.seq, false) }  // a closed ledger stays as it was
            var busy = false
            if options.readOnly { try catchUp(&core) } else { busy = try catchUpWriting(&core) }
            return (core.state.seq, busy)
        }
    }

    /// A writer that writes in turn: when the file grew or was replaced, the writer lock is taken without waiting
    /// and the state brought up to date. - Returns: whether another writer held the lock (nothing was read).
    private func catchUpWriting(_ core: inout Core) throws -> Bool {
        guard !options.keepsWriterLock, core.log.hasBytesPastEnd || !core.log.isCurrentFile else { return false }
        do {
            try takeWriterLock(&core, waitMilliseconds: 0)
            core.log.endWrite()
            return false
        } catch let error as EventLogError where error.code == .locked {
            return true
        }
    }

    /// The refresh of a read-only ledger: the tail after its last record when the file is the same one, else the
    /// ledger opened anew (through its newest snapshot).
    private func catchUp(_ core: inout Core) throws {
        let old = core.log
        if old.isCurrentFile {
            guard old.hasBytesPastEnd else { return }
            var configuration = old.configuration
            configuration.checkpoint = old.lastRecord
            let log = try EventLog.open(directory: path, configuration: configuration)
            if log.fileID == old.fileID, log.resumedFromCheckpoint || old.lastRecord == nil {
                if let last = old.lastRecord, let known = old.knownIndexPositions(through: last.seq) {
                    log.adoptIndexPositions(known)
                }
                try foldTail(of: log, after: old.lastRecord, into: &core)
                old.close()
                return
            }
            log.close()
        }
        try reopen(&core, options: options)
    }

    /// What was appended after `seq`, refreshing a read-only ledger first; `nil` when nothing was.
    /// - Parameters:
    ///   - seq: the last sequence number already seen.
    ///   - rewrites: how many log rewrites were already seen (``Core/rewrites``).
    func change(after seq: UInt64, rewrites: inout Int) throws -> LedgerChange? {
        let (log, last, count) = try core.withLock { core in
            if !core.log.isClosed {
                if options.readOnly { try catchUp(&core) } else { _ = try catchUpWriting(&core) }
            }
            return (core.log, core.state.seq, core.rewrites)
        }
        let rewritten = count != rewrites
        rewrites = count
        guard last != seq || rewritten else { return nil }
        var ids = Set<EntryID>()
        if last > seq {
            try LogHistory(log: log).forEachNamedID(from: seq + 1, through: last) { id, _ in ids.insert(id) }
        }
        // A repair that cut records leaves the log shorter than what was seen: an empty range, marked rewritten.
        return LedgerChange(
            firstSeq: min(seq + 1, last + 1), lastSeq: last, entryIDs: ids.sorted(), logRewritten: rewritten)
    }

    /// The ledger's committed changes as they happen, in order, from now on: whatever this process or another
    /// one appends (a command, an import, a sync), each reported once its events are durable.
    ///
    /// The log is looked at every `interval` (a read-only ledger is brought up to date with ``refresh()`` first),
    /// and the events appended since the last look are reported as one ``LedgerChange``. After a change is
    /// delivered, ``read(_:)`` answers with it included. The sequence ends when the task iterating it
    /// is cancelled or the ledger is closed, and throws when the log cannot be read (damage, I/O).
    /// - Parameter interval: how often to look (default 100 ms).
    /// - Returns: an asynchronous sequence of changes.
    public func changes(every interval: Duration = .milliseconds(100)) -> AsyncThrowingStream<LedgerChange, any Error> {
        let start = lastSeq
        let initialRewrites = core.withLock { $0.rewrites }
        return AsyncThrowingStream { continuation in
            // The looks run on a queue of their own, not on the cooperative pool: an app whose tasks keep the pool's
            // few threads busy still hears of changes.
            let queue = DispatchQueue(label: "MoodLedger.changes")
            // Safe to share: a dispatch source's methods may be called from any thread (`cancel` from termination).
            nonisolated(unsafe) let timer = DispatchSource.makeTimerSource(queue: queue)
            var seen = start
            var rewrites = initialRewrites
            let nanoseconds = max(
                1_000_000,
                interval.components.seconds * 1_000_000_000
                    + interval.components.attoseconds / 1_000_000_000)
            timer.schedule(deadline: .now() + .nanoseconds(Int(nanoseconds)), repeating: .nanoseconds(Int(nanoseconds)))
            timer.setEventHandler { [self] in
                guard !eventLog.isClosed else {
                    timer.cancel()
                    continuation.finish()
                    return
                }
                do {
                    if let change = try change(after: seen, rewrites: &rewrites) {
                        seen = change.lastSeq
                        continuation.yield(change)
                    }
                } catch {
                    timer.cancel()
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in timer.cancel() }
            timer.resume()
        }
    }
}
