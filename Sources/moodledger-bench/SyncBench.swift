import EventLog
import Foundation
import MoodLedger
import MoodLedgerServer
import MoodLedgerSync

/// `moodledger-bench --sync`: a device ledger with N pending entries pushed to `moodledger serve` on loopback
/// (`Specs/benchmark.md`, *Sync*).
enum SyncBench {
    static func run(entries: Int, concurrency: Int, conflicts: Bool, restarts: Bool = false, json: Bool) -> Int32 {
        let directory =
            FileManager.default.temporaryDirectory.path
            + "/moodledger-bench-sync-\(ProcessInfo.processInfo.processIdentifier)"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var bench = Benchmark(events: 0, directory: directory)
        do {
            let data = directory + "/data"
            try AtomicFile.makeDirectory(data)
            var credentials = try Credentials.load(directory: data, create: true)
            let key = try credentials.addUser("bench")
            try credentials.save(directory: data)
            try AtomicFile.makeDirectory(data + "/users")
            let loopback = try LoopbackServer(data: data)
            let server = loopback.server
            defer { loopback.stop() }
            let token = credentials.token(for: "bench", now: Int64(Date().timeIntervalSince1970), ttl: 3600)!
            let syncCredentials = SyncCredentials(apiKey: key, token: token)
            if restarts {
                loopback.stop()
                try SyncRestartBench.run(
                    entries: entries, data: data, credentials: syncCredentials, directory: directory, into: &bench)
                bench.printSideResults(json: json)
                return 0
            }
            if conflicts {
                try mergeRun(
                    entries: entries, port: server.port, credentials: syncCredentials, concurrency: concurrency,
                    directory: directory, into: &bench)
                bench.printSideResults(json: json)
                return 0
            }

            // The batch route (what the device learns from the server), then one request per entry (a remote
            // recorded without `batch`), each a device of its own with N entries pushed to a user of its own.
            let single = try credentials.addUser("bench-single")
            try credentials.save(directory: data)
            let singleCredentials = SyncCredentials(
                apiKey: single,
                token: credentials.token(for: "bench-single", now: Int64(Date().timeIntervalSince1970), ttl: 3600)!)
            for (name, capabilities, user) in [
                ("", nil, syncCredentials),
                ("_single", RemoteCapabilities.all.subtracting(.batch), singleCredentials)
            ] {
                let (seconds, appended) = try push(
                    directory + "/device" + name, entries: entries, port: server.port, capabilities: capabilities,
                    credentials: user, concurrency: concurrency)
                if name.isEmpty {
                    bench.record("sync_entries", Double(entries), places: 0)
                    bench.record("sync_push_entries_per_s", Double(entries) / seconds, places: 0)
                    bench.record("sync_run_s", seconds, places: 3)
                    bench.record("sync_events_per_delivered", Double(appended) / Double(entries), places: 2)
                } else {
                    bench.record("sync_push_single_entries_per_s", Double(entries) / seconds, places: 0)
                    bench.record("sync_single_run_s", seconds, places: 3)
                }
            }
        } catch {
            FileHandle.standardError.write(Data("moodledger-bench --sync: \(error)\n".utf8))
            return 74
        }
        bench.printSideResults(json: json)
        return 0
    }

    /// A device with `entries` pending (one import batch) pushed in one run to the loopback server.
    /// - Parameter capabilities: what the device records the remote can do; `nil`: it asks (the server says all).
    /// - Returns: the run's seconds and the sync events it appended.
    private static func push(
        _ device: String, entries: Int, port: UInt16, capabilities: RemoteCapabilities?,
        credentials: SyncCredentials, concurrency: Int
    ) throws -> (Double, Int) {
        try ServerBench.preload(device, entries: entries)
        var options = Ledger.Options()
        options.durability = .batched
        let ledger = try Ledger.open(at: device, options: options)
        defer { ledger.close() }
        let remote = RemoteConfig(
            url: "http://127.0.0.1:\(port)", dialect: .moodAPI, capabilities: capabilities ?? [],
            source: capabilities == nil ? .unknown : .set)
        _ = try ledger.execute { _, _ in ([.remoteConfigured(remote)], .none, false) }
        let before = ledger.lastSeq
        var sync = SyncEngine.Configuration()
        sync.seed = 1
        sync.concurrency = concurrency
        let engine = try SyncEngine(ledger: ledger, credentials: { credentials }, configuration: sync)
        let start = Benchmark.now()
        let report = try engine.run(once: true)
        let seconds = Double(Benchmark.now() - start) / 1e9
        guard report.delivered == entries else {
            throw SyncError(.config, "delivered \(report.delivered) of \(entries)")
        }
        let appended = try ledger.events(after: before).filter {
            switch $0.event.type {
            case .syncAttempted, .syncSucceeded, .syncFailed: return true
            default: return false
            }
        }.count
        return (seconds, appended)
    }

    /// `--sync --conflicts`: N entries on two devices, each device edits every entry while apart (device A the
    /// notes, device B the score, and one in ten the notes on both: true conflicts), then A, B and A sync. Seconds to
    /// converge, and events B appended per merged entry.
    static func mergeRun(
        entries: Int, port: UInt16, credentials: SyncCredentials, concurrency: Int, directory: String,
        into bench: inout Benchmark
    ) throws {
        var options = Ledger.Options()
        options.durability = .batched
        var configuration = SyncEngine.Configuration()
        configuration.seed = 1
        configuration.concurrency = concurrency
        let remote = RemoteConfig(url: "http://127.0.0.1:\(port)", dialect: .moodAPI, capabilities: .all, source: .set)
        try ServerBench.preload(directory + "/a", entries: entries)
        options.createIfMissing = true
        let a = try Ledger.open(at: directory + "/a", options: options)
        let b = try Ledger.open(at: directory + "/b", options: options)
        defer {
            a.close()
            b.close()
        }
        func sync(_ ledger: Ledger) throws -> SyncReport {
            try SyncEngine(ledger: ledger, credentials: { credentials }, configuration: configuration).run()
        }
        for ledger in [a, b] { _ = try ledger.execute { _, _ in ([.remoteConfigured(remote)], .none, false) } }
        _ = try sync(a)
        _ = try sync(b)
        let ids = a.state.entries.all.map(\.id)
        guard b.state.entries.all.count == entries else {
            throw SyncError(.config, "device B holds \(b.state.entries.all.count) of \(entries)")
        }
        for (index, id) in ids.enumerated() {
            _ = try a.update(id, MoodChanges(notes: .set("a \(index)")))
            _ = try b.update(
                id, index % 10 == 0 ? MoodChanges(notes: .set("b \(index)")) : MoodChanges(score: index % 10 + 1))
        }
        let before = b.lastSeq
        let start = Benchmark.now()
        _ = try sync(a)
        let merged = try sync(b)
        _ = try sync(a)
        let seconds = Double(Benchmark.now() - start) / 1e9
        let appended = try b.events(after: before).filter { $0.event.type != .syncPulled }.count
        let converged = ids.allSatisfy { id in
            a.entry(id).map { x in b.entry(id).map { ThreeWayMerge.sameContent(x, $0) } ?? false } ?? false
        }
        guard converged, merged.merged == entries else {
            throw SyncError(.config, "not converged: \(merged.merged) of \(entries) merged")
        }
        bench.record("merge_entries", Double(entries), places: 0)
        bench.record("merge_converge_s", seconds, places: 3)
        bench.record("merge_events_per_entry", Double(appended) / Double(entries), places: 2)
        bench.record("merge_true_conflicts", Double(merged.conflicts), places: 0)
        bench.record(
            "merge_lost_edits",
            Double(
                ids.enumerated().filter { index, id in
                    guard let entry = a.entry(id) else { return true }
                    return index % 10 == 0
                        ? entry.notes != "b \(index)"
                        : (entry.notes != "a \(index)" || entry.enteredScore != index % 10 + 1)
                }.count), places: 0)
    }
}
