import Foundation
import MoodLedger
import TestSupport
import Testing

/// A call into a ledger from inside a closure it runs under its own lock is a programming error: it stops the process
/// with a message in debug builds instead of deadlocking (`Specs/ledger.md`, *Reentrancy*).
@Suite("Reentrant calls into a ledger")
struct ReentrancyTests {
    #if DEBUG
        @Test("Reading the ledger from inside execute's decide stops the process (not a deadlock)")
        func reentrantReadTraps() async {
            await #expect(processExitsWith: .failure) {
                let dir = TemporaryDirectory("reentrant")
                var options = Ledger.Options()
                options.createIfMissing = true
                let ledger = try Ledger.open(at: dir.path, options: options)
                _ = try ledger.execute { _, _ in
                    _ = ledger.lastSeq  // reentrant: the ledger's lock is held here
                    return ([], .none, false)
                }
            }
        }
    #endif

    @Test("Reading inside read {} and reading before execute are fine")
    func nestedReadsAreFine() throws {
        let dir = TemporaryDirectory("reentrant-ok")
        var options = Ledger.Options()
        options.createIfMissing = true
        let ledger = try Ledger.open(at: dir.path, options: options)
        _ = try ledger.log(MoodDraft(valence: 0.2, labels: ["calm"]))
        let count = ledger.read { state in state.entries.all.count + ledger.read { $0.entries.all.count } }
        #expect(count == 2)
    }
}
