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
        for signal in [SIGINT, SIGTERM] {
            var action = sigaction()
            #if canImport(Darwin)
                action.__sigaction_u.__sa_handler = { TerminationSignals.received.store($0, ordering: .relaxed) }
            #else
                action.__sigaction_handler.sa_handler = { TerminationSignals.received.store($0, ordering: .relaxed) }
            #endif
            action.sa_flags = Int32(truncatingIfNeeded: SA_RESETHAND)
            sigemptyset(&action.sa_mask)
            sigaction(signal, &action, nil)
        }
        // A parent may have started this process with the signals blocked (a blocked signal stays pending and is
        // never seen): the command that intercepts them must be able to hear them.
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

    /// Calls `handler` on a background queue at every SIGINT and SIGTERM, which no longer end the process, until
    /// ``Observation/cancel()`` (a server's graceful stop).
    public static func observe(_ handler: @escaping @Sendable () -> Void) -> Observation {
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            sources.append(source)
        }
        return Observation(sources: sources)
    }

    /// The dispatch sources of ``observe(_:)``.
    // @unchecked Sendable: the sources are set once at creation; a dispatch source's `cancel` may be called from
    // any thread.
    public final class Observation: @unchecked Sendable {
        private let sources: [any DispatchSourceSignal]
        init(sources: [any DispatchSourceSignal]) { self.sources = sources }
        /// Stops calling the handler.
        public func cancel() { for source in sources { source.cancel() } }
    }
}
