import EventLog

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
    /// through ``state(at:)`` or ``read(at:_:)-6yahl``, which answers again should the snapshot read through prove damaged.
    ///
    /// Starts from the newest snapshot at or before the point (sparse older snapshots are kept for this), unless
    /// `fromSnapshots` is false, and replays the events after it.
    /// - Parameters:
    ///   - point: a sequence number or an instant.
    ///   - fromSnapshots: whether to start from a snapshot.
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event`.
    package func travel(to point: Point, fromSnapshots: Bool = true) throws -> LedgerState {
        let target = try seq(at: point)
        let (live, log) = { ($0.state, $0.log) }(published.current)
        if target >= live.seq, fromSnapshots || live.entries.image == nil { return live }
        let travel = TimeTravel(log: log, store: store, options: options)
        return try travel.state(through: target, fromSnapshots: fromSnapshots)
    }

    /// All three projections as they were at a point: read-only, and equal to a replay of the log up to it. A snapshot
    /// read through that proves damaged is not trusted: the state is replayed from the log instead (as
    /// ``read(at:_:)-6yahl`` does).
    /// - Parameter point: a sequence number or an instant.
    /// - Returns: the state; the current one for a point at or after the last commit.
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event`.
    public func state(at point: Point) throws -> LedgerState { try read(at: point) { $0 } }

    /// What changed between two points.
    /// - Throws: as ``read(at:_:)-6yahl``.
    public func diff(from: Point, to: Point) throws -> LedgerDiff {
        try read(at: from) { a in try read(at: to) { b in TimeTravel.diff(a, b) } }
    }
}
