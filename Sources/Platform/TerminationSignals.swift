import Dispatch
import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// SIGINT and SIGTERM as a request instead of an end: while intercepted, the first of them only records its number,
/// so that a writing command can abandon its unfinished batch (or finish a step that must not be cut) and exit with
/// the conventional status itself. A second signal of the same kind ends the process as usual (`SA_RESETHAND`).
public enum TerminationSignals {
    /// The signal received while intercepted, or 0.
    private static let received = Atomic<Int32>(0)

    /// Starts intercepting SIGINT and SIGTERM for the rest of the process.
    public static func intercept() {
        received.store(0, ordering: .relaxed)  // initialises the global before a handler can read it
        install(
            { TerminationSignals.received.store($0, ordering: .relaxed) },
            flags: Int32(truncatingIfNeeded: SA_RESETHAND))
    }

    /// Installs `handler` for SIGINT and SIGTERM and unblocks them: a parent may have started this process with the
    /// signals blocked (a blocked signal stays pending and is never seen).
    private static func install(_ handler: @escaping @convention(c) (Int32) -> Void, flags: Int32) {
        for signal in [SIGINT, SIGTERM] {
            var action = sigaction()
            #if canImport(Darwin)
                action.__sigaction_u.__sa_handler = handler
            #else
                action.__sigaction_handler.sa_handler = handler
            #endif
            action.sa_flags = flags
            sigemptyset(&action.sa_mask)
            sigaction(signal, &action, nil)
        }
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGINT)
        sigaddset(&unblock, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }

    /// The signal number received since ``intercept()``, if any (2 for SIGINT, 15 for SIGTERM).
    public static var requested: Int32? {
        let signal = received.load(ordering: .relaxed)
        return signal == 0 ? nil : signal
    }

    /// The write end of ``observe(_:)``'s pipe, for its signal handler (-1 before).
    private static let wakeFD = Atomic<Int32>(-1)

    /// Calls `handler` on a background queue at every SIGINT and SIGTERM, which no longer end the process, until
    /// ``Observation/cancel()`` (a server's graceful stop).
    ///
    /// The signals' handler is in place when this returns: a signal that comes a moment later is never lost. It
    /// writes a byte to a pipe (`write` is async-signal-safe), and a thread of its own reads the pipe and calls
    /// `handler` — nothing else runs inside the signal handler.
    public static func observe(_ handler: @escaping @Sendable () -> Void) -> Observation {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { preconditionFailure("no pipe for the signals: the process is out of descriptors") }
        wakeFD.store(fds[1], ordering: .sequentiallyConsistent)
        let readEnd = fds[0]
        let observation = Observation()
        let queue = DispatchQueue(label: "MoodLedger.signals")
        queue.async {
            var buffer = [UInt8](repeating: 0, count: 16)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if count > 0 {
                    if !observation.isCancelled { handler() }
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
        install({ _ in TerminationSignals.wake() }, flags: Int32(truncatingIfNeeded: SA_RESTART))
        return observation
    }

    /// The signal handler's whole work: one byte to the pipe (errno kept, as a handler must).
    private static func wake() {
        let saved = errno
        var byte: UInt8 = 1
        _ = write(wakeFD.load(ordering: .relaxed), &byte, 1)
        errno = saved
    }

    /// What ``observe(_:)`` set up; cancel it to stop calling the handler.
    public final class Observation: Sendable {
        private let cancelled = Atomic<Bool>(false)
        var isCancelled: Bool { cancelled.load(ordering: .sequentiallyConsistent) }
        /// Stops calling the handler (later signals are still taken, and ignored).
        public func cancel() { cancelled.store(true, ordering: .sequentiallyConsistent) }
    }
}
