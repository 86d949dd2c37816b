import Foundation
import Platform
import Synchronization
import TestSupport
import Testing

/// `TerminationSignals.observe`: its handler is in place when it returns, so a signal sent the next moment is heard.
@Suite("Termination signals", .serialized)
struct TerminationSignalsTests {
    final class Count: Sendable { let value = Atomic<Int>(0) }

    @Test("A SIGTERM raised right after observe returns reaches the handler (once per signal)")
    func heardAtOnce() throws {
        let heard = Count()
        let observation = TerminationSignals.observe { heard.value.add(1, ordering: .sequentiallyConsistent) }
        defer {
            observation.cancel()
            // The test process goes back to the usual dispositions.
            signal(SIGTERM, SIG_DFL)
            signal(SIGINT, SIG_DFL)
        }
        for expected in 1...3 {
            raise(SIGTERM)
            waitUntil(seconds: 5) { heard.value.load(ordering: .sequentiallyConsistent) >= expected }
            #expect(heard.value.load(ordering: .sequentiallyConsistent) == expected)
        }
        observation.cancel()
        raise(SIGINT)
        Thread.sleep(forTimeInterval: 0.1)
        #expect(heard.value.load(ordering: .sequentiallyConsistent) == 3, "not called once cancelled")
    }
}
