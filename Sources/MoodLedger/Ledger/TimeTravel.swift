import EventLog

/// The ledger's history as states: the state as it was after any event (the newest snapshot at or before it, then
/// a replay of the events up to it), and what changed between two such states.
struct TimeTravel {
    let log: EventLog
    let store: SnapshotStore
    let options: Ledger.Options

    /// The state after event `target`: from the newest snapshot at or before it (sparse older snapshots are kept
    /// for this; each is checked whole), unless `fromSnapshots` is false, then a replay of the events after it.
    ///
    /// A snapshot that covers less than half of the events up to `target` is not used: the events after a snapshot
    /// are folded one by one into a state read through it (each day's analytics kept in order), which at 1,000,000
    /// events costs about 1.8 times a replay from the first event, whose analytics and days are built once at its end.
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event`.
    func state(through target: UInt64, fromSnapshots: Bool) throws -> LedgerState {
        var state = LedgerState()
        var after: RecordLocation?
        if options.useSnapshots, fromSnapshots {
            for seq in store.list() where seq <= target {
                guard seq >= target - seq else { break }  // the older ones cover even less
                guard case .success(let image) = store.load(seq: seq, fileID: log.fileID) else { continue }
                state = LedgerState(image: image)
                after = image.header.location
                break
            }
        }
        try Replayer.replay(
            log, from: after.map { .after($0) } ?? .beginning, through: target, into: &state,
            pipelineThreshold: options.parallelReplayThreshold)
        return state
    }

    /// What changed from `a` to `b`: entries added, removed and changed (newest first), outbox differences by key.
    static func diff(_ a: LedgerState, _ b: LedgerState) -> LedgerDiff {
        var diff = LedgerDiff(fromSeq: a.seq, toSeq: b.seq, added: [], removed: [], changed: [], outbox: [])
        for after in b.entries.all {
            if let before = a.entries[after.id] {
                if before != after { diff.changed.append((before, after)) }
            } else {
                diff.added.append(after)
            }
        }
        for before in a.entries.all where b.entries[before.id] == nil { diff.removed.append(before) }
        diff.added.sort(by: MoodEntry.newestFirst)
        diff.removed.sort(by: MoodEntry.newestFirst)
        diff.changed.sort { MoodEntry.newestFirst($0.after, $1.after) }
        let before = Dictionary(
            a.outboxItems().map { (OutboxKey(entryID: $0.entryID, destination: $0.destination), $0) },
            uniquingKeysWith: { x, _ in x })
        let after = Dictionary(
            b.outboxItems().map { (OutboxKey(entryID: $0.entryID, destination: $0.destination), $0) },
            uniquingKeysWith: { x, _ in x })
        for key in Set(before.keys).union(after.keys).sorted() where before[key] != after[key] {
            switch (before[key], after[key]) {
            case (let old?, let new?): diff.outbox.append(.changed(before: old, after: new))
            case (nil, let new?): diff.outbox.append(.appeared(new))
            case (let old?, nil): diff.outbox.append(.disappeared(old))
            case (nil, nil): break  // a key comes from one side or the other
            }
        }
        return diff
    }
}
