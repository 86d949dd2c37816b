import MoodLedger

/// The interchange commands in their `async` form: each runs the synchronous one off the caller's executor.
extension Ledger {
    /// Imports a parsed file without blocking the caller's executor. See ``importPlan(_:dryRun:updateExisting:)``.
    public func importPlan(
        _ plan: ImportPlan, dryRun: Bool = false, updateExisting: Bool = false
    ) async throws -> ImportReport {
        try await offload { try self.importPlan(plan, dryRun: dryRun, updateExisting: updateExisting) }
    }

    /// Sends the due HealthKit items without blocking the caller's executor. See ``pushToHealthKit(_:now:)``.
    public func pushToHealthKit(_ store: any HealthStore, now: Int64) async throws -> HealthKitSyncReport {
        try await offload { try self.pushToHealthKit(store, now: now) }
    }

    /// Reads what changed in HealthKit without blocking the caller's executor. See ``pullFromHealthKit(_:)``.
    public func pullFromHealthKit(_ store: any HealthStore) async throws -> HealthKitSyncReport {
        try await offload { try self.pullFromHealthKit(store) }
    }
}
