import Dispatch
import EventLogFormat
import Platform
import Synchronization

extension Ledger {
    /// The page `query` answers now, then again after every commit that changes it: pages equal to the last one
    /// delivered are not repeated. This process's commits are delivered as they are published (no polling); other
    /// processes' commits are heard through the file system (inotify on Linux, a `DispatchSource` on Darwin: the
    /// ledger is brought up to date with ``refresh()`` when its log changes), or looked for every 100 ms where the
    /// system cannot watch the directory. A ledger that keeps the writer lock (``Options/keepsWriterLock``) has no
    /// other writer to hear.
    ///
    /// A consumer slower than the commits gets the newest page (the ones between are skipped, never queued). The
    /// sequence ends when the task iterating it is cancelled, the iteration ends, or the ledger is closed; it throws
    /// what the query throws (``MoodError`` for a limit outside 1…100) and what a refresh meets.
    ///
    /// ```swift
    /// for try await page in ledger.observe(EntryQuery(limit: 30)) {
    ///     show(page.entries)
    /// }
    /// ```
    public func observe(_ query: EntryQuery) -> AsyncThrowingStream<EntryPage, any Error> {
        observe { state in try state.list(query) }
    }

    /// Any value derived from the state: its value now, then again after every commit that changes it (equal values
    /// are not repeated). `derive` runs off the caller's executor, once per published commit at most, on a state it
    /// must not keep. Ends and throws as ``observe(_:)-(EntryQuery)``.
    ///
    /// ```swift
    /// for try await count in ledger.observe({ $0.entries.count }) { badge = count }
    /// ```
    public func observe<Value: Equatable & Sendable>(
        _ derive: @escaping @Sendable (LedgerState) throws -> Value
    ) -> AsyncThrowingStream<Value, any Error> {
        observation(derive).values
    }

    /// ``observe(_:)-((LedgerState)->Value)``'s sequence, and a call that ends it at once (what a ``LiveQuery``
    /// does when it is released).
    func observation<Value: Equatable & Sendable>(
        _ derive: @escaping @Sendable (LedgerState) throws -> Value
    ) -> (values: AsyncThrowingStream<Value, any Error>, end: @Sendable () -> Void) {
        let (values, continuation) = AsyncThrowingStream.makeStream(
            of: Value.self, throwing: (any Error).self, bufferingPolicy: .bufferingNewest(1))
        let observation = Observation(ledger: self, derive: derive, continuation: continuation)
        continuation.onTermination = { _ in observation.stop() }
        observation.start()
        return (values, { continuation.finish() })
    }

    /// How many observations are running (each ``observe(_:)-(EntryQuery)`` until it ends).
    package var observationCount: Int { published.listenerCount }

    /// One running observation: a value evaluated on a queue of its own after each publication, yielded when it
    /// changed. Its listener (and a read-only ledger's timer) is registered when ``observe(_:)-(EntryQuery)``
    /// returns, and removed by the time the sequence has ended.
    // @unchecked Sendable: `last` is touched only on `queue`; `scheduled` is atomic; the listener and the timer are
    // under `running`'s lock; the rest is immutable.
    private final class Observation<Value: Equatable & Sendable>: @unchecked Sendable {
        let ledger: Ledger
        let derive: @Sendable (LedgerState) throws -> Value
        let continuation: AsyncThrowingStream<Value, any Error>.Continuation
        /// Evaluations run here, one at a time, off the cooperative pool: an app whose tasks keep the pool busy still
        /// hears of commits.
        let queue = DispatchQueue(label: "MoodLedger.observe")
        /// Whether an evaluation is queued and not yet begun: publications meanwhile add none.
        let scheduled = Atomic<Bool>(false)
        /// Another process's commits are looked for here: a refresh may wait for this process's own writer, and an
        /// evaluation must not wait behind it.
        let refreshQueue = DispatchQueue(label: "MoodLedger.observe.refresh")
        /// The listener's token, the watcher of the ledger's directory, or the timer where it cannot be watched, while
        /// running; `nil` once stopped (a stop before the start wins).
        let running = Mutex<(token: UInt64?, watcher: DirectoryWatcher?, timer: (any DispatchSourceTimer)?)?>(
            (nil, nil, nil))
        var last: Value?

        init(
            ledger: Ledger, derive: @escaping @Sendable (LedgerState) throws -> Value,
            continuation: AsyncThrowingStream<Value, any Error>.Continuation
        ) {
            self.ledger = ledger
            self.derive = derive
            self.continuation = continuation
        }

        func start() {
            running.withLock { running in
                guard running != nil else { return }
                running?.token = ledger.published.addListener { [weak self] _ in self?.schedule() }
                if ledger.options.readOnly || !ledger.options.keepsWriterLock {
                    // Another process's commits reach this ledger through its log file: heard when the directory
                    // changes (or looked for every 100 ms where it cannot be watched); a refresh that finds some
                    // publishes them, which schedules an evaluation.
                    let watcher = DirectoryWatcher(
                        directory: ledger.path, file: LogFormat.logFileName, queue: refreshQueue
                    ) { [weak self] in self?.refresh() }
                    if let watcher {
                        running?.watcher = watcher
                    } else {
                        let timer = DispatchSource.makeTimerSource(queue: refreshQueue)
                        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
                        timer.setEventHandler { [weak self] in self?.refresh() }
                        timer.resume()
                        running?.timer = timer
                    }
                }
            }
            schedule()
        }

        func schedule() {
            guard !scheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
            queue.async { [self] in
                scheduled.store(false, ordering: .releasing)
                evaluate()
            }
        }

        /// Looks for other processes' commits. The file system's notice of a write can come while its writer still
        /// holds the log (the write is made, its sync not yet done): the look is then made again shortly, until the
        /// writer is done, since no further notice may come.
        private func refresh() {
            guard running.withLock({ $0 != nil }) else { return }
            do {
                if try ledger.refreshed().writerBusy {
                    refreshQueue.asyncAfter(deadline: .now() + .milliseconds(2)) { [weak self] in self?.refresh() }
                }
            } catch {
                finish(throwing: error)
            }
        }

        private func evaluate() {
            guard running.withLock({ $0 != nil }) else { return }
            guard !ledger.published.log.isClosed else { return finish(throwing: nil) }
            do {
                let value = try ledger.read(derive)
                guard value != last else { return }
                last = value
                continuation.yield(value)
            } catch {
                finish(throwing: error)
            }
        }

        private func finish(throwing error: (any Error)?) {
            continuation.finish(throwing: error)
            stop()
        }

        /// Ends the observation: no listener, no timer, nothing left running.
        func stop() {
            guard
                let stopped = running.withLock({ running in
                    defer { running = nil }; return running
                })
            else { return }
            if let token = stopped.token { ledger.published.removeListener(token) }
            stopped.watcher?.stop()
            stopped.timer?.cancel()
        }
    }
}
