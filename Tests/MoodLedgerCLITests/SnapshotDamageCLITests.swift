import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodLedgerCLI
@testable import MoodModel

/// The tool never prints an answer read from a damaged snapshot piece (`Specs/cli.md`, exit codes; `Specs/ledger.md`,
/// *Checking where read*).
@Suite("CLI: damaged snapshot pieces")
struct SnapshotDamageCLITests {
    @Test(
        "A reading command that meets a damaged piece answers from the log: the same output, once, and a notice"
    )
    func readingCommandAnswersAgain() throws {
        let cli = CLIHarness()
        #expect(cli.run(["init"]).code == 0)
        for index in 0..<40 {
            #expect(cli.run(["log", "--valence", String(Double(index % 11) / 10), "--note", "n\(index)"]).code == 0)
        }
        #expect(cli.run(["snapshot"]).code == 0)
        let before = cli.run(["list", "--limit", "100", "--json"])
        #expect(before.code == 0)
        let directory = cli.ledger + "/snapshots"
        let name = try #require(
            try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".bin") }.max())
        var bytes = Bytes.read(directory + "/" + name)  // the newest: the one a warm open reads through
        // The arena (section 3): every body then fails to decode from the snapshot.
        let entry = SnapshotLayout.headerSize + 2 * SnapshotLayout.tableEntrySize
        let (offset, length) = bytes.withUnsafeBytes {
            (Int($0.le(entry + 8) as UInt64), Int($0.le(entry + 16) as UInt64))
        }
        for at in stride(from: offset, to: offset + length, by: 13) { bytes[at] ^= 0x22 }
        Bytes.write(bytes, to: directory + "/" + name)

        var options = cli.options
        options.checkSnapshotsWhereReadFrom = 0
        let capture = CapturedOutput()
        let code = CLI.run(
            ["list", "--limit", "100", "--json", "--ledger", cli.ledger], environment: [:],
            console: capture.console(), options: options)
        #expect(code == 0, "\(capture.err)")
        #expect(capture.out == before.out, "the answer from the damaged piece was never printed")
        #expect(capture.err.contains("the state was rebuilt from the log"), "\(capture.err)")

        // As it was at a point (time travel through the same snapshot): answered from a replay of the log.
        let past = CapturedOutput()
        let at = CLI.run(
            ["list", "--limit", "100", "--json", "--at", "40", "--ledger", cli.ledger], environment: [:],
            console: past.console(), options: options)
        #expect(at == 0, "\(past.err)")
        #expect(past.out == before.out)
        #expect(past.err.contains("replayed from the log"), "\(past.err)")
    }
}
