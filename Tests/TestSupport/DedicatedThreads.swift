import Foundation

/// Runs `body(index)` on `count` threads of their own, not on Dispatch's shared pool: a test that waits on their
/// progress while it runs on a pool thread itself (busy-waiting, or blocked) cannot starve them, however many tests
/// run beside it on a 2-core machine.
/// - Returns: a group that is done when every body has returned.
public func onDedicatedThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> DispatchGroup {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            body(index)
            group.leave()
        }
        thread.name = "test-worker-\(index)"
        thread.start()
    }
    return group
}
