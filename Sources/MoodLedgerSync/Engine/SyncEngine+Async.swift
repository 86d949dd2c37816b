import MoodLedger
import Synchronization

extension SyncEngine {
    /// One run, for Swift concurrency: push, pull, and push what the pull re-queued, without blocking the caller's
    /// executor or holding any thread while a request is on the wire.
    ///
    /// - **Threads.** The run never runs on the caller's actor, and holds no thread while a request is on the wire:
    ///   its requests (up to ``Configuration/concurrency`` at once) are awaited. On Linux its own steps (choosing
    ///   what is due, appending a batch of attempts and syncing the log) run on a serial task executor of the
    ///   engine's, never on Swift's cooperative pool; on Apple platforms they run on Swift's global executor.
    /// - **One run per ledger at a time.** A call while another run of the same ledger is under way (from this engine
    ///   or another) starts nothing: it waits for that run and answers with its report.
    /// - **Cancellation.** When the task that started the run is cancelled, the run begins no new batch of attempts
    ///   and pulls no further page; the requests already in flight are answered and their outcomes recorded (the
    ///   attempt rules of `Specs/sync.md` hold), then it throws `CancellationError`. What was not sent stays due.
    /// - **Credentials.** An asynchronous provider is awaited before the first request.
    ///
    /// - Parameter once: one push pass and one pull, without re-checking the outbox.
    /// - Returns: what the run did.
    /// - Throws: as the synchronous run; `CancellationError` when cancelled.
    public func run(once: Bool = false) async throws -> SyncReport {
        let key = ObjectIdentifier(ledger)
        let (task, started) = Self.runs.withLock { runs -> (Task<SyncReport, any Error>, Bool) in
            if let running = runs[key] {
                joinedRuns.add(1, ordering: .relaxed)
                return (running, false)
            }
            let task = executor.throwingTask { [self] in
                defer { _ = Self.runs.withLock { $0.removeValue(forKey: key) } }
                return try await runAlone(once: once)
            }
            runs[key] = task
            return (task, true)
        }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            if started { task.cancel() }
        }
    }

    /// The runs under way, by ledger.
    private static let runs = Mutex<[ObjectIdentifier: Task<SyncReport, any Error>]>([:])

    private func runAlone(once: Bool) async throws -> SyncReport {
        cancelRequested.store(false, ordering: .relaxed)
        return try await withTaskCancellationHandler {
            try Task.checkCancellation()
            return try await runSteps(once: once)
        } onCancel: {
            cancelRequested.store(true, ordering: .relaxed)
        }
    }

    /// Ends a run whose task was cancelled, between its phases.
    func stopIfCancelled() throws {
        if cancelRequested.load(ordering: .relaxed) { throw CancellationError() }
    }
}
