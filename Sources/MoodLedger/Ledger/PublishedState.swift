import EventLog
import Synchronization

/// What readers see: the state of the last commit and the log it covers, published whole by the writer at the end of
/// each commit (and after a refresh, a rebuild, a snapshot or an erasure). A reader takes it without the writer's lock,
/// so no read ever waits for an append, an `fdatasync`, a snapshot or an import; and since a commit's events are
/// folded in one step under this lock (held for the fold only, never across I/O), a reader sees whole commits only,
/// never part of one.
///
/// The writer folds in place: while no reader holds a copy, nothing is copied; a reader that holds one while a
/// commit is folded costs that commit a copy of the pieces it changes (the projections are chunked for that).
final class PublishedState: Sendable {
    /// The state and the log it covers.
    struct Value: Sendable {
        var state: LedgerState
        var log: EventLog
        /// How many commits (and other changes of state) were published: an observer's clock.
        var version: UInt64 = 0
    }

    private let value: Mutex<Value>
    /// Called after each publication, outside the lock, with the new version (observers).
    private let listeners = Mutex<[UInt64: @Sendable (UInt64) -> Void]>([:])
    private let nextListener = Atomic<UInt64>(1)

    init(state: LedgerState, log: EventLog) { value = Mutex(Value(state: state, log: log)) }

    /// The last published state and log.
    var current: Value { value.withLock { $0 } }

    /// The last published state.
    var state: LedgerState { value.withLock { $0.state } }

    /// The log the published state covers.
    var log: EventLog { value.withLock { $0.log } }

    /// Publishes a state (and the log it covers, when it changed).
    func publish(_ state: LedgerState, log: EventLog? = nil) {
        let version = value.withLock { value in
            value.state = state
            if let log { value.log = log }
            value.version += 1
            return value.version
        }
        notify(version)
    }

    /// Changes the published state in place in one step: readers see it before or after `body`, never during.
    func mutate<T>(_ body: (inout LedgerState) throws -> T) rethrows -> T {
        let (result, version) = try value.withLock { value in
            let result = try body(&value.state)
            value.version += 1
            return (result, value.version)
        }
        notify(version)
        return result
    }

    /// Calls `listener` after every publication from now on, until the returned token is passed to
    /// ``removeListener(_:)``. It runs on the publishing thread, outside the lock: it must only hand the news on.
    func addListener(_ listener: @escaping @Sendable (UInt64) -> Void) -> UInt64 {
        let token = nextListener.add(1, ordering: .relaxed).oldValue
        listeners.withLock { $0[token] = listener }
        return token
    }

    /// How many listeners there are.
    var listenerCount: Int { listeners.withLock { $0.count } }

    /// Calls every listener with the current version, nothing published (the ledger was closed: they look).
    func wake() { notify(value.withLock { $0.version }) }

    /// Stops calling a listener.
    func removeListener(_ token: UInt64) { listeners.withLock { _ = $0.removeValue(forKey: token) } }

    private func notify(_ version: UInt64) {
        let current = listeners.withLock { Array($0.values) }
        for listener in current { listener(version) }
    }
}
