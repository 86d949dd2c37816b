import EventLog
import Foundation
import Platform
import Synchronization

/// An event-sourced mood ledger: every command appends events to a crash-safe log; entries, the outbox and
/// analytics are folds over it, cached in snapshots.
///
/// One writer per ledger directory. All methods are synchronous and thread-safe; async overloads run them off
/// the caller's executor.
public final class Ledger: Sendable {
    /// The ledger directory.
    public let path: String
    /// How it was opened.
    public let options: Options
    /// What open noticed: a trimmed torn tail, skipped snapshots. Never errors.
    public let notices: [String]
    /// Damage found after open in a snapshot the state read through (``Options/checkSnapshotsWhereReadFrom``),
    /// each time the state was then rebuilt from the log.
    public var laterNotices: [String] { core.withLock { $0.laterNotices } }

    let store: SnapshotStore
    /// The writer's lock: held across a command's decision, append, sync and fold (and by refreshes, snapshots and
    /// erasures); readers never take it (``published``).
    let core: CheckedMutex<Core>
    /// The state and log readers take, published whole at the end of every commit.
    let published: PublishedState

    /// @unchecked Sendable: only ever used inside ``core``'s Mutex.
    struct Core: @unchecked Sendable {
        let published: PublishedState
        /// The log: the writer's, and the published one (they are the same).
        var log: EventLog {
            get { published.log }
            set { published.publish(published.state, log: newValue) }
        }
        /// The state: setting it publishes it whole. A commit folds its events with ``PublishedState/mutate(_:)``
        /// instead, in place and in one step.
        var state: LedgerState {
            get { published.state }
            set { published.publish(newValue) }
        }
        var sinceSnapshot = 0
        var laterNotices: [String] = []
        /// How many times a read-only ledger found its log file replaced by another process and opened it anew.
        var rewrites = 0
    }

    private init(
        path: String, options: Options, notices: [String], log: EventLog, state: LedgerState,
        sinceSnapshot: Int
    ) {
        self.path = path
        self.options = options
        self.notices = notices
        self.store = SnapshotStore(ledgerDirectory: path, io: options.io)
        let published = PublishedState(state: state, log: log)
        self.published = published
        self.core = CheckedMutex(Core(published: published, sinceSnapshot: sinceSnapshot))
    }

    /// Opens the ledger at `path`: the newest valid snapshot, then a replay of the events after it.
    ///
    /// - Parameters:
    ///   - path: the ledger directory (created 0700 when missing, unless read-only).
    ///   - options: durability, snapshots, clock and I/O.
    /// - Returns: the open ledger; ``notices`` says what recovery did.
    /// - Throws: `EventLogError` (`locked`, `corrupted` with offset and seq, `notFound`, `io`) or ``MoodError``
    ///   `corrupt_event` for an undecodable event.
    public static func open(at path: String, options: Options = Options()) throws -> Ledger {
        try open(path: path, options: options)
    }

    /// Gives `path` the options' data-protection class; a failure names the file, the class and the system's reason.
    private static func protect(_ path: String, _ options: Options) throws {
        do { try AppleFileAttributes.protect(path, options.fileProtection) } catch let error
            as AppleFileAttributes.ProtectionError
        {
            throw EventLogError(.io, error.description)
        }
    }

    /// Opens the ledger in the directory `url` names, as the path form does (an app's container
    /// URL, say `FileManager`'s application support directory or an App Group's). Missing directories on the way to
    /// it are created (0700) unless the ledger is opened read-only or `createIfMissing` is off.
    /// - Parameters:
    ///   - url: a `file:` URL of the ledger directory.
    ///   - options: durability, snapshots, clock and I/O.
    /// - Returns: the open ledger.
    /// - Throws: as the path form; ``MoodError`` `invalid_input` for a URL that is not a file URL.
    public static func open(at url: URL, options: Options = Options()) throws -> Ledger {
        guard url.isFileURL else { throw MoodError.invalid("path", "the ledger's URL must be a file URL") }
        let path = url.standardizedFileURL.path
        if !options.readOnly, options.createIfMissing {
            var prefix = ""
            for component in path.split(separator: "/").dropLast() {
                prefix += "/" + component
                try makeDirectory(prefix, io: options.io)
            }
        }
        return try open(path: path, options: options)
    }

    /// Makes the directory at `path` (0700) when it is missing, and syncs its parent. Only what is missing: an app's
    /// sandbox refuses even a try at creating the system's directories.
    /// - Throws: `EventLogError` `io` (`notFound` for a missing parent is left to the open that follows).
    private static func makeDirectory(_ path: String, io: any PlatformIO) throws {
        guard !io.exists(path) else { return }
        do {
            if try io.makeDirectory(path) {
                let parent = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
                try io.syncDirectory(parent.isEmpty ? "/" : parent)
            }
        } catch let error as Errno where error == .noSuchFile {
            return
        } catch {
            throw EventLogError(.io, "cannot create directory \(path)", errno: error as? Errno)
        }
    }

    private static func open(path: String, options: Options) throws -> Ledger {
        do { return try recoverAndOpen(path: path, options: options) } catch let error as EventLogError {
            throw protectedWhileLocked(error, options) ?? error
        }
    }

    /// An open refused by iOS data protection — a protected file opened while the device is locked fails with
    /// `EPERM` — said as such: `protected_data_unavailable`, retryable once the device is unlocked. `nil` for any
    /// other error, and always on platforms without data protection.
    static func protectedWhileLocked(_ error: EventLogError, _ options: Options) -> EventLogError? {
        #if os(iOS) || os(watchOS) || os(visionOS) || os(tvOS)
            guard error.errno == .notPermitted, options.fileProtection != .none else { return nil }
            return EventLogError(
                .protectedDataUnavailable,
                "the ledger's files have the data-protection class \(options.fileProtection.rawValue) and the device "
                    + "is locked: open it again once the device is unlocked", errno: error.errno)
        #else
            return nil
        #endif
    }

    private static func recoverAndOpen(path: String, options: Options) throws -> Ledger {
        if !options.readOnly, options.createIfMissing, !options.io.exists(path) {
            // Health data at rest from its first byte: the directory is made and given its class before the log and
            // the lock are created in it, so they are born with the class (not given it after their first write).
            try makeDirectory(path, io: options.io)
            if options.io.exists(path) { try protect(path, options) }
        }
        let opened = try LedgerRecovery.open(at: path, options: options)
        if !options.readOnly {
            // The class again on what exists (an option changed since, a ledger made before): the directory, the log,
            // the lock, and the snapshots, which hold the whole state.
            do {
                for file in ["", "/" + LogFormat.logFileName, "/" + LogFormat.lockFileName] {
                    try protect(path + file, options)
                }
                #if canImport(Darwin)
                    let store = SnapshotStore(ledgerDirectory: path, io: options.io)
                    for seq in store.list() { try protect(store.path(for: seq), options) }
                #endif
            } catch {
                opened.log.close()
                throw error
            }
        }
        let (log, current, replayed) = (opened.log, opened.state, opened.replayed)
        var notices = opened.notices
        if !current.pendingErasures.isEmpty {
            let count = current.pendingErasures.count
            let what =
                current.pendingErasures[.none] != nil
                ? "every entry" : "\(count) entr\(count == 1 ? "y" : "ies")"
            if options.readOnly {
                // A crash interrupted an erasure and no writer has opened since: the records still hold what the user
                // was told is gone, so a reader finishes it as a writer's open would when the writer lock is free
                // (never waiting for it), then reads the finished ledger. A writer at work finishes it itself.
                if try finishErasuresAsWriter(at: path, options: options) {
                    log.close()
                    var again = options
                    again.lockWaitMilliseconds = 0
                    return try open(at: path, options: again)
                }
                notices.append(
                    "an erasure of \(what) is incomplete: open the ledger for writing (any writing command) to finish it"
                )
            } else {
                let finished = "finished an interrupted erasure of \(what)"
                let ledger = Ledger(
                    path: path, options: options, notices: notices + [finished], log: log, state: current,
                    sinceSnapshot: replayed)
                do {
                    _ = try ledger.writing { try ledger.finishErasures(&$0) }
                } catch {
                    ledger.close()
                    throw error
                }
                return ledger
            }
        }
        let ledger = Ledger(
            path: path, options: options, notices: notices, log: log, state: current, sinceSnapshot: replayed)
        if options.readOnly, options.useSnapshots, options.snapshotInterval > 0,
            replayed >= options.snapshotAfterReadMinimum,
            log.recoveryNotice == nil, log.missingSeqs == nil
        {
            ledger.leaveSnapshotIfFree()
        }
        return ledger
    }

    /// Opens the ledger for writing without waiting for the lock — which finishes its pending erasures — and closes
    /// it. - Returns: whether it did; `false` when another writer holds the lock or the directory cannot be written.
    private static func finishErasuresAsWriter(at path: String, options: Options) throws -> Bool {
        var writing = options
        writing.readOnly = false
        writing.createIfMissing = false
        writing.lockWaitMilliseconds = 0
        writing.keepsWriterLock = false
        let writer: Ledger
        do { writer = try open(at: path, options: writing) } catch let error as EventLogError
            where [.locked, .notWritable, .io].contains(error.code)
        {
            return false
        }
        writer.close()
        return writer.core.withLock { $0.state.pendingErasures.isEmpty }
    }

    /// After a long replay by a read-only open: writes the snapshot a writer would have left, if no writer holds the
    /// ledger. The writer lock is tried without waiting and held only for the write; the log must still end at the
    /// record this state covers (nothing appended meanwhile). Anything else, or any failure, leaves things as they
    /// were: a snapshot is only a cache.
    private func leaveSnapshotIfFree() {
        core.withLock { core in
            guard let location = core.log.lastRecord, core.state.seq == location.seq else { return }
            var configuration = core.log.configuration
            configuration.access = .readWrite
            configuration.createIfMissing = false
            configuration.lockWaitMilliseconds = 0
            configuration.checkpoint = location
            guard let writer = try? EventLog.open(directory: path, configuration: configuration) else { return }
            defer { writer.close() }
            guard writer.fileID == core.log.fileID, writer.resumedFromCheckpoint, writer.lastRecord == location,
                writer.recoveryNotice == nil
            else { return }
            // A writer that writes in turn holds the lock only inside beginWrite … endWrite: the snapshot is written
            // there, and only if nothing was written since.
            defer { writer.endWrite() }
            guard (try? writer.beginWrite(waitMilliseconds: 0)) == .current else { return }
            replaceIfDamaged(&core)  // never copy days from a snapshot piece that fails its checksum
            guard
                (try? store.write(
                    core.state, positions: Self.positions(of: core.log, through: location), location: location,
                    fileID: core.log.fileID)) != nil
            else { return }
            store.prune(sparseInterval: options.sparseSnapshotInterval, logBytes: core.log.endOffset)
        }
    }

    /// The log's sparse index through `location`, for a snapshot to keep (none when the part before the log's
    /// checkpoint cannot be read: a snapshot is only a cache, and without them reads find the records by reading).
    static func positions(of log: EventLog, through location: RecordLocation) -> [IndexPosition] {
        (try? log.indexPositions(through: location.seq)) ?? []
    }

    /// A record an older version wrote beside the events — a server's idempotency key (`0x8001`) or replacement note
    /// (`0x8002`), a HealthKit anchor (`0x8004`) — read as the event it now is (`Specs/events.md`, *Records older
    /// versions wrote*), so what it kept stays in force. Command id all zero.
    @inline(__always)
    static func keptRecord(_ view: RecordView) -> RecordedEvent? {
        guard view.type & 0xFFF8 == 0x8000,
            let event = Attachment.event(recordType: view.type, payload: view.payload)
        else { return nil }
        return RecordedEvent(
            seq: view.seq, recordedAt: view.recordedAt, commandID: .none, event: event, offset: view.offset,
            size: view.size)
    }

    /// Decodes one record into a recorded event.
    static func decode(_ view: RecordView) throws(MoodError) -> RecordedEvent {
        do {
            let (command, event) = try EventCodec.decode(type: view.type, payload: view.payload)
            return RecordedEvent(
                seq: view.seq, recordedAt: view.recordedAt, commandID: command, event: event,
                offset: view.offset, size: view.size)
        } catch {
            throw located(error, view)
        }
    }

    /// Decodes one record of an event into `slot` (uninitialized; left so if the record does not decode).
    /// - Returns: the event's entry id and type, whether it is an `entry.created` (a redacted one is not: its event
    ///   is `.redacted`, of type `created`), and the created entry's ``SourceIndex/hash(_:_:)`` if it has a source
    ///   id: computed here, where the bytes were just decoded, the fold that indexes it does not reach into the
    ///   entry's extras (far away in memory by then, and written by this thread).
    @inline(__always)
    static func decode(
        _ view: RecordView, into slot: UnsafeMutablePointer<RecordedEvent>
    ) throws(MoodError)
        -> (id: EntryID, type: EventType, creates: Bool, sourceHash: UInt64?)
    {
        do {
            let (command, event) = try EventCodec.decode(type: view.type, payload: view.payload)
            var creates = false
            var sourceHash: UInt64?
            if case .created(let entry) = event {
                creates = true
                if entry.hasSourceID {
                    sourceHash = entry.withSourceIDBytes { $0.map { SourceIndex.hash(entry.source, $0) } }
                }
            }
            let described = (id: event.entryID, type: event.type, creates: creates, sourceHash: sourceHash)
            slot.initialize(
                to: RecordedEvent(
                    seq: view.seq, recordedAt: view.recordedAt, commandID: command, event: event,
                    offset: view.offset, size: view.size))
            return described
        } catch {
            throw located(error, view)
        }
    }

    /// A decoding error, with where the record is.
    private static func located(_ error: MoodError, _ view: RecordView) -> MoodError {
        MoodError(
            code: error.code, field: error.field, rule: "\(error.rule) at seq \(view.seq), byte offset \(view.offset)")
    }

    /// The current state of all projections (a value: later commands do not change it), for the package's own
    /// modules. It may read through a snapshot piece not yet checked: an answer taken from it must be checked with
    /// ``LedgerState/readsDamagedSnapshot`` afterwards, which ``read(_:)`` does — the way an app reads.
    ///
    /// Should another program have truncated the mapped snapshot under this process (its cut pages then read as
    /// zeros), or a piece already have failed its checksum, the state is first rebuilt by replaying the log.
    package var state: LedgerState {
        let current = published.state
        guard let image = current.entries.image, image.isDamaged else { return current }
        return core.withLock { core in
            replaceIfDamaged(&core)
            return core.state
        }
    }

    /// Answers a question from the current state, never from a damaged snapshot: when reading found a snapshot
    /// piece that fails its checksum (``Options/checkSnapshotsWhereReadFrom``), the state is rebuilt from the log
    /// (with a notice in ``laterNotices``) and `body` runs again on it.
    ///
    /// The state is valid only inside `body`: return values (entries, reports, strings), not the state.
    /// - Parameter body: the question; it may run twice, so it should not have effects beyond its answer.
    /// - Returns: what `body` returned from an undamaged state.
    /// - Throws: what `body` throws from an undamaged state.
    public func read<T>(_ body: (LedgerState) throws -> T) rethrows -> T {
        try Self.undamaged(state, body) { state }
    }

    /// Answers a question from the state as it was at `point` (time travel), or now when `point` is `nil`; never from
    /// a damaged snapshot: when the answer read a snapshot piece that fails its checksum, that point's state is
    /// replayed from the log alone (with a notice in ``laterNotices``) and `body` runs again on it.
    /// - Parameters:
    ///   - point: a sequence number or an instant; `nil` for now.
    ///   - body: the question; it may run twice.
    /// - Returns: what `body` returned from an undamaged state.
    /// - Throws: as ``state(at:)-3r9yg``, and what `body` throws from an undamaged state.
    public func read<T>(at point: Point?, _ body: (LedgerState) throws -> T) throws -> T {
        guard let point else { return try read(body) }
        let first = try travel(to: point)
        return try Self.undamaged(first, body) {
            let fresh = try travel(to: point, fromSnapshots: false)
            core.withLock { core in
                let image = first.entries.image
                core.laterNotices.append(
                    "snapshot \(image?.seq ?? 0) is damaged (\(image?.damageDescription ?? "damaged")): "
                        + "the state at \(fresh.seq) was replayed from the log")
            }
            return fresh
        }
    }

    /// Runs `decide` on the state, and again on a state rebuilt from the log when it read a damaged snapshot piece
    /// (a command never decides from damaged bytes).
    func deciding<T>(_ core: inout Core, _ decide: (LedgerState) throws -> T) rethrows -> T {
        replaceIfDamaged(&core)
        return try Self.undamaged(core.state, decide) {
            replaceIfDamaged(&core)
            return core.state
        }
    }

    /// `body`'s answer from `first`, unless answering read a snapshot piece that fails its checksum: then its answer
    /// (or error) is dropped and `body` answers from the state `again` gives, built without that piece. The one rule
    /// of every read and every command's decision.
    private static func undamaged<T>(
        _ first: LedgerState, _ body: (LedgerState) throws -> T, again: () throws -> LedgerState
    ) rethrows -> T {
        do {
            let answer = try body(first)
            guard first.readsDamagedSnapshot else { return answer }
        } catch {
            guard first.readsDamagedSnapshot else { throw error }
        }
        return try body(again())
    }

    /// Rebuilds the state from the log if the snapshot it reads through was found damaged (a failed piece, or the
    /// file cut under the process), with a notice. Keeps the state when the log cannot be read.
    func replaceIfDamaged(_ core: inout Core) {
        guard let image = core.state.entries.image, image.isDamaged else { return }
        var fresh = LedgerState()
        if (try? Replayer.replay(
            core.log, from: .beginning, into: &fresh,
            pipelineThreshold: options.parallelReplayThreshold)) != nil
        {
            core.laterNotices.append(
                "snapshot \(image.seq) is damaged (\(image.damageDescription ?? "damaged")): "
                    + "the state was rebuilt from the log")
            core.state = fresh
        }
    }

    /// The last sequence number applied.
    public var lastSeq: UInt64 { published.state.seq }

    /// One current entry.
    public func entry(_ id: EntryID) -> MoodEntry? { read { $0.entries[id] } }

    /// The underlying event log (for tools: stats, verify, the server's own records). Named apart from
    /// ``log(_:)-pmrs``, which logs a mood.
    public var eventLog: EventLog { published.log }

    /// Whether a ledger (its log file) exists at `path`.
    /// - Parameters:
    ///   - path: the ledger directory.
    ///   - io: the system-call layer.
    public static func exists(at path: String, io: any PlatformIO = SystemIO()) -> Bool {
        io.exists(path + "/" + LogFormat.logFileName)
    }

    /// Makes every appended event durable on disk — a durability flush, needed only with
    /// `EventLog/Durability/batched` (a backend sync is `SyncEngine`'s `run()`).
    ///
    /// Commands and reads are not held up by the `fdatasync` (the ledger's lock is not held during it), so callers
    /// that each append and then flush form group commits: one flush makes every append before it durable.
    /// - Returns: the highest durable sequence number.
    /// - Throws: `EventLogError`; a failed flush is never retried and the ledger refuses writes until reopened.
    @discardableResult
    public func flush() throws -> UInt64 { try published.log.sync() }

    /// The durability flush under its former name. See ``flush()``.
    @available(*, deprecated, renamed: "flush()", message: "a durability flush, not a backend sync: flush()")
    @discardableResult
    public func sync() throws -> UInt64 { try flush() }

    /// Writes a snapshot of the current state now.
    /// - Returns: the sequence number it covers (0 when the ledger is empty and nothing was written).
    /// - Throws: `EventLogError` `io` or `notWritable` (read-only).
    @discardableResult
    public func snapshot() throws -> UInt64 {
        try writing { core in try writeSnapshot(&core) }
    }

    func writeSnapshot(_ core: inout Core) throws -> UInt64 {
        guard !options.readOnly else { throw EventLogError(.notWritable, "the ledger was opened read-only") }
        guard let location = core.log.lastRecord, core.state.seq == location.seq else { return 0 }
        // Unchanged days are copied from the snapshot read through: never from a damaged one (the copy would carry
        // new, valid checksums). A piece found damaged while copying fails the write; the state is then rebuilt.
        replaceIfDamaged(&core)
        do {
            try store.write(
                core.state, positions: Self.positions(of: core.log, through: location), location: location,
                fileID: core.log.fileID)
        } catch let error as SnapshotProblem {
            replaceIfDamaged(&core)
            throw EventLogError(.invalidArgument, "cannot write a snapshot: \(error.text)")
        }
        store.prune(sparseInterval: options.sparseSnapshotInterval, logBytes: core.log.endOffset)
        core.sinceSnapshot = 0
        // Read through the snapshot just written: what changed since the last one leaves memory, and a copy of the
        // state (``state``) costs no more than the changes since.
        if case .success(let image) = store.load(
            seq: location.seq, fileID: core.log.fileID,
            checkWhereReadFrom: options.checkSnapshotsWhereReadFrom)
        {
            core.state = LedgerState(image: image)
        }
        return location.seq
    }

    /// Writes a snapshot if at least ``Options/snapshotOnCloseMinimum`` events are not covered by one, and releases
    /// the writer lock.
    public func close() {
        core.withLock { core in
            if !options.readOnly, core.sinceSnapshot >= max(1, options.snapshotOnCloseMinimum),
                options.snapshotInterval > 0
            {
                // Writing in turn: only with the lock free at once and nothing written by another process since (a
                // snapshot is a cache; a close never waits for one).
                if options.keepsWriterLock || (try? core.log.beginWrite(waitMilliseconds: 0)) == .current {
                    _ = try? writeSnapshot(&core)
                }
                core.log.endWrite()
            }
            core.log.close()
        }
        published.wake()  // observations see the log closed, and end
    }

    /// Discards every snapshot, replays the whole log into fresh projections and writes a new snapshot.
    /// - Returns: how many events were replayed.
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event`.
    @discardableResult
    public func rebuild() throws -> UInt64 {
        try writing { core in
            guard !options.readOnly else { throw EventLogError(.notWritable, "the ledger was opened read-only") }
            try store.removeAll()
            var fresh = LedgerState()
            try Replayer.replay(
                core.log, from: .beginning, into: &fresh, pipelineThreshold: options.parallelReplayThreshold)
            core.state = fresh
            _ = try writeSnapshot(&core)
            return fresh.seq
        }
    }

    /// The snapshot files present (absolute paths), newest first.
    public var snapshotFiles: [String] { store.list().map(store.path(for:)) }
}
