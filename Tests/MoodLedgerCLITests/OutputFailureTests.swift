import Foundation
import Platform
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodLedgerCLI

/// Output that cannot be written — a full disk behind a redirect, a closed pipe — never kills the tool and never
/// turns a committed change into a non-zero exit (a script would retry it and log a duplicate).
@Suite("Output that cannot be written")
struct OutputFailureTests {
    /// The built binary through `sh -c`, so that the shell makes the redirects.
    private func shell(_ script: String, ledger: String) throws -> Tool.Outcome {
        var environment = ProcessInfo.processInfo.environment
        environment["MOODLEDGER_LEDGER"] = ledger
        environment["ML"] = Repository.executable("moodledger")
        return try Tool.run(["-c", script], executable: "/bin/sh", environment: environment)
    }

    private func entryCount(_ ledger: String) throws -> Int {
        let outcome = try Tool.run(["list", "--all", "--json", "--ledger", ledger])
        #expect(outcome.code == 0, "\(outcome.err)")
        let object = try JSONSerialization.jsonObject(with: Data(outcome.out.utf8)) as? [String: Any]
        return try #require(object?["entries"] as? [Any]).count
    }

    @Test("log with stdout, stderr or both on /dev/full, or stdout closed, commits once and exits 0; list exits 74")
    func fullDisk() throws {
        let dir = TemporaryDirectory("output-full")
        let ledger = dir.sub("mood.ledger")
        #expect(try Tool.run(["init", "--ledger", ledger]).code == 0)
        let redirects = [">/dev/full", "2>/dev/full", ">/dev/full 2>/dev/full", ">&-"]
        for redirect in redirects {
            let outcome = try shell("\"$ML\" log --score 3 \(redirect); echo \"exit $?\" >&2", ledger: ledger)
            #expect(outcome.err.hasSuffix("exit 0\n"), "log \(redirect): \(outcome.err)")
        }
        #expect(try entryCount(ledger) == redirects.count, "every run committed exactly once")
        let list = try shell("\"$ML\" list >/dev/full; echo \"exit $?\" >&2", ledger: ledger)
        #expect(list.err.hasSuffix("exit 74\n"), "\(list.err)")
        #expect(list.err.contains("cannot write the output") && list.err.contains("No space left on device"))
    }

    /// Runs the binary with stdout a pipe whose reading end is already closed: every write meets `EPIPE`.
    private func intoClosedPipe(_ arguments: [String]) throws -> (code: Int32, signalled: Bool) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Repository.executable("moodledger"))
        process.arguments = arguments
        let pipe = Pipe()
        try pipe.fileHandleForReading.close()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return (process.terminationStatus, process.terminationReason == .uncaughtSignal)
    }

    @Test("A closed pipe: a reading command exits 141 quietly; a writing one keeps its commit and exits 0")
    func closedPipe() throws {
        let dir = TemporaryDirectory("output-pipe")
        let ledger = dir.sub("mood.ledger")
        #expect(try Tool.run(["init", "--ledger", ledger]).code == 0)
        let log = try intoClosedPipe(["log", "--score", "7", "--json", "--ledger", ledger])
        #expect(log.code == 0 && !log.signalled, "\(log)")
        #expect(try entryCount(ledger) == 1)
        let list = try intoClosedPipe(["list", "--ledger", ledger])
        #expect(list.code == 141 && !list.signalled, "\(list)")
    }

    @Test("In process: the exit code follows what the command did, never the output's fate")
    func exitCodes() throws {
        let harness = CLIHarness()
        #expect(harness.run(["init"]).code == 0)
        for error in [Errno.noSpace, Errno.brokenPipe, Errno.ioError] {
            let failing = Console(fallibleOut: { _ in error }, err: { _ in nil })
            let code = CLI.run(
                ["log", "--score", "4", "--ledger", harness.ledger], environment: [:], console: failing,
                options: harness.options)
            #expect(code == 0, "log with \(error)")
            let list = CLI.run(
                ["list", "--ledger", harness.ledger], environment: [:], console: failing, options: harness.options)
            #expect(list == (error == .brokenPipe ? 141 : 74), "list with \(error)")
        }
        #expect(try Ledger.open(at: harness.ledger, options: harness.options).read { $0.entries.count } == 3)
    }
}
