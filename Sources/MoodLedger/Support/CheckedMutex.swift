import Platform
import Synchronization

/// The ledger's writer lock: a `Mutex` that, in debug builds, stops the process with a clear message when the thread
/// that holds it asks for it again — a command on a ``Ledger`` from inside a closure the ledger runs under its lock
/// (`execute`'s `decide` and `attach`), which would otherwise deadlock. GRDB's rule: no reentrant write from inside a
/// ledger's own closure (reads take the published state, never this lock).
struct CheckedMutex<Value>: ~Copyable, Sendable {
    private let mutex: Mutex<Value>
    /// The thread holding the lock, 0 when none (debug builds only).
    private let holder = Atomic<UInt>(0)

    init(_ value: sending Value) { mutex = Mutex(value) }

    /// Runs `body` with the value, holding the lock.
    borrowing func withLock<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        #if DEBUG
            let me = ThreadIdentity.current
            precondition(
                holder.load(ordering: .relaxed) != me,
                "a Ledger command was called from inside a closure it runs under its writer lock (execute's decide or "
                    + "attach): reentrant commands deadlock; commit after execute returns")
            return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
                holder.store(me, ordering: .relaxed)
                defer { holder.store(0, ordering: .relaxed) }
                return try body(&value)
            }
        #else
            return try mutex.withLock(body)
        #endif
    }
}
