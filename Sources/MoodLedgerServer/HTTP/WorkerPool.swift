import Foundation
import Synchronization

/// A fixed set of threads running submitted jobs in order of submission: the server's workers (blocking work moved
/// off the event loops) and its sync threads (group commits).
final class WorkerPool: Sendable {
    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var head = 0
        var stopped = false
    }
    private let queue = PlainLock(Queue())
    private let available = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    let count: Int

    /// Starts `count` threads with small stacks.
    init(count: Int, name: String) {
        self.count = count
        for index in 0..<count {
            let thread = Thread { [self] in run() }
            thread.stackSize = 512 * 1024
            thread.name = "\(name)-\(index)"
            thread.start()
        }
    }

    /// Queues a job.
    func submit(_ job: @escaping @Sendable () -> Void) {
        queue.withLock { $0.jobs.append(job) }
        available.signal()
    }

    /// Lets queued jobs finish, then ends every thread.
    func stop() {
        let already = queue.withLock { queue -> Bool in
            defer { queue.stopped = true }
            return queue.stopped
        }
        if already { return }
        for _ in 0..<count { available.signal() }
        for _ in 0..<count { finished.wait() }
    }

    private func run() {
        while true {
            available.wait()
            let job: (@Sendable () -> Void)? = queue.withLock { queue in
                guard queue.head < queue.jobs.count else { return nil }
                let job = queue.jobs[queue.head]
                queue.head += 1
                if queue.head > 1024, queue.head * 2 > queue.jobs.count {
                    queue.jobs.removeFirst(queue.head)
                    queue.head = 0
                }
                return job
            }
            if let job {
                job()
            } else if queue.withLock({ $0.stopped }) {
                finished.signal()
                return
            }
        }
    }
}
