import Foundation

/// State guarded by a plain `pthread_mutex` (through `NSLock`), for locks many threads take briefly and often.
///
/// `Synchronization.Mutex` on Linux spins, then waits on a priority-inheritance futex that hands the lock to each
/// waiter in turn: with more threads than cores, a contended lock then costs more in the kernel than the work it
/// guards (the pool of open ledgers, taken on every request, spent a seventh of the server's time there). A plain
/// mutex lets the thread that runs take it.
// @unchecked Sendable: `state` is read and written only inside `withLock`, under `lock`.
final class PlainLock<State>: @unchecked Sendable {
    private var state: State
    private let lock = NSLock()

    /// A lock over `state`.
    init(_ state: State) { self.state = state }

    /// Runs `body` with the state, holding the lock.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
