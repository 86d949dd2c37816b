/// The outbox's record of one (entry, destination) pair once anything happened between them.
///
/// Entries with no such record are *implicitly* pending a create at every destination they may go to; that keeps
/// the state small when nothing has been synced yet. See `Specs/ledger.md`.
package struct OutboxRecord: Sendable, Equatable {
    // The stored fields are ordered widest first and the counts are 32-bit, so the record has no padding: a large
    // ledger holds one for every entry that ever synced.

    /// The destination's id once a send succeeded.
    package var remoteID: String?
    /// The last failure's text.
    package var lastError: String?
    /// The latest attempt's `Idempotency-Key` until a success: a retry of the same version of the entry reuses it,
    /// because after a timeout, a dropped connection or a crash the server may have applied it.
    package var idempotencyKey: String?
    /// The destination's revision of the entry's last change it acknowledged or sent us (0 = unknown).
    package var revision: UInt64 = 0
    /// When to try again (ms), after a retryable failure.
    package var nextAttemptAt: Int64?
    private var storedStatus: Int32?
    private var storedAttempts: Int32 = 0
    /// What is pending, or `nil` when the destination is up to date.
    package var operation: SyncOperation?
    /// A non-retryable failure parked the item until the entry changes again.
    package var parked = false
    /// The entry changed after the latest attempt began (a success then leaves an update pending).
    package internal(set) var changedSinceAttempt = false
    /// An attempt began and no outcome was recorded (a crash in between): the next send reuses its key.
    package var inFlight = false

    /// Attempts since the last success (saturates at 2³¹ − 1, the most a snapshot stores).
    package var attempts: Int {
        get { Int(storedAttempts) }
        set { storedAttempts = Int32(clamping: newValue) }
    }

    /// The last failure's status (an HTTP status: the decoders accept 1…999).
    package var lastStatus: Int? {
        get { storedStatus.map(Int.init) }
        set { storedStatus = newValue.map { Int32(clamping: $0) } }
    }

    /// The destination acknowledged a version (a send's success, or a merge with its version): its id and revision
    /// are known, and no attempt, error, key or retry time is left over.
    mutating func inStep(remoteID: String?, revision: UInt64) {
        self.remoteID = remoteID
        self.revision = max(self.revision, revision)
        idempotencyKey = nil
        inFlight = false
        attempts = 0
        lastError = nil
        lastStatus = nil
        nextAttemptAt = nil
        parked = false
    }

    /// A record: what is pending, and what is known of the destination.
    init(operation: SyncOperation? = nil, remoteID: String? = nil, revision: UInt64 = 0) {
        self.operation = operation
        self.remoteID = remoteID
        self.revision = revision
    }
}

/// Where syncing with one destination stands as a whole: its server, the pull cursor and the latest outcomes.
public struct SyncProgress: Sendable, Equatable {
    /// The configured server (from `remote.configured`).
    public var remote: RemoteConfig?
    /// Where the next pull starts.
    public var cursor: UInt64 = 0
    /// The server's revision at the latest pull.
    public var serverRevision: UInt64 = 0
    /// When the latest pull finished (ms).
    public var lastPullAt: Int64?
    /// When the latest send succeeded (ms).
    public var lastSuccessAt: Int64?
    /// When the latest send failed (ms), and why.
    public var lastErrorAt: Int64?
    public var lastError: String?
    /// The entry whose failure is the last error (an erasure of it replaces the text by `(erased)`).
    public var lastErrorEntry: EntryID?
    /// The identity of the server's account this device syncs with, once the server named it (`sync.pulled` v2).
    public var account: String?
    /// HealthKit's only: the anchor of the last pull (`healthkit.anchored`), where the next anchored query starts.
    public var anchor: [UInt8]?

    package init() {}
}

/// Where each entry stands with each destination. A pure fold; replaying it never sends anything.
public struct OutboxState: Sendable, Equatable {
    /// The records of one entry: one slot per destination (by ``SyncDestination`` code).
    ///
    /// The backend's record is held inline; HealthKit's, which few entries have, in a box of its own, so a pair
    /// costs one record and a reference: a large ledger holds a pair for every entry that ever synced.
    struct Pair: Sendable, Equatable, EntryKeyed {
        /// A record held out of line (immutable: a change replaces the box).
        final class Boxed: Sendable {
            let record: OutboxRecord
            init(_ record: OutboxRecord) { self.record = record }
        }

        var id: EntryID
        private var first: OutboxRecord?
        private var second: Boxed?

        init(id: EntryID, records: (OutboxRecord?, OutboxRecord?)) {
            self.id = id
            self.records = records
        }

        /// Both records, by destination code.
        var records: (OutboxRecord?, OutboxRecord?) {
            get { (first, second?.record) }
            set {
                first = newValue.0
                second = newValue.1.map(Boxed.init)
            }
        }

        subscript(destination: SyncDestination) -> OutboxRecord? {
            get { destination.code == 0 ? first : second?.record }
            set { if destination.code == 0 { first = newValue } else { second = newValue.map(Boxed.init) } }
        }

        var isEmpty: Bool { first == nil && second == nil }

        /// How many destinations have a record.
        var count: Int { (first == nil ? 0 : 1) + (second == nil ? 0 : 1) }

        static func == (a: Pair, b: Pair) -> Bool {
            a.id == b.id && a.first == b.first && a.second?.record == b.second?.record
        }
    }

    /// Entries whose sync history changed since the snapshot (all of them without one), by id. One lookup answers
    /// both destinations, and entries without history (most, during replay) cost one cheap probe. A pair emptied
    /// here while the snapshot holds records for its entry stays, empty, to hide them.
    private var pairs = IdentifiedTable<Pair>()
    /// The snapshot's records, read on demand for the entries ``pairs`` does not hold.
    private var image: SnapshotImage?
    /// Which entries the snapshot may hold records for, built once a replay has asked about
    /// `filterAfterAsks` entries (most entries have no sync history: a clear bit answers for them without a
    /// search of the mapped index, whose probes miss the caches; a short tail does not pay for building it).
    private var imageFilter: IDFilter?
    /// How many entries were asked about before the filter was built.
    private var imageAsks = 0
    /// After how many questions the filter is built (4,096; the tests lower it to 0).
    var filterAfterAsks = 4096
    /// Per destination (by code): the server, the cursor, the latest outcomes.
    public private(set) var progress: [SyncProgress] = [SyncProgress(), SyncProgress()]

    package init() {}

    /// The state a snapshot holds: its records stay in the mapped file until asked for.
    init(image: SnapshotImage) {
        self.image = image
        progress = image.progress
    }

    /// One entry's records (both destinations), if it has sync history.
    private func pair(_ id: EntryID) -> Pair? {
        if let position = pairs.position(of: id) {
            let pair = pairs[position: position]
            return pair.isEmpty ? nil : pair
        }
        return imageRecords(id).map { Pair(id: id, records: $0) }
    }

    /// The snapshot's records of an entry, read unless the filter rules them out.
    private func imageRecords(_ id: EntryID) -> (OutboxRecord?, OutboxRecord?)? {
        imageMayHold(id) ? image?.outboxPair(of: id) : nil
    }

    /// False when the snapshot certainly holds no records for the entry.
    @inline(__always)
    private func imageMayHold(_ id: EntryID) -> Bool { image != nil && imageFilter?.mayContain(id) != false }

    /// Whether the snapshot holds records for the entry.
    private func imageHolds(_ id: EntryID) -> Bool { imageMayHold(id) && image?.outboxPosition(of: id) != nil }

    /// Counts a question about the snapshot's records, and builds the filter once there were enough.
    private mutating func askedImage() {
        guard imageFilter == nil, let image else { return }
        imageAsks += 1
        if imageAsks >= filterAfterAsks { imageFilter = image.outboxFilter() }
    }

    /// The record of one pair, if it has sync history.
    package func record(_ key: OutboxKey) -> OutboxRecord? {
        pair(key.entryID)?[key.destination]
    }

    /// Every entry with records, with its records, ordered by entry id.
    var pairsByID: [Pair] {
        var result: [Pair] = []
        image?.forEachOutboxPair { id, records in
            if pairs.position(of: id) == nil { result.append(Pair(id: id, records: records)) }
        }
        result.append(contentsOf: pairs.values.lazy.filter { !$0.isEmpty })
        result.sort { $0.id < $1.id }
        return result
    }

    /// Every record, ordered by entry id then destination.
    package var records: [(key: OutboxKey, value: OutboxRecord)] {
        pairsByID.flatMap { pair in
            SyncDestination.allCases.sorted().compactMap { destination in
                pair[destination].map { (OutboxKey(entryID: pair.id, destination: destination), $0) }
            }
        }
    }

    /// How many pairs have records.
    package var recordCount: Int {
        // Counted where they are: merging and sorting every pair (``pairsByID``) held a copy of the whole outbox.
        var total = pairs.values.reduce(0) { $0 + $1.count }
        image?.forEachOutboxPair { id, records in
            if pairs.position(of: id) == nil { total += Pair(id: id, records: records).count }
        }
        return total
    }

    /// Sets or removes one pair's record.
    private subscript(key: OutboxKey) -> OutboxRecord? {
        get { record(key) }
        set {
            if let position = pairs.position(of: key.entryID) {
                pairs[position: position][key.destination] = newValue
                if pairs[position: position].isEmpty && !imageHolds(key.entryID) {
                    pairs.remove(key.entryID)
                }
            } else {
                let known = imageRecords(key.entryID)
                guard newValue != nil || known != nil else { return }
                var pair = Pair(id: key.entryID, records: known ?? (nil, nil))
                pair[key.destination] = newValue
                pairs.set(pair)
            }
        }
    }

    /// The entries `destination` holds a copy of (their record there has a remote id), ordered by id.
    package func entriesHeld(at destination: SyncDestination) -> [EntryID] {
        var held: [EntryID] = []
        image?.forEachOutboxPair { id, records in
            if pairs.position(of: id) == nil, Pair(id: id, records: records)[destination]?.remoteID != nil {
                held.append(id)
            }
        }
        for pair in pairs.values where pair[destination]?.remoteID != nil { held.append(pair.id) }
        return held.sorted()
    }

    /// Drops every entry's records but the kept entries' (an erasure of every entry, `Specs/erasure.md`); each
    /// destination's progress stays, with a last error that came from an erased entry read as `(erased)`.
    mutating func removeAll(keeping kept: Set<EntryID>) {
        let keptPairs = kept.compactMap { pair($0) }
        pairs = IdentifiedTable<Pair>()
        image = nil
        imageFilter = nil
        imageAsks = 0
        for pair in keptPairs { pairs.set(pair) }
        for slot in progress.indices {
            if let id = progress[slot].lastErrorEntry, !kept.contains(id), progress[slot].lastError != nil {
                progress[slot].lastError = Self.erasedText
            }
        }
    }

    /// Starts loading the index slot a lookup of `id` reads (a hint a replay gives a few events ahead).
    @inline(__always)
    func prefetch(_ id: EntryID) {
        pairs.prefetch(id)
        if imageMayHold(id) { image?.prefetchOutbox(id) }
    }

    /// Starts loading the pair of `id` that the slot ``prefetch(_:)`` loaded names (the lookup's second read).
    @inline(__always)
    func prefetchValue(_ id: EntryID) { pairs.prefetchValue(id) }

    /// Where the pairs' table adds its next pairs (its newest chunk): see ``EntriesState/growingStorage``.
    var growingStorage: (address: UInt, bytes: Int)? { pairs.values.newestChunkStorage }

    /// Whether an entry has any sync history.
    private func hasHistory(_ id: EntryID) -> Bool {
        if let position = pairs.position(of: id) { return !pairs[position: position].isEmpty }
        return imageHolds(id)
    }

    /// Where syncing with `destination` stands.
    public func progress(_ destination: SyncDestination) -> SyncProgress { progress[Int(destination.code)] }

    /// Equal when the progress and every record are (wherever each side keeps them).
    public static func == (a: OutboxState, b: OutboxState) -> Bool {
        guard a.progress == b.progress else { return false }
        return a.pairsByID == b.pairsByID
    }

    /// The last error's text once its entry is erased.
    static let erasedText = "(erased)"

    /// Backoff after the n-th failed attempt: 30 s × 2^(n−1), at most 6 hours.
    package static func backoffMilliseconds(afterAttempts attempts: Int) -> Int64 {
        let exponent = min(max(attempts - 1, 0), 20)
        return min(30_000 << Int64(exponent), 6 * 3_600_000)
    }

    /// Whether entries from `source` go to `destination` (never back where they came from).
    package static func isEligible(_ source: MoodSource, for destination: SyncDestination) -> Bool {
        source != destination.originSource
    }

    /// Applies one event with what it did to the entry (from the entries projection) and whether the entry exists
    /// after it. An attempt or failure for an entry that is gone and has no record changes nothing; a success for
    /// one leaves a delete pending (the destination has what is gone here).
    ///
    /// Long because it is the fold's table: one case per event type, each a few lines (`Specs/ledger.md`, *Outbox*).
    mutating func apply(_ event: MoodEvent, change: EntryChange.Kind?, at time: Int64, entryExists: Bool = true) {
        switch event {
        case .created, .updated, .labelsEdited, .associationsEdited, .tagsEdited, .deleted:
            localChange(of: event.entryID, change)
        case .syncAttempted(let id, let destination, let operation, let idempotencyKey):
            let key = OutboxKey(entryID: id, destination: destination)
            if !entryExists && self[key] == nil { return }
            var record = self[key] ?? OutboxRecord(operation: .create)
            record.attempts += 1
            record.changedSinceAttempt = false
            record.idempotencyKey = idempotencyKey.isEmpty ? nil : idempotencyKey
            record.inFlight = true
            if record.operation == nil { record.operation = operation }
            self[key] = record
        case .syncSucceeded(let id, let destination, let remoteID, let revision):
            let key = OutboxKey(entryID: id, destination: destination)
            progress[Int(destination.code)].lastSuccessAt = time
            var record = self[key] ?? OutboxRecord(operation: .create)
            record.inStep(remoteID: remoteID, revision: revision)
            if record.operation == .delete && !record.changedSinceAttempt {
                self[key] = nil
                return
            }
            if !entryExists {
                // Delivered after it was deleted here: the destination now has it, so delete it there.
                record.operation = .delete
                record.changedSinceAttempt = false
                self[key] = record
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
            // Failures repeat the same few texts: a record shares the destination's last one when equal rather than
            // holding a decoded copy of its own.
            let text =
                progress[Int(destination.code)].lastError.flatMap { $0 == failure.error ? $0 : nil } ?? failure.error
            progress[Int(destination.code)].lastErrorAt = time
            progress[Int(destination.code)].lastError = text
            progress[Int(destination.code)].lastErrorEntry = id
            if !entryExists && self[key] == nil { return }
            var record = self[key] ?? OutboxRecord(operation: .create)
            record.lastError = text
            record.lastStatus = failure.status
            record.inFlight = false
            if failure.retryable {
                // Version 2 records the time the sender drew; version 1 keeps its own rule.
                record.nextAttemptAt =
                    failure.nextAttemptAt
                    ?? time + Self.backoffMilliseconds(afterAttempts: max(record.attempts, 1))
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
            } else if remote.conflict {
                // The local change stays pending; the remote revision is remembered so it is not pulled again.
                var record = self[key] ?? OutboxRecord(operation: .update)
                record.revision = max(record.revision, remote.revision)
                self[key] = record
            } else {
                let old = self[key]
                self[key] = OutboxRecord(
                    operation: nil, remoteID: remote.remoteID ?? old?.remoteID,
                    revision: max(old?.revision ?? 0, remote.revision))
            }
            if let change { entryChanged(remote.entryID, change, except: remote.origin) }
        case .syncMerged(let merge):
            if let change { entryChanged(merge.entryID, change, except: merge.destination) }
            // In step with the destination's version at its revision: what is pending is the difference, sent with
            // that revision as its base. Not a failure: attempts and errors start again.
            let key = OutboxKey(entryID: merge.entryID, destination: merge.destination)
            var record = self[key] ?? OutboxRecord()
            record.inStep(remoteID: merge.remoteID ?? record.remoteID, revision: merge.serverRevision)
            if merge.merged == nil {
                record.operation = merge.theirs == nil ? nil : .delete
            } else if let theirs = merge.theirs, let merged = merge.merged, ThreeWayMerge.sameContent(merged, theirs) {
                record.operation = record.changedSinceAttempt && record.operation != nil ? .update : nil
            } else {
                record.operation = merge.theirs == nil ? .create : .update
            }
            if record.operation == nil { record.changedSinceAttempt = false }
            self[key] = record.operation == nil && merge.merged == nil ? nil : record
        case .conflictResolved, .requestKeyed, .editReplaced:
            break
        case .healthKitAnchored(let anchor):
            progress[Int(SyncDestination.healthkit.code)].anchor = anchor
        case .syncPulled(let pull):
            var current = progress[Int(pull.destination.code)]
            current.cursor = pull.cursor
            current.serverRevision = pull.serverRevision
            current.lastPullAt = time
            if let account = pull.account { current.account = account }
            progress[Int(pull.destination.code)] = current
        case .remoteConfigured(let config):
            let slot = Int(config.destination.code)
            if config.url.isEmpty {
                // The backend removed: what was delivered there is forgotten, as for another server; no remote.
                for pair in pairsByID where pair[config.destination] != nil {
                    self[OutboxKey(entryID: pair.id, destination: config.destination)] = nil
                }
                progress[slot] = SyncProgress()
                return
            }
            if let old = progress[slot].remote, !old.sameServer(as: config) {
                // Another server: nothing was sent there yet. Every entry is pending a create again.
                for pair in pairsByID where pair[config.destination] != nil {
                    self[OutboxKey(entryID: pair.id, destination: config.destination)] = nil
                }
                progress[slot] = SyncProgress()
            }
            progress[slot].remote = config
        case .entryErased(let id, _):
            // Gone everywhere it is known: the command delivered deletes first (or was told not to care).
            for destination in SyncDestination.allCases {
                self[OutboxKey(entryID: id, destination: destination)] = nil
                if progress[Int(destination.code)].lastErrorEntry == id {
                    progress[Int(destination.code)].lastError = Self.erasedText
                }
            }
        case .redacted(let id, let redaction):
            // What the redacted sync events did to the destination's times, without their data.
            guard let destination = redaction.destination else { break }
            let slot = Int(destination.code)
            if redaction.type == .syncSucceeded { progress[slot].lastSuccessAt = time }
            if redaction.type == .syncFailed {
                progress[slot].lastErrorAt = time
                progress[slot].lastError = Self.erasedText
                progress[slot].lastErrorEntry = id
            }
        case .syncReleased(let id, let destination):
            // Released by the user: due now, attempts and the failure streak start again; the last error stays for
            // `sync explain` until the next outcome replaces it.
            let key = OutboxKey(entryID: id, destination: destination)
            guard var record = self[key], record.operation != nil else { return }
            record.parked = false
            record.attempts = 0
            record.nextAttemptAt = nil
            record.inFlight = false
            self[key] = record
        case .syncRequeued(let id, let destination, _):
            // The destination lost what it acknowledged: create it there again, from scratch.
            self[OutboxKey(entryID: id, destination: destination)] = OutboxRecord(operation: .create)
        case .ledgerErased:
            break  // applied by `LedgerState` to all projections at once (``removeAll(keeping:)``)
        }
    }

    /// Applies a local change to an entry (an entry event with what it did to the entry, if anything).
    mutating func localChange(of id: EntryID, _ change: EntryChange.Kind?) {
        if let change { entryChanged(id, change, except: nil) }
    }

    /// An entry was created, changed or deleted locally (or from `except`): update the other destinations.
    private mutating func entryChanged(_ id: EntryID, _ change: EntryChange.Kind, except: SyncDestination?) {
        askedImage()
        guard hasHistory(id) else { return }  // no history: the implicit pending create covers any change
        for destination in SyncDestination.allCases where destination != except {
            let key = OutboxKey(entryID: id, destination: destination)
            guard var record = self[key] else { continue }  // implicit: a pending create covers any change
            if change == .deleted {
                // Never acknowledged and no attempt since (no key): it never reached the destination, nothing to
                // send. A backend create attempted and not acknowledged may still have made the record (its answer
                // lost): a delete without a remote id stays pending, and the sender looks for that record.
                if record.remoteID == nil && (destination != .backend || record.idempotencyKey == nil) {
                    self[key] = nil
                    continue
                }
                record.operation = .delete
            } else if change == .created {
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

    /// Creates a key.
    public init(entryID: EntryID, destination: SyncDestination) {
        self.entryID = entryID
        self.destination = destination
    }

    public static func < (a: OutboxKey, b: OutboxKey) -> Bool {
        (a.entryID, a.destination) < (b.entryID, b.destination)
    }
}
