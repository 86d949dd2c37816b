import Foundation
import Synchronization
import TestSupport

@testable import MoodLedger
@testable import MoodLedgerCLI
@testable import MoodModel

/// Runs the CLI in-process with a fixed clock and seeded ids, capturing output.
final class CLIHarness: @unchecked Sendable {
    let dir = TemporaryDirectory("cli")
    let clock = ManualClock(milliseconds: 1_780_000_000_000)  // 2026-05-28T20:26:40Z
    let ids = Mutex(SeededRandom(seed: 99, test: "cli ids"))
    var ledger: String { dir.sub("mood.ledger") }

    struct Result {
        var code: Int32
        var out: String
        var err: String
    }

    var options: Ledger.Options {
        var options = Ledger.Options()
        options.clock = { [self] in clock.tick(1_000) }
        options.newID = { [self] in ids.withLock { EntryID.random(using: &$0) } }
        options.utcOffsetMinutes = 60
        options.lockWaitMilliseconds = 2000
        return options
    }

    @discardableResult
    func run(_ words: [String], environment: [String: String] = [:], ledger: Bool = true) -> Result {
        let capture = CapturedOutput()
        let code = CLI.run(
            words + (ledger ? ["--ledger", self.ledger] : []), environment: environment,
            console: capture.console(), options: options)
        return Result(code: code, out: capture.out, err: capture.err)
    }

    /// `run` that returns stdout trimmed, for ids.
    func id(_ words: [String]) -> String { run(words).out.trimmingCharacters(in: .whitespacesAndNewlines) }
}

/// Compares text with a golden file in Tests/MoodLedgerCLITests/Golden, re-recorded with MOODLEDGER_RECORD_GOLDEN=1.
func golden(_ name: String, _ actual: String) throws -> (matches: Bool, expected: String) {
    let path = Repository.root + "/Tests/MoodLedgerCLITests/Golden/" + name
    if Repository.recordGolden {
        try FileManager.default.createDirectory(
            atPath: Repository.root + "/Tests/MoodLedgerCLITests/Golden",
            withIntermediateDirectories: true)
        try actual.write(toFile: path, atomically: true, encoding: .utf8)
    }
    let expected = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "<missing golden file \(name)>"
    return (expected == actual, expected)
}
