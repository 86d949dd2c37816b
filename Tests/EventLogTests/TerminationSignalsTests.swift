import Foundation
import TestSupport
import Testing

/// `TerminationSignals.observe`: its handler is in place when it returns, so a signal sent the next moment is heard.
/// Checked in a process of its own (`eventlog-crash-child --signals`): signal dispositions are the whole process's,
/// and other tests running beside this one install their own.
@Suite("Termination signals")
struct TerminationSignalsTests {
    @Test("A SIGTERM raised right after observe returns reaches the handler, three times in a row")
    func heardAtOnce() throws {
        let outcome = try Tool.run(["--signals"], executable: Repository.executable("eventlog-crash-child"))
        #expect(outcome.code == 0, "\(outcome.out) \(outcome.err)")
        #expect(outcome.out.contains("heard 3"), "\(outcome.out)")
    }
}
