import MoodLedger

/// What a push or pull did.
public struct HealthKitSyncReport: Sendable, Equatable {
    public var saved = 0
    public var replaced = 0
    public var deleted = 0
    public var failed = 0
    public var pulled = 0
    public var skippedCustomWords = 0
    /// Words HealthKit cannot carry that were sent as their documented nearest Apple word (`energetic` → excited).
    public var translatedWords = 0
    /// Each item that failed: the entry and why.
    public var failures: [(entryID: EntryID, error: String)] = []

    public static func == (a: HealthKitSyncReport, b: HealthKitSyncReport) -> Bool {
        a.saved == b.saved && a.replaced == b.replaced && a.deleted == b.deleted && a.failed == b.failed
            && a.pulled == b.pulled && a.skippedCustomWords == b.skippedCustomWords
            && a.translatedWords == b.translatedWords
            && a.failures.map(\.entryID) == b.failures.map(\.entryID)
            && a.failures.map(\.error) == b.failures.map(\.error)
    }

    public var json: JSONValue {
        .object([
            ("saved", .int(Int64(saved))), ("replaced", .int(Int64(replaced))), ("deleted", .int(Int64(deleted))),
            ("failed", .int(Int64(failed))), ("pulled", .int(Int64(pulled))),
            ("skipped_custom_words", .int(Int64(skippedCustomWords))),
            ("translated_words", .int(Int64(translatedWords))),
            (
                "failures",
                .array(
                    failures.map {
                        .object([
                            ("entry_id", .string($0.entryID.description)),
                            ("error", .string($0.error))
                        ])
                    })
            )
        ])
    }
}

extension Ledger {
    /// Sends the outbox's `healthkit` items that are due to a health store, recording sync.attempted, then
    /// succeeded (with the sample id) or failed. Samples are immutable: an update deletes the old sample and saves a
    /// new one; the ledger remembers which sample belongs to which entry, so nothing is duplicated. The `async` form
    /// awaits the store's own `async` calls (HealthKit's) and begins no new item once its task is cancelled.
    /// - Parameters:
    ///   - store: the health store.
    ///   - now: milliseconds since 1970; items whose retry time is later are left for later.
    /// - Throws: `EventLogError` if the log cannot be written.
    public func pushToHealthKit(_ store: any HealthStore, now: Int64) throws -> HealthKitSyncReport {
        var report = HealthKitSyncReport()
        // Checked before any attempt is recorded: a store that cannot be used fails the push with nothing appended.
        // Denied authorization is the per-item failure HealthKit gives (recorded and retried), not a bad store. The
        // store's samples are not read: a push costs what it sends.
        do { try store.checkWritable() } catch let error as HealthStoreError where error.code == .authorizationDenied {}
        for item in dueHealthKitItems(now: now) {
            guard let step = try beginHealthKitItem(item, report: &report) else { continue }
            var failure: HealthStoreError?
            do {
                switch step {
                case .delete(let old):
                    if let old { try Self.deleteIgnoringMissing(old, in: store) }
                case .save(let sample, let old):
                    try store.save(sample)
                    if let old { try Self.deleteIgnoringMissing(old, in: store) }
                }
            } catch let error as HealthStoreError {
                failure = error
            }
            try finishHealthKitItem(item, step, failure: failure, report: &report)
        }
        return report
    }

    /// The `healthkit` items due at `now`.
    func dueHealthKitItems(now: Int64) -> [OutboxItem] {
        state.outboxItems(destination: .healthkit).filter {
            $0.status == "pending" && ($0.nextAttemptAt ?? .min) <= now && $0.operation != nil
        }
    }

    /// What one push item does in the store: delete the sample saved before, or save a new one (deleting the one it
    /// replaces).
    enum HealthKitStep: Sendable {
        case delete(EntryID?)
        case save(StateOfMindSample, replacing: EntryID?)
    }

    /// Records the item's attempt and says what to do in the store; `nil` when the item failed before the store
    /// (no valence: recorded as a failure that is not retried).
    func beginHealthKitItem(_ item: OutboxItem, report: inout HealthKitSyncReport) throws -> HealthKitStep? {
        guard let operation = item.operation else { return nil }
        try recordSyncAttempt(item.entryID, to: .healthkit, operation: operation)
        let old = item.remoteID.flatMap(EntryID.init)
        if operation == .delete { return .delete(old) }
        guard let entry = self.entry(item.entryID),
            let sample = StateOfMindSample(
                entry: entry, uuid: options.newID(),
                skippedCustomWords: &report.skippedCustomWords, translatedWords: &report.translatedWords)
        else {
            try recordSyncFailure(
                item.entryID, to: .healthkit, SyncFailure(error: "HealthKit needs a valence", retryable: false))
            report.failed += 1
            report.failures.append((item.entryID, "HealthKit needs a valence"))
            return nil
        }
        return .save(sample, replacing: old)
    }

    /// Records the item's outcome: the sample it saved, or the store's failure (denied authorization: 403,
    /// retried).
    func finishHealthKitItem(
        _ item: OutboxItem, _ step: HealthKitStep, failure: HealthStoreError?, report: inout HealthKitSyncReport
    ) throws {
        if let failure {
            try recordSyncFailure(
                item.entryID, to: .healthkit,
                SyncFailure(
                    status: failure.code == .authorizationDenied ? 403 : nil, error: failure.message,
                    retryable: failure.retryable))
            report.failed += 1
            report.failures.append((item.entryID, failure.message))
            return
        }
        switch step {
        case .delete:
            try recordSyncSuccess(item.entryID, to: .healthkit, remoteID: item.remoteID ?? "deleted")
            report.deleted += 1
        case .save(let sample, let old):
            if old == nil { report.saved += 1 } else { report.replaced += 1 }
            try recordSyncSuccess(item.entryID, to: .healthkit, remoteID: sample.uuid.description)
        }
    }

    static func deleteIgnoringMissing(_ uuid: EntryID, in store: any HealthStore) throws {
        do { try store.delete(uuid) } catch let error as HealthStoreError where error.code == .notFound {}
    }

    static func deleteIgnoringMissing(_ uuid: EntryID, in store: any HealthStore) async throws {
        do { try await store.delete(uuid) } catch let error as HealthStoreError where error.code == .notFound {}
    }

    /// Reads what changed in the health store since the anchor the last pull kept (an anchored query): samples the
    /// ledger does not know (neither pushed by it nor pulled before) become read-only `healthkit` entries with source
    /// id `HK-MOOD-<uuid>`; samples deleted there delete the entries pulled from them; then the new anchor is kept in
    /// the log (a record of type `0x8004`). The import is idempotent, so a crash between the two only reads the same
    /// changes again.
    /// - Throws: ``HealthStoreError`` or ledger errors.
    public func pullFromHealthKit(_ store: any HealthStore) throws -> HealthKitSyncReport {
        let changes = try store.changes(after: try keptHealthKitAnchor())
        return try applyHealthKitChanges(changes)
    }

    /// The anchor the last pull kept (the last `healthkit.anchored`), if any: HealthKit's sync progress.
    func keptHealthKitAnchor() throws -> [UInt8]? { read { $0.outbox.progress(.healthkit).anchor } }

    /// Applies what an anchored query found: the samples the ledger does not know as new entries, the deletions,
    /// and the new anchor with them.
    func applyHealthKitChanges(_ changes: HealthChanges) throws -> HealthKitSyncReport {
        var report = HealthKitSyncReport()
        let known = Set(
            state.outbox.records.filter { $0.key.destination == .healthkit }.compactMap { $0.value.remoteID })
        let current = state.entries
        /// A sample this ledger saved: its external id is one the outbox recorded for a push (or names an entry here,
        /// for a push whose success was never recorded). HealthKit's own uuid is never that id.
        func ours(_ sample: StateOfMindSample) -> Bool {
            if known.contains(sample.uuid.description) { return true }
            // A copy a MoodLedger pushed (this one or another device's): the entry is that ledger's, and reaches
            // another device through the backend, never as a second entry from Health.
            if sample.ledgerEntryID != nil { return true }
            guard let external = sample.externalID else { return false }
            return known.contains(external.description) || current[external] != nil
        }
        var plan = ImportPlan(format: .healthkit)
        for (index, sample) in changes.added.enumerated() where !ours(sample) {
            plan.rows.append(
                ImportRow(
                    line: index + 1,
                    draft: MoodDraft(
                        valence: sample.consistentScore == nil ? sample.valence : nil, score: sample.consistentScore,
                        labels: sample.labels.map(\.name), associations: sample.associations.map(\.name),
                        notes: sample.notes, kind: sample.kind, loggedAt: sample.date, source: .healthkit,
                        sourceID: "HK-MOOD-\(sample.uuid)",
                        id: sample.uuid, suggestLabels: false)))
        }
        report.pulled = try importPlan(plan).created
        // Deletions there remove what was pulled from those samples; the anchor is kept with them, in one batch.
        _ = try commit { state, _ in
            let events = changes.deleted.compactMap { uuid -> MoodEvent? in
                guard let entry = state.entries[uuid], entry.source == .healthkit else { return nil }
                return .deleted(uuid)
            }
            report.deleted = events.count
            return (events + [.healthKitAnchored(changes.anchor)], .none, false)
        }
        return report
    }
}
