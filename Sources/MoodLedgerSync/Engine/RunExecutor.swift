import Dispatch
import Synchronization

#if canImport(Darwin)
    /// Where a sync run's code runs. On Apple platforms: Swift's global executor, as any nonisolated async code (the
    /// requests are `URLSession` tasks, awaited); the type exists so that the engine reads the same on every
    /// platform.
    final class RunExecutor: Sendable {
        init(label: String = "moodledger.sync.run") {}

        func task<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> Task<T, Never> { Task(operation: work) }

        func throwingTask<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) -> Task<T, any Error> {
            Task(operation: work)
        }
    }
#else
    /// Where a sync run's code runs: a serial dispatch queue as a task executor. The run and its requests' tasks
    /// prefer it, so a run never takes a thread of Swift's cooperative pool for its own synchronous steps (appending
    /// a batch of attempts and syncing the log) and never holds a thread while a request is on the wire: a request
    /// awaits its socket, and the queue runs whatever else of the run is ready meanwhile.
    final class RunExecutor: TaskExecutor {
        private let queue: DispatchQueue

        init(label: String = "moodledger.sync.run") { queue = DispatchQueue(label: label) }

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }

        /// A task of the run, on this executor (its child tasks too).
        func task<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> Task<T, Never> {
            Task(executorPreference: self, operation: work)
        }

        /// A throwing task of the run, on this executor (its child tasks too).
        func throwingTask<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) -> Task<T, any Error> {
            Task(executorPreference: self, operation: work)
        }
    }
#endif

extension RunExecutor {
    /// Runs `work` as a task of `executor` and blocks the calling thread until it is done: the synchronous forms
    /// (the command line's `sync`, a blocking transport call) over the asynchronous code. On Linux nothing of `work`
    /// needs the caller's thread or any thread of the cooperative pool, so a caller on that pool cannot starve it.
    static func blocking<T: Sendable>(
        on executor: RunExecutor = RunExecutor(), _ work: @escaping @Sendable () async throws -> T
    ) throws -> T {
        let outcome = Box<T>()
        let done = DispatchSemaphore(value: 0)
        _ = executor.task {
            let result: Result<T, any Error>
            do { result = .success(try await work()) } catch { result = .failure(error) }
            outcome.value.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.value.withLock { $0! }.get()
    }

    /// A result handed from the task to the waiting thread.
    private final class Box<T: Sendable>: Sendable {
        let value = Mutex<Result<T, any Error>?>(nil)
    }
}
