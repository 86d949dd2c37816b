import Foundation
import MoodLedger
import TestSupport
import Testing

@testable import MoodLedgerCLI

/// Random argument lists for every command never trap, and always end with a documented exit code.
@Suite("CLI manners under random arguments")
struct ArgumentFuzzTests {
    static let documented: Set<Int32> = [0, 1, 64, 65, 66, 69, 73, 74, 75, 77, 78]
    static let values = [
        "0", "-1", "1", "7", "0.5", "-0.5", "1e308", "-1e308", "nan", "inf", "", " ", "abc",
        "99999999999999999999999", "9223372036854775807", "-9223372036854775808", "18446744073709551616",
        "9223372036854775807d", "1d", "365d", "366d", "last", "2026-01-01", "2026-13-45", "yesterday",
        "today", "2026-03-08T02:30", "+14:00", "-99:99", "Europe/Berlin", "calm", "calm,happy", "💥",
        String(repeating: "x", count: 600), "--", "-", "=", "ffff", "00000000-0000-0000-0000-000000000000"
    ]

    @Test(
        "Every command with seeded random options and values: no trap, a documented exit code",
        arguments: [UInt64(15_303_353_435_541_190_622), nil])
    func randomArguments(seed: UInt64?) throws {
        // The fixed seed found `list --min-valence 1e308` trapping; it runs beside a fresh one every time.
        var random = SeededRandom(seed: seed, test: "randomArguments")
        let cli = CLIHarness()
        cli.run(["init"])
        for score in ["3", "8"] { cli.run(["log", "--score", score, "--label", "calm"]) }
        // Paths a command writes or reads stay inside the test's directory.
        let paths = [
            "out": cli.dir.sub("r.html"), "store": cli.dir.sub("hk.json"), "credentials": cli.dir.sub("creds"),
            "data": cli.dir.sub("srv")
        ]
        for spec in CLI.commands {
            for _ in 0..<40 {
                var words = [spec.name]
                // The server's own run would listen: only its credential subcommands are tried.
                if spec.name == "serve" { words.append(["token", "user"].randomElement(using: &random)!) }
                let options = Array(spec.values.subtracting(["ledger"])).sorted() + Array(spec.flags).sorted()
                for _ in 0..<Int.random(in: 0...4, using: &random) {
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0 where !options.isEmpty:
                        let name = options.randomElement(using: &random)!
                        words.append("--" + name)
                        if spec.values.contains(name) {
                            words.append(paths[name] ?? Self.values.randomElement(using: &random)!)
                        }
                    case 1:
                        words.append(Self.values.randomElement(using: &random)!)
                    default:
                        words.append(["--json", "--tz", "UTC", "--wait", "0", "--bogus"].randomElement(using: &random)!)
                    }
                }
                let result = cli.run(words)
                #expect(Self.documented.contains(result.code), "\(words): exit \(result.code) \(result.err)")
            }
        }
    }

    @Test("help COMMAND prints what COMMAND --help prints; --ttl and other numbers reject overflow with 65")
    func helpAndNumbers() {
        let cli = CLIHarness()
        cli.run(["init"])
        for spec in CLI.commands {
            let a = cli.run(["help", spec.name], ledger: false)
            let b = cli.run([spec.name, "--help"], ledger: false)
            #expect(a.code == 0 && a.out == b.out && a.out.contains("usage: moodledger \(spec.name)"), "\(spec.name)")
        }
        let overflow = [
            ["serve", "token", "--user", "a", "--data", cli.dir.sub("srv"), "--ttl", "9223372036854775807d"],
            ["list", "--limit", "99999999999999999999"], ["events", "--after-seq", "99999999999999999999"],
            ["sync", "--concurrency", "99999999999999999999"], ["year", "99999999999999999999"],
            ["log", "--score", "-9223372036854775808"]
        ]
        for words in overflow {
            let result = cli.run(words)
            #expect(result.code == ExitCode.invalidInput, "\(words): \(result.code) \(result.err)")
        }
    }
}
