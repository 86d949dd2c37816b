/// One line of the outbox.
public struct OutboxItem: Sendable, Equatable {
    public var entryID: EntryID
    public var destination: SyncDestination
    public var operation: SyncOperation?
    /// pending, failed or synced.
    public var status: String
    public var attempts: Int
    public var lastError: String?
    /// Milliseconds since 1970.
    public var nextAttemptAt: Int64?
    public var remoteID: String?
    /// An attempt began and no outcome was recorded yet.
    public var inFlight = false

    public var json: JSONValue {
        .object([
            ("entry_id", .string(entryID.description)), ("destination", .string(destination.rawValue)),
            ("operation", .optional(operation) { .string($0.rawValue) }), ("status", .string(status)),
            ("attempts", .int(Int64(attempts))), ("last_error", .optional(lastError) { .string($0) }),
            (
                "next_attempt_at",
                .optional(nextAttemptAt) { .string(ISO8601.format(milliseconds: $0, offsetMinutes: 0)) }
            )
        ])
    }
}

extension LedgerState {
    /// What still has to reach each destination: pending and failed items (and synced ones when asked), ordered
    /// by entry (logged-at, then id) and destination.
    /// - Parameters:
    ///   - includeSynced: also list pairs that are up to date.
    ///   - only: only this destination (`destination:` at the call).
    public func outboxItems(includeSynced: Bool = false, destination only: SyncDestination? = nil) -> [OutboxItem] {
        var items: [OutboxItem] = []
        let destinations = only.map { [$0] } ?? SyncDestination.allCases
        // Every record read once (a snapshot's are decoded from the mapped file), then looked up in memory.
        let pairs = outbox.pairsByID
        var byID: [EntryID: OutboxState.Pair] = [:]
        byID.reserveCapacity(pairs.count)
        // Records of entries that are gone locally (pending deletes).
        for pair in pairs {
            byID[pair.id] = pair
            guard !entries.contains(pair.id) else { continue }
            for destination in SyncDestination.allCases.sorted() where destinations.contains(destination) {
                let key = OutboxKey(entryID: pair.id, destination: destination)
                if let record = pair[destination], let item = Self.item(key, record, includeSynced) {
                    items.append(item)
                }
            }
        }
        for day in entries.activeDays {
            for entry in entries.entries(on: day).reversed() {
                for destination in destinations {
                    let key = OutboxKey(entryID: entry.id, destination: destination)
                    if let record = byID[entry.id]?[destination] {
                        // A record exists (e.g. an entry pulled from there and edited here): it decides.
                        if let item = Self.item(key, record, includeSynced) { items.append(item) }
                    } else if OutboxState.isEligible(entry.source, for: destination) {
                        items.append(
                            OutboxItem(
                                entryID: entry.id, destination: destination, operation: .create,
                                status: "pending", attempts: 0))
                    }
                }
            }
        }
        return items
    }

    private static func item(_ key: OutboxKey, _ record: OutboxRecord, _ includeSynced: Bool) -> OutboxItem? {
        let status = record.operation == nil ? "synced" : record.parked ? "failed" : "pending"
        if status == "synced" && !includeSynced { return nil }
        return OutboxItem(
            entryID: key.entryID, destination: key.destination, operation: record.operation,
            status: status, attempts: record.attempts, lastError: record.lastError,
            nextAttemptAt: record.nextAttemptAt, remoteID: record.remoteID, inFlight: record.inFlight)
    }
}
