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
