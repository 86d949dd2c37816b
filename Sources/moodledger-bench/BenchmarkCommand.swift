import EventLog
import Foundation
import MoodLedger
import MoodLedgerSync
import Platform

/// `moodledger-bench [--events N] [--json] [--keep] [--erasure-only]`: runs every measure (or only the erasure's on
/// a generated ledger) and prints a table or one JSON object.
enum BenchmarkCommand {

    static let targets: [(String, String)] = [
        ("durable_append_p50_us", "≤ 1.3 × raw_fdatasync_p50_us"),
        ("batched_append_events_per_s", "≥ 1,500,000 and ≥ 50 % of raw_batched"),
        ("cold_replay_s", "≤ 0.3 (≤ 3 at 10M)"), ("warm_open_ms", "≤ 20 (≤ 5 at 100k, ≤ 30 at 10M)"),
        ("analytics_ms", "≤ 5"),
        ("time_travel_s", "≤ 0.1"), ("cli_list_ms", "≤ 50 and ≤ 5 × sqlite3_list_ms"), ("cli_peak_rss_mb", "≤ 100"),
        ("bytes_per_event", "≤ 150"), ("snapshot_bytes", "≤ 2 × log bytes"),
        ("cold_replay_peak_rss_mb", "≤ 150 (≤ 1,500 at 10M)"),
        ("peak_rss_mb", "≤ 300 (time travel included)"),
        ("erase_one_s", "≤ 0.1 at 10M"), ("history_ms", "≤ 5 at 10M")
    ]

    /// The command line: one case per flag, each handled in place (long because there are that many flags).
    static func run(_ arguments: [String]) -> Int32 {
        var events = 1_000_000
        var json = false
        var keep = false
        // Only the generated ledger and its erasure measures (`Specs/benchmark.md`): what changing erasure needs.
        var erasureOnly = false
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "--events":
                index += 1
                guard index < arguments.count, let n = Int(arguments[index].replacingOccurrences(of: "_", with: "")),
                    n >= 2_000
                else {
                    FileHandle.standardError.write(Data("moodledger-bench: --events needs a number ≥ 2000\n".utf8))
                    return 64
                }
                events = n
            case "--sizes": print(Sizes.report()); return 0
            case "--app":  // the library as an app uses it (Specs/benchmark.md, App)
                var entries = 100_000
                if let i = arguments.firstIndex(of: "--entries"), i + 1 < arguments.count,
                    let n = Int(arguments[i + 1].replacingOccurrences(of: "_", with: "")), n >= 1_000
                {
                    entries = n
                }
                return AppBench.run(entries: entries, json: arguments.contains("--json"))
            case "--server":  // the reference backend under loopback load (Specs/benchmark.md, Server)
                var seconds = 3.0
                if let i = arguments.firstIndex(of: "--seconds"), i + 1 < arguments.count,
                    let s = Double(arguments[i + 1])
                {
                    seconds = s
                }
                if let i = arguments.firstIndex(of: "--store"), i + 1 < arguments.count {
                    var users = 1_000
                    if let u = arguments.firstIndex(of: "--users"), u + 1 < arguments.count,
                        let n = Int(arguments[u + 1]), n > 0
                    {
                        users = n
                    }
                    var nodes = 2
                    if let n = arguments.firstIndex(of: "--nodes"), n + 1 < arguments.count,
                        let count = Int(arguments[n + 1]), count > 0
                    {
                        nodes = count
                    }
                    return PostgresServerBench.run(
                        url: arguments[i + 1], users: users, nodes: nodes, seconds: seconds,
                        json: arguments.contains("--json"))
                }
                if let i = arguments.firstIndex(of: "--users"), i + 1 < arguments.count,
                    let users = Int(arguments[i + 1]), users > 0
                {
                    return ManyUsersBench.run(users: users, seconds: seconds, json: arguments.contains("--json"))
                }
                return ServerBench.run(seconds: seconds, json: arguments.contains("--json"))
            case "--sync":  // pushing N pending entries to the reference backend (Specs/benchmark.md, Sync)
                var entries = 10_000
                if let i = arguments.firstIndex(of: "--entries"), i + 1 < arguments.count,
                    let n = Int(arguments[i + 1]), n > 0
                {
                    entries = n
                }
                var concurrency = SyncEngine.Configuration().concurrency
                if let i = arguments.firstIndex(of: "--concurrency"), i + 1 < arguments.count,
                    let n = Int(arguments[i + 1]), n > 0
                {
                    concurrency = n
                }
                return SyncBench.run(
                    entries: entries, concurrency: concurrency, conflicts: arguments.contains("--conflicts"),
                    restarts: arguments.contains("--restarts"), json: arguments.contains("--json"))
            case "--json": json = true
            case "--keep": keep = true
            case "--erasure-only": erasureOnly = true
            case "--measure-child":  // internal: a small process that spawns and measures a program
                return MeasuredChild.measureMain(Array(arguments[(index + 1)...]))
            case "--ledger-rss":  // internal: what opening ledgers takes, run as a child process
                return ServerBench.ledgerResidentSize(Array(arguments[(index + 1)...]))
            case "--make-users":  // internal: the many-accounts benchmark's setup, run as a child process
                return ManyUsersBench.make(Array(arguments[(index + 1)...]))
            case "--load-generator":  // internal: the server benchmark's load, run as a child process
                return LoadGenerator.main(Array(arguments[(index + 1)...]))
            case "--generate":  // internal: the load phase, run as a child process
                index += 1
                guard index < arguments.count,
                    let rate = try? Benchmark.generate(events: events, directory: arguments[index])
                else { return 74 }
                print(rate)
                return 0
            case "--open":  // profiling aid: open an existing ledger 5 times (add --cold to skip snapshots,
                // --travel SEQ to time five `state(at: .seq(SEQ))` instead)
                index += 1
                var options = Ledger.Options()
                options.readOnly = true
                options.useSnapshots = !arguments.contains("--cold")
                if let t = arguments.firstIndex(of: "--travel"), t + 1 < arguments.count,
                    let seq = UInt64(arguments[t + 1])
                {
                    guard let ledger = try? Ledger.open(at: arguments[index], options: options) else { return 74 }
                    for _ in 0..<5 {
                        let start = Benchmark.now()
                        guard let past = try? ledger.state(at: .seq(seq)) else { return 74 }
                        print("travel to \(past.seq): \(Benchmark.seconds(since: start) * 1000) ms")
                    }
                    ledger.close()
                    return 0
                }
                for _ in 0..<5 {
                    let start = Benchmark.now()
                    guard let ledger = try? Ledger.open(at: arguments[index], options: options) else { return 74 }
                    let peak = Double(SystemIO.peakResidentBytes()) / 1_048_576
                    print("open: \(Benchmark.seconds(since: start) * 1000) ms, peak \(peak) MiB, \(ledger.notices)")
                    ledger.close()
                    withExtendedLifetime(ledger) {}
                }
                return 0
            case "--erasure-on":  // profiling aid: the erasure measures on a generated ledger (DIR/ledger), which
                // they change: run it on a copy
                index += 1
                guard index < arguments.count else { return 64 }
                var bench = Benchmark(events: events, directory: arguments[index])
                do { try bench.erasure() } catch {
                    FileHandle.standardError.write(Data("moodledger-bench: \(error)\n".utf8))
                    return 74
                }
                bench.printSideResults(json: arguments.contains("--json"))
                return 0
            case "--help", "-h":
                print(
                    "usage: moodledger-bench [--events N] [--json] [--keep] [--erasure-only]   (default N = 1,000,000; see Specs/benchmark.md)\n"
                        + "       moodledger-bench --server [--seconds 3] [--json]   (the reference backend under loopback load)\n"
                        + "       moodledger-bench --app [--entries 100000] [--json]   (reads, observation and processes as an app sees them)\n"
                        + "       moodledger-bench --server --users N [--seconds 3]   (many accounts, a random user per request)\n"
                        + "       moodledger-bench --server --store postgresql://… [--users 1000] [--nodes 2] [--seconds 3]   (over PostgreSQL)\n"
                        + "       moodledger-bench --sync [--entries 10000] [--concurrency N] [--conflicts | --restarts] [--json]   (pushing pending entries to the reference backend; --conflicts: two devices merging; --restarts: two devices across server restarts)"
                )
                return 0
            default:
                FileHandle.standardError.write(Data("moodledger-bench: unknown argument \(arguments[index])\n".utf8))
                return 64
            }
            index += 1
        }
        return measureLedger(events: events, json: json, keep: keep, erasureOnly: erasureOnly)
    }

    /// The ledger measures on a generated ledger of `events` events (`Specs/benchmark.md`, *Measures*), printed
    /// as a table or one JSON object.
    /// - Returns: the exit status (74 when a measure failed).
    static func measureLedger(events: Int, json: Bool, keep: Bool, erasureOnly: Bool) -> Int32 {
        let directory =
            FileManager.default.temporaryDirectory.path
            + "/moodledger-bench-\(ProcessInfo.processInfo.processIdentifier)"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(atPath: directory) } }
        var bench = Benchmark(events: events, directory: directory)
        do {
            if erasureOnly {
                _ = try generateInChild(events: events, directory: directory)
                try bench.erasure()
            } else {
                try bench.rawSync()
                let rate = try generateInChild(events: events, directory: directory)
                bench.record("batched_append_events_per_s", rate, places: 0)
                try bench.rawBatched()
                try bench.durableAppends(sample: Benchmark.sample(1_000))
                try bench.ledgerMeasures()
                // The replay measures' peak, before the erasure (which holds every erased id) raises it.
                bench.record("peak_rss_mb", Double(SystemIO.peakResidentBytes()) / 1_048_576, places: 1)
                try bench.erasure()
                try bench.importMeasures(rows: max(1_000, events * 19 / 10))
            }
        } catch {
            FileHandle.standardError.write(Data("moodledger-bench: \(error)\n".utf8))
            return 74
        }
        bench.results.append(("events", .int(Int64(events))))
        bench.results.append(("swift_version", .string(swiftVersion)))
        bench.results.append(("machine", .string(machine)))
        if json {
            print(JSONValue.object(bench.results).serialized())
        } else {
            for (key, value) in bench.results {
                let target = targets.first { $0.0 == key }?.1 ?? ""
                print(
                    key.padding(toLength: 30, withPad: " ", startingAt: 0)
                        + value.serialized().padding(toLength: 22, withPad: " ", startingAt: 0) + target)
            }
        }
        return 0
    }

    /// Runs the load phase in a child process (its memory is not the replay's) and reads its throughput.
    static func generateInChild(events: Int, directory: String) throws -> Double {
        let output = try runSelf(["--events", String(events), "--generate", directory])
        guard let rate = Double(output) else { throw BenchError(text: "the load phase said: \(output)") }
        return rate
    }

    /// Runs this executable again with `arguments` and returns what it printed (trimmed).
    /// - Throws: ``BenchError`` when it exits non-zero.
    static func runSelf(_ arguments: [String]) throws -> String {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
            // No child processes there (no `Process`): the benchmark is a tool for Linux and macOS.
            throw BenchError(text: "\(arguments.first ?? "") needs a child process, which this platform cannot start")
        #else
            return try runSelfInChild(arguments)
        #endif
    }

    #if !(os(iOS) || os(tvOS) || os(watchOS) || os(visionOS))
        private static func runSelfInChild(_ arguments: [String]) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: ProcessInfo.processInfo.arguments[0]).standardizedFileURL
            if !FileManager.default.isExecutableFile(atPath: process.executableURL!.path) {
                process.executableURL = Bundle.main.executableURL
            }
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw BenchError(text: "\(arguments.first ?? "") failed (exit \(process.terminationStatus))")
            }
            return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
    #endif

    static var swiftVersion: String {
        #if swift(>=6.3)
            return "6.3+"
        #elseif swift(>=6.2)
            return "6.2"
        #else
            return "6.x"
        #endif
    }

    static var machine: String {
        let info = ProcessInfo.processInfo
        return
            "\(info.activeProcessorCount) cores, \(info.physicalMemory / 1_073_741_824) GiB, \(info.operatingSystemVersionString)"
    }
}
