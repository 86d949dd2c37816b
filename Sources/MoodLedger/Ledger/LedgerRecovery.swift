import EventLog

/// Recovery on open: the newest snapshot that is intact and belongs to the log, the log opened (a torn tail
/// trimmed, with a notice) from that snapshot's checkpoint, and the events after it replayed — or, without a usable
/// snapshot, the whole log replayed as the open's recovery scan reads it.
enum LedgerRecovery {
    /// What an open recovered.
    struct Opened {
        var log: EventLog
        /// The state as of the log's last record (reading through the mapped snapshot it started from, if any).
        var state: LedgerState
        /// What recovery noticed: a trimmed torn tail, skipped snapshots.
        var notices: [String]
        /// How many events were replayed onto the snapshot (all of them without one).
        var replayed: Int
    }

    /// Opens the log at `path` and recovers the state (`Specs/ledger.md`, *Open*).
    /// - Throws: `EventLogError` (`locked`, `corrupted` with offset and seq, `notFound`, `io`) or ``MoodError``
    ///   `corrupt_event` for an undecodable event.
    ///
    /// Long because opening is one sequence — the newest intact snapshot, the log from its checkpoint, the tail's
    /// replay, pending erasures — with a fallback to the next snapshot or a full replay at each step.
    static func open(at path: String, options: Ledger.Options) throws -> Opened {
        var notices: [String] = []
        let store = SnapshotStore(ledgerDirectory: path, io: options.io)
        var configuration = EventLog.Configuration()
        configuration.io = options.io
        configuration.durability = options.durability
        configuration.access = options.readOnly ? .readOnly : .readWrite
        configuration.createIfMissing = options.createIfMissing && !options.readOnly
        configuration.lockWaitMilliseconds = options.lockWaitMilliseconds
        configuration.lockWhileOpen = options.keepsWriterLock
        // An in-place redaction a crash interrupted: snapshots from its first record on may hold what it redacts.
        // They are never read, and are removed once the open has finished the journal (`Specs/erasure.md`).
        let redactedFrom = EventLog.unfinishedRedactionFirstSeq(directory: path, io: options.io)
        let candidates = (options.useSnapshots ? store.list() : []).filter { seq in
            redactedFrom.map { seq < $0 } ?? true
        }

        // The newest snapshot that is intact on its own; its covered record becomes the log's checkpoint.
        var loaded: SnapshotImage?
        var remaining = candidates[...]
        while loaded == nil, let seq = remaining.popFirst() {
            switch store.load(seq: seq, fileID: nil, checkWhereReadFrom: options.checkSnapshotsWhereReadFrom) {
            case .success(let value): loaded = value
            case .failure(let problem): notices.append("snapshot skipped: \(problem.text)")
            }
        }
        configuration.checkpoint = loaded?.header.location
        // The newest intact snapshot proves the log once reached its seq: a log that ends below it lost acknowledged
        // events (a writer's open refuses; a reader's says so). Read even when snapshots are not used for the state.
        configuration.evidence =
            loaded.map { store.evidence(loaded: $0) }
            ?? store.evidence(checkWhereReadFrom: options.checkSnapshotsWhereReadFrom)
        var current = LedgerState()
        // Without a snapshot the replay starts at the first record: it folds the records as the open's recovery scan
        // reads them, instead of reading the log a second time after it.
        var coldReplay: Int?
        let log: EventLog
        if loaded == nil {
            (log, coldReplay) = try Replayer.openAndReplay(
                directory: path, configuration: configuration, into: &current,
                pipelineThreshold: options.parallelReplayThreshold)
        } else {
            log = try EventLog.open(directory: path, configuration: configuration)
        }
        if let first = redactedFrom {
            // The journal is finished (the open wrote it, or waited for the writer that did): no file may still hold
            // the redacted data. A writer must remove them; a reader removes them if the directory lets it.
            if options.readOnly {
                try? store.remove(coveringFrom: first)
            } else {
                try store.remove(coveringFrom: first)
            }
        }
        if let notice = log.recoveryNotice { notices.append(notice.description) }
        if let missing = log.missingSeqs {
            notices.append(
                "ACKNOWLEDGED EVENTS ARE MISSING: the log ends at seq \(missing.seqs.lowerBound - 1), but "
                    + "\(missing.source) proves seqs \(missing.seqs.lowerBound)…\(missing.seqs.upperBound) were written; "
                    + "nothing can be appended until `moodledger repair --salvage` records the loss")
        }

        // Check the snapshot belongs to this log and its record is still there; else try older ones. The state reads
        // through the mapped snapshot: nothing is decoded until a query reads it.
        var after: RecordLocation?
        var candidate = loaded.take()
        while true {
            if let image = candidate.take() {
                let header = image.header
                if header.fileID == log.fileID, snapshotMatches(header.location, log: log) {
                    current = LedgerState(image: image)
                    after = header.location
                    // The log's sparse index before the checkpoint, kept by the snapshot: not read from the log.
                    log.adoptIndexPositions(image.positions)
                    break
                }
                notices.append(
                    "snapshot \(header.location.seq) skipped: it does not match the log (ahead of it, or the log was replaced)"
                )
            }
            guard let seq = remaining.popFirst() else { break }
            switch store.load(seq: seq, fileID: log.fileID, checkWhereReadFrom: options.checkSnapshotsWhereReadFrom) {
            case .success(let value): candidate = value
            case .failure(let problem): notices.append("snapshot skipped: \(problem.text)")
            }
        }
        var replayed =
            try coldReplay
            ?? Replayer.replay(
                log, from: after.map { .after($0) } ?? .beginning, into: &current,
                pipelineThreshold: options.parallelReplayThreshold)
        if let image = current.entries.image, image.isDamaged {
            // The tail read a piece that fails its checksum: the snapshot is not used, the whole log is replayed.
            notices.append("snapshot \(image.seq) skipped: \(image.damageDescription ?? "damaged")")
            current = LedgerState()
            replayed = try Replayer.replay(
                log, from: .beginning, into: &current,
                pipelineThreshold: options.parallelReplayThreshold)
        }
        return Opened(log: log, state: current, notices: notices, replayed: replayed)
    }

    /// Whether the record a snapshot covers is still in the log, unchanged.
    private static func snapshotMatches(_ location: RecordLocation, log: EventLog) -> Bool {
        if log.resumedFromCheckpoint, log.configuration.checkpoint == location { return true }
        guard location.seq <= log.lastSeq else { return false }
        var matches = false
        try? log.forEach(from: location.seq, through: location.seq) { view in
            matches = view.location == location
            return false
        }
        return matches
    }
}
