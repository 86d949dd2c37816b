import EventLog

/// How one outbox item differs between two points of history: it appeared, disappeared, or changed.
public enum OutboxDifference: Sendable, Equatable {
    case appeared(OutboxItem)
    case disappeared(OutboxItem)
    case changed(before: OutboxItem, after: OutboxItem)

    /// The item at the earlier point, if it was there.
    public var before: OutboxItem? {
        switch self {
        case .appeared: return nil
        case .disappeared(let item), .changed(let item, _): return item
        }
    }

    /// The item at the later point, if it is there.
    public var after: OutboxItem? {
        switch self {
        case .disappeared: return nil
        case .appeared(let item), .changed(_, let item): return item
        }
    }

    /// The item as it is now, else as it was: its entry and destination.
    public var item: OutboxItem {
        switch self {
        case .appeared(let item), .disappeared(let item), .changed(_, let item): return item
        }
    }
}

/// What changed between two points of a ledger's history.
public struct LedgerDiff: Sendable, Equatable {
    public var fromSeq: UInt64
    public var toSeq: UInt64
    /// Entries present at `to` but not at `from`.
    public var added: [MoodEntry]
    /// Entries present at `from` but not at `to`.
    public var removed: [MoodEntry]
    /// Entries present at both, with a difference.
    public var changed: [(before: MoodEntry, after: MoodEntry)]
    /// Outbox items whose state differs.
    public var outbox: [OutboxDifference]

    public static func == (a: LedgerDiff, b: LedgerDiff) -> Bool {
        // Everything it holds: both sides of each change, and each outbox difference.
        a.fromSeq == b.fromSeq && a.toSeq == b.toSeq && a.added == b.added && a.removed == b.removed
            && a.changed.map(\.before) == b.changed.map(\.before) && a.changed.map(\.after) == b.changed.map(\.after)
            && a.outbox == b.outbox
    }

    public var json: JSONValue {
        .object([
            ("from_seq", .int(Int64(fromSeq))), ("to_seq", .int(Int64(toSeq))),
            ("added", .array(added.map(\.json))), ("removed", .array(removed.map(\.json))),
            (
                "changed",
                .array(
                    changed.map { pair in
                        .object([
                            ("entry_id", .string(pair.after.id.description)),
                            (
                                "changes",
                                .object(
                                    Ledger.fieldChanges(EntryChange(before: pair.before, after: pair.after)).map {
                                        ($0.field, .object([("from", $0.before), ("to", $0.after)]))
                                    })
                            )
                        ])
                    })
            ),
            (
                "outbox",
                .array(
                    outbox.map {
                        .object([
                            ("before", .optional($0.before) { $0.json }),
                            ("after", .optional($0.after) { $0.json })
                        ])
                    })
            )
        ])
    }
}

extension Ledger {
    /// The sequence number a point stands for (clamped to the end of the log).
    /// - Throws: `EventLogError` for damage met while searching by time.
    public func seq(at point: Point) throws -> UInt64 {
        let last = lastSeq
        switch point {
        case .seq(let seq): return min(seq, last)
        case .instant(let ms):
            return min(
                try eventLog.lastSeq(atOrBefore: ms.multipliedReportingOverflow(by: 1000).overflow ? .max : ms * 1000),
                last)
        }
    }

    /// All three projections as they were at a point: read-only, and equal to a replay up to that point. Apps ask
    /// through ``read(at:_:)``, which answers again should the snapshot read through prove damaged.
    ///
    /// Starts from the newest snapshot at or before the point (sparse older snapshots are kept for this), unless
    /// `fromSnapshots` is false, and replays the events after it.
    /// - Parameters:
    ///   - point: a sequence number or an instant.
    ///   - fromSnapshots: whether to start from a snapshot.
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event`.
    package func state(at point: Point, fromSnapshots: Bool = true) throws -> LedgerState {
        let target = try seq(at: point)
        let (live, log) = core.withLock { ($0.state, $0.log) }
        if target >= live.seq, fromSnapshots || live.entries.image == nil { return live }
        var state = LedgerState()
        var after: RecordLocation?
        if options.useSnapshots, fromSnapshots {
            for seq in store.list() where seq <= target {
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

    /// What changed between two points.
    /// - Throws: as ``read(at:_:)``.
    public func diff(from: Point, to: Point) throws -> LedgerDiff {
        try read(at: from) { a in try read(at: to) { b in Self.diff(a, b) } }
    }

    private static func diff(_ a: LedgerState, _ b: LedgerState) -> LedgerDiff {
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
