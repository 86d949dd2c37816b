import Dispatch

/// Runs one piece of blocking work for many callers at once: a caller waits for a run that starts after it asked,
/// and every caller waiting when a run starts shares that run. The first caller to find none under way leads it; the
/// first that waits during it leads the next one, so no caller waits on runs after the one it needed.
///
/// What a run reads is thus as new as a run of the caller's own, and a burst of callers costs one run a round, not
/// one each (the accounts log read again on a flood of refused sign-ins, say).
final class SharedRun: Sendable {
    /// A caller waiting for a run, or for its turn to lead one.
    ///
    /// `@unchecked Sendable`: `leads` is written by a leader before `done` is signalled, and read by the waiter after.
    private final class Waiter: @unchecked Sendable {
        var leads = false
        let done = DispatchSemaphore(value: 0)
    }

    private let queue = PlainLock<(waiting: [Waiter], leading: Bool)>(([], false))

    /// Returns once a run of the work that started after this call has ended: `work` run by this caller, or the
    /// same work run by another (every caller passes the same work).
    func run(_ work: () -> Void) {
        let me = Waiter()
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
        let round = queue.withLock { queue -> [Waiter] in
            defer { queue.waiting.removeAll() }
            return queue.waiting
        }
        work()
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
