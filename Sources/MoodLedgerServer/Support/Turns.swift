import Dispatch

/// Work that many threads hand in and one of them does at a time, in rounds: the first thread to find no round under
/// way leads one, taking the oldest waiting items (its own first); threads that hand in work meanwhile wait, and the
/// first of them leads the next round, so no thread waits on rounds after the one that held its item. What one round
/// costs (a `COMMIT`, a database read) is paid once for everything it holds.
///
/// A user's writes on a PostgreSQL node share a transaction this way, several users' groups share a `COMMIT`, and
/// requests about to be refused 401 share a read of the accounts.
final class Turns<Item: Sendable>: Sendable {
    /// An item waiting for its round, or for its turn to lead one.
    ///
    /// `@unchecked Sendable`: `leads` is written by a leader before `done` is signalled, and read by the waiting
    /// thread after.
    private final class Waiter: @unchecked Sendable {
        let item: Item
        var leads = false
        let done = DispatchSemaphore(value: 0)

        init(_ item: Item) { self.item = item }
    }

    private let queue = PlainLock<(waiting: [Waiter], leading: Bool)>(([], false))

    init() {}

    /// Hands in `item` and returns once a round that held it has run (on this thread or another).
    /// - Parameters:
    ///   - take: how many of the waiting items, oldest first, a round holds (at least the first; at most all).
    ///   - run: runs a round. Every thread hands in the same work: the leader's `take` and `run` are used.
    func submit(_ item: Item, take: ([Item]) -> Int, run: ([Item]) -> Void) {
        let me = Waiter(item)
        var leads = queue.withLock { queue -> Bool in
            queue.waiting.append(me)
            if queue.leading { return false }
            queue.leading = true
            return true
        }
        if !leads {
            me.done.wait()
            leads = me.leads
        }
        guard leads else { return }
        // A leader's own item is the oldest waiting: a round starts when none waited, or with the first that waits.
        let round = queue.withLock { queue -> [Waiter] in
            let count = min(max(1, take(queue.waiting.map(\.item))), queue.waiting.count)
            defer { queue.waiting.removeFirst(count) }
            return Array(queue.waiting[..<count])
        }
        run(round.map(\.item))
        let next = queue.withLock { queue -> Waiter? in
            guard let next = queue.waiting.first else {
                queue.leading = false
                return nil
            }
            next.leads = true
            return next
        }
        for waiter in round where waiter !== me { waiter.done.signal() }
        next?.done.signal()
    }
}

extension Turns where Item == Void {
    /// Returns once a run of `work` that started after this call has ended: run by this thread, or by another (every
    /// caller passes the same work), for every caller waiting when it started.
    func run(_ work: () -> Void) { submit((), take: { $0.count }, run: { _ in work() }) }
}
