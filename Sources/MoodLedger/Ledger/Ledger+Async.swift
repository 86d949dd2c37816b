import Dispatch

extension Ledger {
    /// Runs a synchronous ledger call on a background queue, so an async caller's executor never blocks on fsync.
    func offload<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try work() })
            }
        }
    }

    /// Logs a mood entry without blocking the caller's executor. See ``log(_:)``.
    @discardableResult
    public func log(_ draft: MoodDraft) async throws -> LogOutcome { try await offload { try self.log(draft) } }

    /// Updates an entry without blocking the caller's executor. See ``update(_:_:)``.
    @discardableResult
    public func update(_ id: EntryID, _ changes: MoodChanges) async throws -> MoodEntry {
        try await offload { try self.update(id, changes) }
    }

    /// Deletes an entry without blocking the caller's executor. See ``delete(_:)``.
    public func delete(_ id: EntryID) async throws { try await offload { try self.delete(id) } }

    /// An entry's history without blocking the caller's executor. See ``history(of:)``.
    public func history(of id: EntryID) async throws -> [HistoryItem] { try await offload { try self.history(of: id) } }

    /// The state at a point without blocking the caller's executor. See ``state(at:)``.
    public func state(at point: Point) async throws -> LedgerState { try await offload { try self.state(at: point) } }
}
