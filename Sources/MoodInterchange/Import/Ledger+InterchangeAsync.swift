import MoodLedger

/// The interchange commands in their `async` form: each runs the synchronous one off the caller's executor.
extension Ledger {
    /// Imports a parsed file without blocking the caller's executor. See ``importPlan(_:dryRun:updateExisting:)``.
    public func importPlan(
        _ plan: ImportPlan, dryRun: Bool = false, updateExisting: Bool = false
    ) async throws -> ImportReport {
        try await offload { try self.importPlan(plan, dryRun: dryRun, updateExisting: updateExisting) }
    }

    /// Sends the due HealthKit items, awaiting the store's `async` calls (HealthKit's own, with no thread waiting)
    /// and writing the log off the caller's executor. A cancelled task begins no new item: each item begun is
    /// finished and recorded, the rest stays due. See ``pushToHealthKit(_:now:)``.
    /// - Throws: as the synchronous form; `CancellationError` when cancelled before the end.
    public func pushToHealthKit(_ store: any HealthStore, now: Int64) async throws -> HealthKitSyncReport {
        do { try await store.checkWritable() } catch let error as HealthStoreError
            where error.code == .authorizationDenied
        {}
        var report = HealthKitSyncReport()
        for item in dueHealthKitItems(now: now) {
            try Task.checkCancellation()
            let (step, begun) = try await offload { [report] in
                var copy = report
                let step = try self.beginHealthKitItem(item, report: &copy)
                return (step, copy)
            }
            report = begun
            guard let step else { continue }
            var failure: HealthStoreError?
            do {
                switch step {
                case .delete(let old):
                    if let old { try await Self.deleteIgnoringMissing(old, in: store) }
                case .save(let sample, let old):
                    try await store.save(sample)
                    if let old { try await Self.deleteIgnoringMissing(old, in: store) }
                }
            } catch let error as HealthStoreError {
                failure = error
            }
            report = try await offload { [report, failure] in
                var copy = report
                try self.finishHealthKitItem(item, step, failure: failure, report: &copy)
                return copy
            }
        }
        return report
    }

    /// Reads what changed in HealthKit with the store's `async` anchored query and applies it off the caller's
    /// executor. See ``pullFromHealthKit(_:)``.
    public func pullFromHealthKit(_ store: any HealthStore) async throws -> HealthKitSyncReport {
        let anchor = try await offload { try self.keptHealthKitAnchor() }
        let changes = try await store.changes(after: anchor)
        try Task.checkCancellation()
        return try await offload { try self.applyHealthKitChanges(changes) }
    }
}
