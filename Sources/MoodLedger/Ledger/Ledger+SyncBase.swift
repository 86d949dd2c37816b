import EventLog
import Platform

/// What a destination had of an entry when the two were last in step: the base of a three-way merge.
package struct SyncBase: Sendable, Equatable {
    /// The destination's revision of that version (0: not known).
    package var revision: UInt64
    /// That version (`nil`: not known — never in step, or the destination lost or deleted it).
    package var entry: MoodEntry?

    /// Creates a base.
    package init(revision: UInt64, entry: MoodEntry?) {
        self.revision = revision
        self.entry = entry
    }
}

extension Ledger {
    /// The base of each entry with `destination`, read from the log (`Specs/sync.md`, *Merging*): the version a
    /// successful send carried (the entry as it was at its `sync.attempted`: a send is built at the attempt), the
    /// version a pull applied or recorded (`remote.applied`), or the destination's version a merge took
    /// (`sync.merged`); forgotten by a deletion there, a re-queue, or another server. One pass over the records
    /// that may concern the ids (``forEachRecord(concerning:_:)``), decoding only theirs.
    /// - Parameters:
    ///   - ids: the entries.
    ///   - destination: the destination (`backend`).
    ///   - before: per id, a revision: the base as it was before the destination's version at that revision or later
    ///     (what the entry was in step with before this device's own change at that revision).
    /// - Returns: a base for every id (revision 0 and no version where none is known).
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event`.
    package func syncBases(
        of ids: Set<EntryID>, destination: SyncDestination = .backend, before: [EntryID: UInt64] = [:]
    ) throws -> [EntryID: SyncBase] {
        var bases = Dictionary(uniqueKeysWithValues: ids.map { ($0, SyncBase(revision: 0, entry: nil)) })
        guard !ids.isEmpty else { return bases }
        var frozen: Set<EntryID> = []
        var versions = EntriesState()
        var attempted: [EntryID: (operation: SyncOperation, entry: MoodEntry?)] = [:]
        var server: RemoteConfig?
        try forEachRecord(concerning: ids) { view in
            if view.type & LogFormat.safeToIgnoreBit != 0 { return true }
            if view.type == EventType.remoteConfigured.rawValue {
                guard case .remoteConfigured(let config) = try Self.decode(view).event,
                    config.destination == destination
                else { return true }
                if let server, !server.sameServer(as: config) {
                    for id in ids { bases[id] = SyncBase(revision: 0, entry: nil) }
                }
                server = config
                return true
            }
            if view.type == EventType.ledgerErased.rawValue {
                // The erased entries have no base any more (a later entry with the same id starts afresh).
                guard case .ledgerErased(let erasure) = try Self.decode(view).event else { return true }
                for id in Set(bases.keys).union(attempted.keys) where !erasure.keeps(versions[id]) {
                    bases[id] = SyncBase(revision: 0, entry: nil)
                    attempted[id] = nil
                }
                _ = versions.removeAll(keptBy: erasure)
                return true
            }
            guard let id = EventCodec.entryID(inPayload: view.payload), ids.contains(id), !frozen.contains(id) else {
                return true
            }
            let event = try Self.decode(view).event
            if let limit = before[id] {
                let revision: UInt64?
                switch event {
                case .syncSucceeded(_, destination, _, let value): revision = value
                case .remoteApplied(let change) where change.origin == destination: revision = change.revision
                case .syncMerged(let merge) where merge.destination == destination: revision = merge.serverRevision
                default: revision = nil
                }
                if let revision, revision >= limit {
                    frozen.insert(id)
                    return true
                }
            }
            var ignored = EntryChange.Discarded()
            _ = versions.apply(event, at: 0, into: &ignored)
            switch event {
            case .syncAttempted(_, destination, let operation, _):
                attempted[id] = (operation, versions[id])
            case .syncSucceeded(_, destination, _, let revision):
                let sent = attempted.removeValue(forKey: id)
                if sent?.operation == .delete {
                    bases[id] = SyncBase(revision: 0, entry: nil)
                } else {
                    bases[id] = SyncBase(
                        revision: max(bases[id]?.revision ?? 0, revision), entry: sent?.entry ?? versions[id])
                }
            case .remoteApplied(let change) where change.origin == destination:
                bases[id] =
                    change.entry == nil
                    ? SyncBase(revision: 0, entry: nil) : SyncBase(revision: change.revision, entry: change.entry)
            case .syncMerged(let merge) where merge.destination == destination:
                bases[id] = SyncBase(revision: merge.serverRevision, entry: merge.theirs)
            case .syncRequeued(_, destination, _), .entryErased:
                bases[id] = SyncBase(revision: 0, entry: nil)
            default: break
            }
            return true
        }
        return bases
    }

    /// When each entry's current streak of attempts with `destination` began (the first `sync.attempted` since the
    /// record was last in step: a success, a merge, a pulled version, a re-queue, a release by the user, another
    /// server or an erasure), in ms since 1970; absent for an entry with no attempt since. Read from the published
    /// state's ``FailureStreaks``.
    /// - Parameters:
    ///   - ids: the entries.
    ///   - destination: the destination (`backend`).
    package func failingSince(of ids: Set<EntryID>, destination: SyncDestination = .backend) throws -> [EntryID: Int64]
    {
        try failureStreaks(of: ids, destination: destination).mapValues(\.wallMilliseconds)
    }

    /// Where a streak of failed attempts began: the wall time of its first attempt and, when the run that made it
    /// recorded one with the batch's carrier (`{"boot", "boot_ms"}`, `Specs/sync.md`, *Bounded work per run*), the
    /// time since boot then — a clock no wall-clock jump moves.
    package struct StreakStart: Sendable, Equatable {
        /// Ms since 1970, as recorded.
        package var wallMilliseconds: Int64
        /// The boot and the ms since it, if recorded.
        package var boot: BootClock?

        /// How long the streak has lasted at `now` (wall ms) and `bootNow`: by the boot clock when both readings are
        /// of the same boot, else by the wall clock.
        package func elapsed(now: Int64, bootNow: BootClock?) -> Int64 {
            if let boot, let bootNow, boot.boot == bootNow.boot {
                return max(0, bootNow.milliseconds - boot.milliseconds)
            }
            return now - wallMilliseconds
        }
    }

    /// Calls `body` for every record that may concern `ids`, in order, through ``lastSeq``: the blocks the last
    /// published state's index says may name one, the events about every entry, and every record past that state
    /// (`Specs/ledger.md`, *An entry's records*) — or, for more than 64 ids or a damaged snapshot, every record.
    /// - Throws: `EventLogError`, or what `body` throws.
    func forEachRecord(concerning ids: Set<EntryID>, _ body: (RecordView) throws -> Bool) throws {
        try indexedHistory().forEachRecord(concerning: Array(ids), through: lastSeq, body)
    }

    /// `failingSince(of:destination:)` with each streak's boot clock reading, as the published state's
    /// ``FailureStreaks`` has them.
    package func failureStreaks(
        of ids: Set<EntryID>, destination: SyncDestination = .backend
    ) throws -> [EntryID: StreakStart] {
        guard !ids.isEmpty else { return [:] }
        let streaks = read { $0.failureStreaks.streaks }
        return streaks.filter { ids.contains($0.key) }
    }

    /// ``failureStreaks(of:destination:)`` read from the log instead of the fold: one pass over the records that may
    /// concern the ids (the tests' oracle for ``FailureStreaks``).
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event`.
    ///
    /// Long because one pass reads three kinds of record in order: the attempts that start streaks, the carriers
    /// that date them by the boot clock, and what ends a streak.
    package func failureStreaksFromLog(
        of ids: Set<EntryID>, destination: SyncDestination = .backend
    ) throws -> [EntryID: StreakStart] {
        var since: [EntryID: StreakStart] = [:]
        guard !ids.isEmpty else { return since }
        let resets: Set<UInt16> = [
            EventType.syncSucceeded.rawValue, EventType.syncMerged.rawValue, EventType.syncRequeued.rawValue,
            EventType.syncReleased.rawValue, EventType.remoteApplied.rawValue, EventType.entryErased.rawValue
        ]
        // Streaks begun in the batch being read: dated by its carrier, the batch's last record.
        var begun: [EntryID] = []
        // Batches left before their end where the records read skip ahead: their carriers are read afterwards.
        var unfinished: [(next: UInt64, ids: [EntryID])] = []
        var previous: UInt64?
        func date(_ ids: [EntryID], by view: RecordView) {
            if let json = try? JSONParser.parse(String(decoding: view.payload, as: UTF8.self)),
                let boot = json["boot"]?.stringValue, let milliseconds = json["boot_ms"]?.intValue
            {
                for id in ids { since[id]?.boot = BootClock(boot: boot, milliseconds: Int64(milliseconds)) }
            }
        }
        try forEachRecord(concerning: ids) { view in
            if let last = previous, view.seq != last + 1, !begun.isEmpty {
                unfinished.append((last + 1, begun))
                begun.removeAll()
            }
            previous = view.seq
            defer { if !view.continuesBatch { begun.removeAll() } }
            if view.type == Attachment.Kind.carrier.recordType {
                if !begun.isEmpty { date(begun, by: view) }
                return true
            }
            if view.type & LogFormat.safeToIgnoreBit != 0 { return true }
            if view.type == EventType.remoteConfigured.rawValue || view.type == EventType.ledgerErased.rawValue {
                since.removeAll()
                return true
            }
            let attempted = view.type == EventType.syncAttempted.rawValue
            guard attempted || resets.contains(view.type), let id = EventCodec.entryID(inPayload: view.payload),
                ids.contains(id)
            else { return true }
            if attempted {
                if since[id] == nil {
                    since[id] = StreakStart(wallMilliseconds: view.recordedAt / 1000)
                    begun.append(id)
                }
            } else {
                since[id] = nil
            }
            return true
        }
        if let last = previous, !begun.isEmpty, last < lastSeq { unfinished.append((last + 1, begun)) }
        for batch in unfinished {
            try eventLog.forEach(from: batch.next, through: lastSeq) { view in
                if view.type == Attachment.Kind.carrier.recordType {
                    date(batch.ids.filter { since[$0] != nil }, by: view)
                }
                return view.continuesBatch
            }
        }
        return since
    }

    /// The versions each entry's attempts with `destination` carried since it was last in step with it (the entry as
    /// it was at each `sync.attempted`: a send is built at its attempt), oldest first, each distinct version once;
    /// forgotten by a success, a merge, a pulled version, a re-queue, another server or an erasure. What a create
    /// whose answer was lost may have made on the server (`Specs/sync.md`, *A create whose answer was lost*). One pass
    /// over the records that may concern the ids, decoding only theirs.
    /// - Throws: `EventLogError` or ``MoodError`` `corrupt_event`.
    package func attemptedVersions(
        of ids: Set<EntryID>, destination: SyncDestination = .backend
    ) throws -> [EntryID: [MoodEntry]] {
        var sent: [EntryID: [MoodEntry]] = [:]
        guard !ids.isEmpty else { return sent }
        var versions = EntriesState()
        try forEachRecord(concerning: ids) { view in
            if view.type & LogFormat.safeToIgnoreBit != 0 { return true }
            if view.type == EventType.remoteConfigured.rawValue || view.type == EventType.ledgerErased.rawValue {
                if case .ledgerErased(let erasure) = try Self.decode(view).event {
                    _ = versions.removeAll(keptBy: erasure)
                }
                sent.removeAll()
                return true
            }
            guard let id = EventCodec.entryID(inPayload: view.payload), ids.contains(id) else { return true }
            let event = try Self.decode(view).event
            var ignored = EntryChange.Discarded()
            _ = versions.apply(event, at: 0, into: &ignored)
            switch event {
            case .syncAttempted(_, destination, _, _):
                if let version = versions[id], !(sent[id] ?? []).contains(version) {
                    sent[id, default: []].append(version)
                }
            case .syncSucceeded(_, destination, _, _), .syncRequeued(_, destination, _), .entryErased:
                sent[id] = nil
            case .remoteApplied(let change) where change.origin == destination:
                sent[id] = nil
            case .syncMerged(let merge) where merge.destination == destination:
                sent[id] = nil
            default: break
            }
            return true
        }
        return sent
    }
}
