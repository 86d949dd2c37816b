import Foundation
import MoodLedger
import TestSupport
import Testing

/// A command from inside a closure the ledger runs under its writer's lock is a programming error: it stops the
/// process with a message in debug builds instead of deadlocking; a read there is fine (`Specs/ledger.md`,
/// *Reentrancy*).
@Suite("Reentrant calls into a ledger")
struct ReentrancyTests {
    #if DEBUG
        @Test("A command from inside execute's decide stops the process (not a deadlock)")
        func reentrantCommandTraps() async {
            await #expect(processExitsWith: .failure) {
                let dir = TemporaryDirectory("reentrant")
                var options = Ledger.Options()
                options.createIfMissing = true
                let ledger = try Ledger.open(at: dir.path, options: options)
                _ = try ledger.execute { _, _ in
                    _ = try? ledger.log(MoodDraft(valence: 0.1))  // reentrant: the writer's lock is held here
                    return ([], .none, false)
                }
            }
        }
    #endif

    @Test("A read inside execute's decide takes the last published commit: the state before this one")
    func readInsideDecide() throws {
        let dir = TemporaryDirectory("reentrant-read")
        var options = Ledger.Options()
        options.createIfMissing = true
        let ledger = try Ledger.open(at: dir.path, options: options)
        _ = try ledger.log(MoodDraft(valence: 0.2, labels: ["calm"]))
        var seen: UInt64 = 0
        _ = try ledger.execute { state, _ in
            seen = ledger.lastSeq
            #expect(ledger.read { $0.entries.count } == state.entries.count)
            return ([], .none, false)
        }
        #expect(seen == 1)
    }

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
