import Dispatch

/// Every command and every query that may read the log has an `async` form: it runs the synchronous one on a
/// background queue, so an async caller's executor (the main actor, say) never waits for a write's sync or a replay.
/// The reads of the current state (``read(_:)``, ``entry(_:)``, ``list(_:)``) need none: they take the last
/// published state and never wait.
extension Ledger {
    /// Runs a synchronous ledger call on a background queue, so an async caller's executor never blocks on fsync.
    package func offload<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try work() })
            }
        }
    }

    /// Logs a mood entry without blocking the caller's executor. See ``log(_:)``.
    @discardableResult
    public func log(_ draft: MoodDraft) async throws -> LogOutcome { try await offload { try self.log(draft) } }

    /// Logs several drafts as one commit without blocking the caller's executor. See ``log(contentsOf:)``.
    @discardableResult
    public func log(contentsOf drafts: [MoodDraft]) async throws -> [MoodEntry] {
        try await offload { try self.log(contentsOf: drafts) }
    }

    /// Updates an entry without blocking the caller's executor. See ``update(_:_:)``.
    @discardableResult
    public func update(_ id: EntryID, _ changes: MoodChanges) async throws -> MoodEntry {
        try await offload { try self.update(id, changes) }
    }

    /// Replaces what an edit form holds, in one commit, without blocking the caller's executor. See
    /// ``replace(_:with:)``.
    @discardableResult
    public func replace(_ id: EntryID, with replacement: MoodReplacement) async throws -> CommandResult {
        try await offload { try self.replace(id, with: replacement) }
    }

    /// Edits an entry's labels without blocking the caller's executor. See ``editLabels(_:_:)``.
    @discardableResult
    public func editLabels(_ id: EntryID, _ edit: WordEdit) async throws -> MoodEntry {
        try await offload { try self.editLabels(id, edit) }
    }

    /// Edits an entry's associations without blocking the caller's executor. See ``editAssociations(_:_:)``.
    @discardableResult
    public func editAssociations(_ id: EntryID, _ edit: WordEdit) async throws -> MoodEntry {
        try await offload { try self.editAssociations(id, edit) }
    }

    /// Edits an entry's tags without blocking the caller's executor. See ``editTags(_:_:)``.
    @discardableResult
    public func editTags(_ id: EntryID, _ edit: WordEdit) async throws -> MoodEntry {
        try await offload { try self.editTags(id, edit) }
    }

    /// Deletes an entry without blocking the caller's executor. See ``delete(_:)``.
    public func delete(_ id: EntryID) async throws { try await offload { try self.delete(id) } }

    /// Closes an entry's open conflicts without blocking the caller's executor. See
    /// ``resolveConflict(_:take:field:)``.
    @discardableResult
    public func resolveConflict(
        _ id: EntryID, take side: ConflictSide, field: MergeFields? = nil
    ) async throws -> MoodEntry? {
        try await offload { try self.resolveConflict(id, take: side, field: field) }
    }

    /// The open conflicts without blocking the caller's executor. See ``conflicts(through:)``.
    public func conflicts(through seq: UInt64 = .max) async throws -> [OpenConflict] {
        try await offload { try self.conflicts(through: seq) }
    }

    /// An entry's history without blocking the caller's executor. See ``history(of:)``.
    public func history(of id: EntryID) async throws -> [HistoryItem] { try await offload { try self.history(of: id) } }

    /// The state at a point without blocking the caller's executor. See ``state(at:)-3r9yg``.
    public func state(at point: Point) async throws -> LedgerState { try await offload { try self.state(at: point) } }

    /// A read of the state at a point (time travel: a replay from the nearest snapshot) without blocking the caller's
    /// executor. See ``read(at:_:)-6yahl``.
    public func read<T: Sendable>(
        at point: Point?, _ body: @escaping @Sendable (LedgerState) throws -> T
    ) async throws -> T {
        try await offload { try self.read(at: point, body) }
    }

    /// What changed between two points without blocking the caller's executor. See ``diff(from:to:)``.
    public func diff(from: Point, to: Point) async throws -> LedgerDiff {
        try await offload { try self.diff(from: from, to: to) }
    }

    /// Erases entries without blocking the caller's executor. See ``erase(_:reason:requestedBy:ignoringDestinations:)``.
    @discardableResult
    public func erase(
        _ ids: [EntryID], reason: String = "", requestedBy: String = "app", ignoringDestinations: Bool = false
    ) async throws -> EraseReport {
        try await offload {
            try self.erase(ids, reason: reason, requestedBy: requestedBy, ignoringDestinations: ignoringDestinations)
        }
    }

    /// Erases every entry without blocking the caller's executor. See
    /// ``eraseAll(keepingHealthKit:reason:requestedBy:ignoringDestinations:)``.
    @discardableResult
    public func eraseAll(
        keepingHealthKit: Bool, reason: String = "", requestedBy: String = "app", ignoringDestinations: Bool = false
    ) async throws -> EraseReport {
        try await offload {
            try self.eraseAll(
                keepingHealthKit: keepingHealthKit, reason: reason, requestedBy: requestedBy,
                ignoringDestinations: ignoringDestinations)
        }
    }

    /// Releases parked sync items without blocking the caller's executor. See ``releaseParked(for:)``.
    @discardableResult
    public func releaseParked(for destination: SyncDestination = .backend) async throws -> [EntryID] {
        try await offload { try self.releaseParked(for: destination) }
    }
}
