import Dispatch
import EventLog
import Platform
import Synchronization

/// Replays log records into a state: the fold of ``LedgerState/apply(_:)`` on the calling thread while a second
/// thread reads, checks and decodes the records ahead of it (bounded: at most four batches in flight).
enum Replayer {
    /// Where a replay starts.
    enum Start: Sendable {
        case beginning
        case after(RecordLocation)
    }

    /// Applies one record: a decoded event, or a record the ledger skips (safe-to-ignore types, *lost*); ends its
    /// batch where the record does.
    @inline(__always)
    static func apply(_ view: RecordView, to state: inout LedgerState, analytics: Bool) throws(MoodError) {
        if let kept = Ledger.keptRecord(view) {
            state.apply(kept, analytics: analytics)
        } else if view.type & LogFormat.safeToIgnoreBit != 0 {
            if KeptProjections.reads(attachment: view.type) { state.attached(type: view.type, payload: view.payload) }
            state.skip(seq: view.lastSeq, recordedAt: view.recordedAt)
        } else {
            state.apply(try Ledger.decode(view), analytics: analytics)
        }
        if !view.continuesBatch { state.endBatch() }
    }

    /// The hand-over between the reading thread and the folding one.
    private final class Channel: Sendable {
        /// Decoded records and, beside them, the entry each is about (what the fold prefetches ahead).
        final class Batch: @unchecked Sendable {
            /// The records, initialized in `applied..<count`, each moved out in turn to be folded (a recorded event
            /// is 136 bytes: an enum around it was taken apart with a copy). A record the ledger skips holds
            /// its last seq and time beside a placeholder event, and is marked in `skips`.
            ///
            /// One thread at a time owns a batch (the reader fills it, the channel's lock hands it over, the fold
            /// empties it), so its fields skip the dynamic exclusivity checks: they were ~5 % of a replay's
            /// instructions.
            private let records = UnsafeMutablePointer<RecordedEvent>.allocate(capacity: Channel.batchSize)
            @exclusivity(unchecked) private var skips: [Bool] = []
            /// Whether each record ends its batch (the fold closes the batch's revisions there).
            @exclusivity(unchecked) private var ends: [Bool] = []
            @exclusivity(unchecked) private(set) var count = 0
            @exclusivity(unchecked) private var applied = 0
            @exclusivity(unchecked) var ids: [EntryID] = []
            /// Each event's type (that of a record the ledger skips is not read).
            @exclusivity(unchecked) private var types: [EventType] = []
            /// Whether each record is an `entry.created` (moved into the entries' table by a bulk replay).
            @exclusivity(unchecked) private var creations: [Bool] = []
            /// The source-id hash of each created entry that has a source id (``Ledger/decode(_:into:)``).
            @exclusivity(unchecked) private var sourceHashes: [UInt64?] = []
            /// The records the folds skip that a kept projection reads (a sync batch's carrier), by position.
            @exclusivity(unchecked) private var attachments: [Int: (type: UInt16, payload: [UInt8])] = [:]

            init() {
                ids.reserveCapacity(Channel.batchSize)
                types.reserveCapacity(Channel.batchSize)
                creations.reserveCapacity(Channel.batchSize)
                sourceHashes.reserveCapacity(Channel.batchSize)
                skips.reserveCapacity(Channel.batchSize)
                ends.reserveCapacity(Channel.batchSize)
            }

            deinit {
                (records + applied).deinitialize(count: count - applied)
                records.deallocate()
            }

            var isFull: Bool { count == Channel.batchSize }

            /// Empties a batch whose records were all applied, for the reading thread to fill again: a replay reuses
            /// its few batches instead of allocating and freeing ~170 KB a thousand records (each free of that size
            /// made the allocator consolidate its free lists).
            func reuse() {
                precondition(applied == count, "a batch reused before its records were applied")
                count = 0
                applied = 0
                ids.removeAll(keepingCapacity: true)
                types.removeAll(keepingCapacity: true)
                creations.removeAll(keepingCapacity: true)
                sourceHashes.removeAll(keepingCapacity: true)
                skips.removeAll(keepingCapacity: true)
                ends.removeAll(keepingCapacity: true)
                attachments.removeAll()
            }

            /// Decodes a record into the batch.
            func append(_ view: RecordView) throws(MoodError) {
                precondition(count < Channel.batchSize, "a full batch")
                let slot = records + count
                var skip = false
                if view.type & LogFormat.safeToIgnoreBit == 0 {
                    // An event (nearly every record), decoded straight into its place: the optional of a kept record
                    // asked first was copied about eight times a record (~8 % of this thread's time).
                    let decoded = try Ledger.decode(view, into: slot)
                    ids.append(decoded.id)
                    types.append(decoded.type)
                    creations.append(decoded.creates)
                    sourceHashes.append(decoded.sourceHash)
                } else if let kept = Ledger.keptRecord(view) {
                    ids.append(kept.event.entryID)
                    types.append(kept.event.type)
                    creations.append(false)
                    sourceHashes.append(nil)
                    slot.initialize(to: kept)
                } else {
                    skip = true
                    if KeptProjections.reads(attachment: view.type) {
                        attachments[count] = (view.type, Array(view.payload))
                    }
                    let none = EntryID(high: 0, low: 0)
                    slot.initialize(
                        to: RecordedEvent(
                            seq: view.lastSeq, recordedAt: view.recordedAt,
                            commandID: none, event: .deleted(none)))
                    ids.append(none)
                    types.append(.deleted)
                    creations.append(false)
                    sourceHashes.append(nil)
                }
                skips.append(skip)
                ends.append(!view.continuesBatch)
                count += 1
            }

            /// Folds the batch's records into `folds` on the reading thread, before the batch is handed over: the
            /// folding thread folds the rest of each (``LedgerState/applyExceptRecordFolds(_:analytics:entryID:)``).
            func foldRecords(into folds: inout RecordFolds) {
                for index in 0..<count {
                    let record = records + index
                    if skips[index] {
                        if let attachment = attachments.removeValue(forKey: index) {
                            attachment.payload.withUnsafeBytes { folds.attached(type: attachment.type, payload: $0) }
                        }
                    } else {
                        folds.apply(UnsafePointer(record), type: types[index], entryID: ids[index])
                    }
                    if ends[index] { folds.endBatch(at: record.pointee.seq) }
                }
            }

            /// Folds the next record (in order) into `state`, but for the record folds, which the reading thread
            /// folded (``foldRecords(into:)``).
            @inline(__always)
            func applyNext(to state: inout LedgerState, analytics: Bool) {
                precondition(applied < count, "every record applied")
                let index = applied
                let next = records + index
                applied += 1
                if skips[index] {
                    state.skip(seq: next.pointee.seq, recordedAt: next.pointee.recordedAt)
                    next.deinitialize(count: 1)
                } else {
                    // Moved out (its bytes, no reference counted): the pointee itself would be copied, references
                    // retained, for the call, which could otherwise see it changed under it.
                    let recorded = next.move()
                    if !analytics && creations[index] {
                        state.applyBulkCreation(recorded, entryID: ids[index], sourceHash: sourceHashes[index])
                    } else {
                        state.applyExceptRecordFolds(recorded, analytics: analytics, entryID: ids[index])
                    }
                }
                if ends[index] { state.endBatchExceptRecordFolds() }
            }
        }
        /// The batch the reading thread fills, held where its closures reach it without the dynamic exclusivity
        /// checks a captured variable gets (two a record): only that thread touches it; and the record folds that
        /// thread folds.
        final class Filling: @unchecked Sendable {
            @exclusivity(unchecked) var batch = Batch() {
                didSet { current = Unmanaged.passUnretained(batch) }
            }
            /// ``batch``, reached without the retain and release a load of a class reference costs (~30 ms of a
            /// 1,000,000-record replay): ``batch`` keeps it alive.
            @exclusivity(unchecked) private var current: Unmanaged<Batch>
            @exclusivity(unchecked) var folds: RecordFolds

            init(folds: RecordFolds) {
                self.folds = folds
                current = Unmanaged.passUnretained(batch)
            }

            /// Decodes a record into the batch; whether the batch is full.
            @inline(__always)
            func append(_ view: RecordView) throws(MoodError) -> Bool {
                let failure: MoodError? = current._withUnsafeGuaranteedRef { batch in
                    do throws(MoodError) {
                        try batch.append(view)
                        return nil
                    } catch {
                        return error
                    }
                }
                if let failure { throw failure }
                return current._withUnsafeGuaranteedRef { $0.isFull }
            }
        }

        struct State {
            var batches: [Batch] = []
            /// Batches applied, for the reading thread to fill again.
            var spare: [Batch] = []
            var finished = false
            var failure: (any Error)?
            /// The log the producer opened, if it opened one.
            var log: EventLog?
            /// The record folds, once the reading thread folded them to the end.
            var folds: RecordFolds?
            /// Memory the fold is about to fill (``LedgerState/growingStorage``), for the reading thread to make
            /// resident as it hands over its next batch.
            var populate: [(address: UInt, bytes: Int)] = []
        }
        let state = Mutex(State())
        let ready = DispatchSemaphore(value: 0)
        let space = DispatchSemaphore(value: 4)
        /// Records a batch holds: at most six batches are alive (four waiting, one filling, one folding), reused
        /// until the replay ends, 136 bytes a record and ~40 beside it, so they hold about 1 MiB.
        static let batchSize = 1_024
    }

    /// Applies every record after `start` through `last` to `state`.
    ///
    /// A replay into an empty state without a snapshot (a cold open, a rebuild, time travel before the first sparse
    /// snapshot) folds entries and the outbox event by event and builds the days' ordered keys and the analytics from
    /// the resulting entries once at the end (``LedgerState/finishBulkReplay()``), also when the replay fails part way.
    /// - Returns: how many records were applied.
    /// - Throws: ``EventLogError`` or ``MoodError`` `corrupt_event`, as the log is read.
    @discardableResult
    static func replay(
        _ log: EventLog, from start: Start, through last: UInt64 = .max, into state: inout LedgerState,
        pipelineThreshold: UInt64
    ) throws -> Int {
        let first: UInt64
        switch start {
        case .beginning: first = 1
        case .after(let location): first = location.seq + 1
        }
        let end = min(last, log.lastSeq)
        guard end >= first else {
            // Still check the starting record is the one expected.
            if case .after(let location) = start {
                try log.forEach(after: location, through: location.seq) { _ in true }
            }
            return 0
        }
        return try fold(into: &state, records: end - first + 1) { state, analytics in
            if end - first + 1 < pipelineThreshold {
                var count = 0
                try read(log, from: start, through: last) { view in
                    try apply(view, to: &state, analytics: analytics)
                    count += 1
                }
                return count
            }
            return try pipelined(into: &state, analytics: analytics) { sink in
                try read(log, from: start, through: last) { try sink($0) }
                return nil
            }.count
        }
    }

    /// Opens the log in `directory` and replays all of it into `state` (empty) in the same pass: the records the
    /// recovery scan reads are decoded and folded as it reads them, instead of the scan reading the whole file first
    /// and the replay reading it again (at 1,000,000 events the scan was ~45 ms before the fold could start).
    ///
    /// The log is damaged or not before its events are: a record that does not decode is reported once the scan
    /// has finished without finding damage, as a replay after a separate open would. Records of a torn batch the
    /// scan saw before the file ended (only a crash leaves one) are trimmed by the open, and the state is then
    /// replayed again from the log as opened.
    /// - Parameters:
    ///   - directory: the ledger's directory.
    ///   - configuration: how to open the log (no checkpoint: the replay starts at the first record).
    ///   - state: an empty state (``LedgerState/buildsAnalyticsInBulk``).
    ///   - pipelineThreshold: from how many records (estimated from the file's size) a second thread decodes.
    /// - Returns: the open log and how many records were applied.
    /// - Throws: ``EventLogError`` from opening or reading the log, or ``MoodError`` `corrupt_event`.
    static func openAndReplay(
        directory: String, configuration: EventLog.Configuration, into state: inout LedgerState,
        pipelineThreshold: UInt64
    ) throws -> (log: EventLog, count: Int) {
        precondition(configuration.checkpoint == nil, "a replay from the first record (no checkpoint)")
        precondition(state.buildsAnalyticsInBulk, "a replay from the first record (analytics built in bulk)")
        let bytes = logBytes(directory: directory, io: configuration.io)
        let mostRecords = UInt64(bytes / minimumRecordBytes)
        let (opened, count) = try fold(into: &state, records: mostRecords) { state, analytics -> (EventLog, Int) in
            if mostRecords < pipelineThreshold {
                var count = 0
                let log = try open(directory, configuration) { view throws(MoodError) in
                    try apply(view, to: &state, analytics: analytics)
                    count += 1
                }
                return (log, count)
            }
            let (log, count) = try pipelined(into: &state, analytics: analytics) { sink in
                try open(directory, configuration, deliver: sink)
            }
            return (log!, count)
        }
        guard state.seq > opened.lastSeq else { return (opened, count) }
        state = LedgerState()
        return (opened, try replay(opened, from: .beginning, into: &state, pipelineThreshold: pipelineThreshold))
    }

    /// Opens the log, handing `deliver` each record its recovery scan reads. The first record that does not decode
    /// (`deliver` throws) ends the deliveries, and is thrown once the scan has finished without finding damage.
    private static func open(
        _ directory: String, _ configuration: EventLog.Configuration,
        deliver: (RecordView) throws(MoodError) -> Void
    ) throws -> EventLog {
        var failure: MoodError?
        let log = try EventLog.open(directory: directory, configuration: configuration) { view in
            guard failure == nil else { return }
            do throws(MoodError) { try deliver(view) } catch { failure = error }
        }
        if let failure { throw failure }
        return log
    }

    /// From how many records a bulk replay hands the allocator's free pages back before its end build (about 6 MB of
    /// log).
    static let trimFromRecords: UInt64 = 100_000

    /// The least a record of an event takes in the log (a header and a short payload): what turns a file's size
    /// into the most records it can hold, for ``openAndReplay(directory:configuration:into:pipelineThreshold:)``.
    private static let minimumRecordBytes: Int64 = 64

    /// The log file's size (0 if it cannot be read: the open reports why).
    private static func logBytes(directory: String, io: any PlatformIO) -> Int64 {
        io.size(ofPath: directory + "/" + LogFormat.logFileName) ?? 0
    }

    /// Runs a replay's fold, in bulk when `state` is empty: the analytics and the days' indexes are then built once
    /// at the end, also when the fold fails part way.
    /// - Parameter records: about how many records the replay folds (at most): a small one does not hand memory back.
    private static func fold<Result>(
        into state: inout LedgerState, records: UInt64,
        _ body: (inout LedgerState, _ analytics: Bool) throws -> Result
    ) throws -> Result {
        let analytics = !state.buildsAnalyticsInBulk
        let trims = !analytics && records >= trimFromRecords
        // A bulk replay builds the whole ledger in memory: the allocator's free pages go back to the system before
        // its end builds the days and analytics (the peak), or what an earlier one freed (a closed ledger, whose
        // memory may sit in another thread's heap) and what the fold freed (its batches, decoded values) stay
        // resident beside it. Not before it starts: the fold reuses what a closed ledger freed, where handing it back
        // first cost ~8 ms and then the faults of every page taken again (at 1,000,000 events a second cold open in
        // one process took 300–320 ms with it, 260–290 without; its peak rose from 143.2 to 145.3 MiB, the next
        // opens' no further). A call takes ~0.4 ms — more than a small ledger's whole replay (a server opening one per
        // request spent a fifth of its time there), so only a replay of ``trimFromRecords`` records or more pays
        // for it.
        if !analytics { state.beginBulkReplay() }
        defer {
            if !analytics {
                if trims { SystemIO.releaseFreeMemory() }
                state.finishBulkReplay()
            }
        }
        return try body(&state, analytics)
    }

    private static func read(
        _ log: EventLog, from start: Start, through last: UInt64,
        _ body: (RecordView) throws -> Void
    ) throws {
        let step: (RecordView) throws -> Bool = { view in
            try body(view)
            return true
        }
        switch start {
        case .beginning: try log.forEach(from: 1, through: last, step)
        case .after(let location): try log.forEach(after: location, through: last, step)
        }
    }

    /// Folds the records `produce` hands its sink, decoded on a second thread: `produce` runs there, and the log it
    /// returns (one it opened, if any) is returned with the count.
    private static func pipelined(
        into state: inout LedgerState, analytics: Bool,
        _ produce: @escaping @Sendable (_ sink: (RecordView) throws(MoodError) -> Void) throws -> EventLog?
    )
        throws -> (log: EventLog?, count: Int)
    {
        let channel = Channel()
        // The record folds go to the reading thread, which folds them as it hands each batch over (the two threads
        // share the fold's work), and come back once it has read the last record.
        let filling = Channel.Filling(folds: state.recordFolds)
        state.recordFolds = RecordFolds()
        DispatchQueue.global(qos: .userInitiated).async {
            func hand() {
                filling.batch.foldRecords(into: &filling.folds)
                channel.space.wait()
                let (spare, populate) = channel.state.withLock { state in
                    state.batches.append(filling.batch)
                    defer { state.populate.removeAll() }
                    return (state.spare.popLast(), state.populate)
                }
                channel.ready.signal()
                filling.batch = spare ?? Channel.Batch()
                // The page faults of the fold's first writes to a new chunk of entries or outbox records, taken here,
                // where the thread had room to wait: at 1,000,000 events they were ~22 ms of the folding thread's ~257,
                // which set the pace then (the two are now level).
                for range in populate { SystemIO.populateForWriting(address: range.address, bytes: range.bytes) }
            }
            do {
                let log = try produce { view throws(MoodError) in
                    if try filling.append(view) { hand() }
                }
                if filling.batch.count > 0 { hand() }
                channel.state.withLock { $0.log = log }
            } catch {
                // The records read before the failure are folded, as a replay on one thread folds them.
                if filling.batch.count > 0 { hand() }
                channel.state.withLock { $0.failure = error }
            }
            // Moved out, not copied: a copy left here would make the state's next change copy them.
            let folds = filling.folds
            filling.folds = RecordFolds()
            channel.state.withLock {
                $0.folds = folds
                $0.finished = true
            }
            channel.ready.signal()
        }
        var count = 0
        var populated: Set<UInt> = []
        while true {
            channel.ready.wait()
            let (batch, finished, failure) = channel.state.withLock { state -> (Channel.Batch?, Bool, (any Error)?) in
                if !state.batches.isEmpty { return (state.batches.removeFirst(), false, nil) }
                return (nil, state.finished, state.failure)
            }
            guard let batch else {
                guard finished else { continue }
                // Taken out, not copied: a copy left in the channel would make the state's next change copy them.
                let folds = channel.state.withLock { state -> RecordFolds? in
                    defer { state.folds = nil }
                    return state.folds
                }
                if let folds {
                    state.recordFolds = folds
                    state.handErasuresToRecordFolds()
                }
                if let failure { throw failure }
                return (channel.state.withLock { $0.log }, count)
            }
            channel.space.signal()
            // Each event's index slots are asked for `ahead` events before it is applied: the indexes of a large
            // ledger are far bigger than the caches, and the fold otherwise waits on memory for each lookup.
            let ahead = 16
            let valuesAhead = 8
            for index in 0..<batch.count {
                if index + ahead < batch.ids.count { state.prefetch(batch.ids[index + ahead]) }
                if index + valuesAhead < batch.ids.count { state.prefetchValues(batch.ids[index + valuesAhead]) }
                batch.applyNext(to: &state, analytics: analytics)
            }
            count += batch.count
            batch.reuse()
            let growing = state.growingStorage.filter { populated.insert($0.address).inserted }
            channel.state.withLock {
                $0.spare.append(batch)
                $0.populate += growing
            }
        }
    }
}

extension LedgerState {
    /// Folds one record read from the log as a replay does: an event, a record an older version wrote beside the
    /// events (read as its event), or a record the folds skip; ending its batch where the record does.
    /// - Throws: ``MoodError`` `corrupt_event` for an event that does not decode.
    package mutating func fold(_ view: RecordView) throws(MoodError) {
        try Replayer.apply(view, to: &self, analytics: true)
    }
}
