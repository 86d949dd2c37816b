/// The outbox's record of one (entry, destination) pair once anything happened between them.
///
/// Entries with no such record are *implicitly* pending a create at every destination they may go to; that keeps
/// the state small when nothing has been synced yet. See `Specs/ledger.md`.
public struct OutboxRecord: Sendable, Equatable {
    /// What is pending, or `nil` when the destination is up to date.
    public var operation: SyncOperation?
    /// The destination's id once a send succeeded.
    public var remoteID: String?
    /// Attempts since the last success.
    public var attempts = 0
    /// The last failure's text.
    public var lastError: String?
    /// The last failure's status.
    public var lastStatus: Int?
    /// When to try again (ms), after a retryable failure.
    public var nextAttemptAt: Int64?
    /// A non-retryable failure parked the item until the entry changes again.
    public var parked = false
    /// The entry changed after the latest attempt began (a success then leaves an update pending).
    var changedSinceAttempt = false
}

/// Where each entry stands with each destination. A pure fold; replaying it never sends anything.
public struct OutboxState: Sendable, Equatable {
    /// Records of pairs with sync history, by entry (one lookup answers both destinations).
    private var byEntry: [EntryID: [OutboxRecord?]] = [:]

    public init() {}

    /// The record of one pair, if it has sync history.
    public func record(_ key: OutboxKey) -> OutboxRecord? {
        byEntry[key.entryID]?[Int(key.destination.code)]
    }

    /// Every record, ordered by entry id then destination.
    public var records: [(key: OutboxKey, value: OutboxRecord)] {
        byEntry.keys.sorted().flatMap { id in
            SyncDestination.allCases.compactMap { destination in
                byEntry[id]![Int(destination.code)].map { (OutboxKey(entryID: id, destination: destination), $0) }
            }
        }
    }

    /// How many pairs have records.
    public var recordCount: Int { byEntry.values.reduce(0) { $0 + $1.compactMap { $0 }.count } }

    /// Sets or removes one pair's record.
    private subscript(key: OutboxKey) -> OutboxRecord? {
        get { record(key) }
        set {
            var pair = byEntry[key.entryID] ?? [nil, nil]
            pair[Int(key.destination.code)] = newValue
            byEntry[key.entryID] = pair.allSatisfy { $0 == nil } ? nil : pair
        }
    }

    /// Replaces the records (snapshot load).
    mutating func restore(_ records: [OutboxKey: OutboxRecord]) {
        byEntry = [:]
        for (key, record) in records { self[key] = record }
    }

    /// Backoff after the n-th failed attempt: 30 s × 2^(n−1), at most 6 hours.
    public static func backoffMilliseconds(afterAttempts attempts: Int) -> Int64 {
        let exponent = min(max(attempts - 1, 0), 20)
        return min(30_000 << Int64(exponent), 6 * 3_600_000)
    }

    /// Whether entries from `source` go to `destination` (never back where they came from).
    public static func isEligible(_ source: MoodSource, for destination: SyncDestination) -> Bool {
        source != destination.originSource
    }

    /// Applies one event with what it did to the entry (from the entries projection).
    mutating func apply(_ event: MoodEvent, change: EntryChange?, at time: Int64) {
        switch event {
        case .created, .updated, .labelsEdited, .associationsEdited, .tagsEdited, .deleted:
            if let change { entryChanged(event.entryID, change, except: nil) }
        case .syncAttempted(let id, let destination, let operation):
            let key = OutboxKey(entryID: id, destination: destination)
            var record = self[key] ?? OutboxRecord(operation: .create)
            record.attempts += 1
            record.changedSinceAttempt = false
            if record.operation == nil { record.operation = operation }
            self[key] = record
        case .syncSucceeded(let id, let destination, let remoteID):
            let key = OutboxKey(entryID: id, destination: destination)
            var record = self[key] ?? OutboxRecord(operation: .create)
            record.remoteID = remoteID
            record.attempts = 0
            record.lastError = nil
            record.lastStatus = nil
            record.nextAttemptAt = nil
            record.parked = false
            if record.operation == .delete && !record.changedSinceAttempt {
                self[key] = nil
                return
            }
            if record.changedSinceAttempt {
                if record.operation == .create { record.operation = .update }
            } else {
                record.operation = nil
            }
            self[key] = record
        case .syncFailed(let id, let destination, let failure):
            let key = OutboxKey(entryID: id, destination: destination)
            var record = self[key] ?? OutboxRecord(operation: .create)
            record.lastError = failure.error
            record.lastStatus = failure.status
            if failure.retryable {
                record.nextAttemptAt = time + Self.backoffMilliseconds(afterAttempts: max(record.attempts, 1))
                record.parked = false
            } else {
                record.nextAttemptAt = nil
                record.parked = true
            }
            self[key] = record
        case .remoteApplied(let remote):
            let key = OutboxKey(entryID: remote.entryID, destination: remote.origin)
            if remote.entry == nil {
                self[key] = nil
            } else {
                var record = self[key] ?? OutboxRecord()
                record = OutboxRecord(operation: nil, remoteID: remote.remoteID ?? record.remoteID)
                self[key] = record
            }
            if let change { entryChanged(remote.entryID, change, except: remote.origin) }
        }
    }

    /// An entry was created, changed or deleted locally (or from `except`): update the other destinations.
    private mutating func entryChanged(_ id: EntryID, _ change: EntryChange, except: SyncDestination?) {
        guard byEntry[id] != nil else { return }  // no history: the implicit pending create covers any change
        for destination in SyncDestination.allCases where destination != except {
            let key = OutboxKey(entryID: id, destination: destination)
            guard var record = self[key] else { continue }  // implicit: a pending create covers any change
            if change.after == nil {
                if record.remoteID == nil {
                    self[key] = nil  // never reached the destination: nothing to send
                    continue
                }
                record.operation = .delete
            } else if change.before == nil {
                record.operation = record.remoteID == nil ? .create : .update
            } else if record.operation == nil {
                record.operation = .update
            }
            record.changedSinceAttempt = true
            record.parked = false
            self[key] = record
        }
    }
}

/// An (entry, destination) pair.
public struct OutboxKey: Hashable, Sendable, Comparable {
    public var entryID: EntryID
    public var destination: SyncDestination

    public static func < (a: OutboxKey, b: OutboxKey) -> Bool {
        (a.entryID, a.destination) < (b.entryID, b.destination)
    }
}
