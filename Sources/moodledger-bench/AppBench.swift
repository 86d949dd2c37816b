import Dispatch
import Foundation
import MoodLedger
import Platform
import Synchronization

/// `moodledger-bench --app [--entries N] [--json]`: the library as an app uses it (`Specs/benchmark.md`, *App*):
/// reads while another thread logs durably, observation latency for this process's commits and another ledger's,
/// an idle observer's processor time, and the `moodledger` binary's `log` beside an app that holds the ledger open.
enum AppBench {
    static func run(entries: Int, json: Bool) -> Int32 {
        let directory = NSTemporaryDirectory() + "moodledger-app-bench-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var results: [(String, JSONValue)] = [("entries", .int(Int64(entries)))]
        func record(_ key: String, _ value: Double, places: Double = 100) {
            results.append((key, .double((value * places).rounded() / places)))
        }
        do {
            let path = directory + "/app.ledger"
            let ledger = try Ledger.open(at: URL(fileURLWithPath: path))  // creates the directories on the way
            let ids = try fill(ledger, entries: entries)

            /// `entry(id)` of a random entry and the first page of `list`: one read as an app's screen makes it (µs).
            var generator = SplitMix64(seed: 20_261_128)
            func timedRead() -> Double {
                let id = ids[Int(generator.next() % UInt64(ids.count))]
                let start = Benchmark.now()
                _ = ledger.entry(id)
                _ = ledger.read { try? $0.list(EntryQuery(limit: 30)) }
                return Double(Benchmark.now() - start) / 1000
            }
            func recordSpread(_ name: String, _ values: [Double]) {
                record(name + "_p50_us", Benchmark.median(values))
                record(name + "_p99_us", Benchmark.percentile(values, 0.99))
                record(name + "_max_us", values.max() ?? 0)
            }

            // The same reads with nothing else running: the reference.
            recordSpread("read_quiet", (0..<3_000).map { _ in timedRead() })

            // Reads on this thread while another logs durably back to back.
            let writing = Atomic<Bool>(true)
            let writer = Thread {
                for index in 0..<400 {
                    _ = try? ledger.log(MoodDraft(valence: Double(index % 200 - 100) / 100, labels: ["calm"]))
                }
                writing.store(false, ordering: .releasing)
            }
            writer.start()
            var reads: [Double] = []
            while writing.load(ordering: .acquiring) { reads.append(timedRead()) }
            recordSpread("read_while_logging", reads)
            results.append(("reads_measured", .int(Int64(reads.count))))

            // Observation: this process's commit → the new value.
            let own = try observeLatency(writer: ledger, observed: ledger, commits: 200, unit: 1e3)
            record("observe_own_commit_p50_us", own.p50)
            record("observe_own_commit_p99_us", own.p99)
            // Another ledger on the same directory (what another process does, through the file system).
            let other = try Ledger.open(at: path)
            let across = try observeLatency(writer: other, observed: ledger, commits: 100, unit: 1e6)
            record("observe_other_commit_p50_ms", across.p50, places: 1000)
            record("observe_other_commit_p99_ms", across.p99, places: 1000)
            other.close()

            // An idle observer's processor time over five seconds.
            let idle = ledger.observe { $0.seq }
            let task = Task { for try await _ in idle {} }
            Thread.sleep(forTimeInterval: 0.5)
            let cpuBefore = SystemIO.processorSeconds()
            let wallBefore = Benchmark.now()
            Thread.sleep(forTimeInterval: 5)
            let cpu = SystemIO.processorSeconds() - cpuBefore
            record("idle_observer_core_pct", cpu / Benchmark.seconds(since: wallBefore) * 100, places: 1000)
            task.cancel()

            // The binary's `log` beside this open ledger, and alone (the ledger closed).
            if let cli = Benchmark.builtCLI {
                let beside = try (0..<15).map { _ in
                    try MeasuredChild.run(cli, ["log", "--score", "5", "--ledger", path])
                }
                ledger.close()
                let alone = try (0..<15).map { _ in
                    try MeasuredChild.run(cli, ["log", "--score", "5", "--ledger", path])
                }
                guard (beside + alone).allSatisfy({ $0.status == 0 }) else { throw BenchError(text: "a log failed") }
                let besideMS = Benchmark.median(beside.map { $0.seconds * 1000 })
                let aloneMS = Benchmark.median(alone.map { $0.seconds * 1000 })
                record("second_process_log_ms", besideMS)
                record("lone_log_ms", aloneMS)
                record("second_process_log_ratio", besideMS / aloneMS)
            } else {
                ledger.close()
                results.append(("second_process_log_ms", .string("skipped: no moodledger beside moodledger-bench")))
            }
        } catch {
            FileHandle.standardError.write(Data("moodledger-bench --app: \(error)\n".utf8))
            return 70
        }
        if json {
            print(JSONValue.object(results).serialized())
        } else {
            for (key, value) in results {
                print("\(key.padding(toLength: 30, withPad: " ", startingAt: 0)) \(value.serialized())")
            }
        }
        return 0
    }

    /// A ledger of `entries` entries, logged 1,000 to a commit; their ids.
    private static func fill(_ ledger: Ledger, entries: Int) throws -> [EntryID] {
        var ids: [EntryID] = []
        ids.reserveCapacity(entries)
        let start: Int64 = 1_500_000_000_000
        var index = 0
        while index < entries {
            let count = min(1_000, entries - index)
            let words = ["calm", "happy", "stressed"]
            var drafts: [MoodDraft] = []
            for i in index..<(index + count) {
                let valence = Double(i % 201 - 100) / 100
                let time = LoggedAt(milliseconds: start + Int64(i) * 600_000, utcOffsetMinutes: 60)
                let notes: String? = i % 3 == 0 ? "note \(i)" : nil
                drafts.append(MoodDraft(valence: valence, labels: [words[i % 3]], notes: notes, loggedAt: time))
            }
            ids += try ledger.log(contentsOf: drafts).map(\.id)
            index += count
        }
        return ids
    }

    /// Commits on `writer`, one at a time, each waited for on `observed`'s observation: the time from the commit's
    /// return to the value that includes it (in `unit`s of nanoseconds: 1e3 µs, 1e6 ms).
    private static func observeLatency(
        writer: Ledger, observed: Ledger, commits: Int, unit: Double
    ) throws -> (p50: Double, p99: Double) {
        let seen = Mutex<(seq: UInt64, at: UInt64)>((0, 0))
        let arrived = DispatchSemaphore(value: 0)
        let stream = observed.observe { $0.seq }
        let task = Task {
            for try await seq in stream {
                seen.withLock { $0 = (seq, Benchmark.now()) }
                arrived.signal()
            }
        }
        defer { task.cancel() }
        arrived.wait()  // the current value
        var latencies: [Double] = []
        for index in 0..<commits {
            let result = try writer.log(MoodDraft(valence: Double(index % 100) / 100))
            let done = Benchmark.now()
            while true {
                let (seq, at) = seen.withLock { $0 }
                if seq >= result.lastSeq {
                    latencies.append(Double(at > done ? at - done : 0) / unit)
                    break
                }
                arrived.wait()
            }
        }
        return (Benchmark.median(latencies), Benchmark.percentile(latencies, 0.99))
    }
}
