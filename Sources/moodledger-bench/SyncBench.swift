import EventLog
import Foundation
import MoodLedger
import MoodLedgerServer
import MoodLedgerSync

/// `moodledger-bench --sync`: a device ledger with N pending entries pushed to `moodledger serve` on loopback
/// (`Specs/benchmark.md`, *Sync*).
enum SyncBench {
    static func run(entries: Int, json: Bool) -> Int32 {
        let directory = FileManager.default.temporaryDirectory.path + "/moodledger-bench-sync-\(ProcessInfo.processInfo.processIdentifier)"
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
            var configuration = MoodServer.Configuration(dataDirectory: data)
            configuration.http.port = 0
            configuration.writesPerHour = 0
            configuration.readsPerHour = 0
            configuration.log = { _ in }
            let backend = try MoodServer(configuration: configuration)
            let server = try backend.start()
            let thread = Thread { server.run(grace: 5) }
            thread.start()
            defer {
                server.stop()
                Thread.sleep(forTimeInterval: 0.3)
                backend.close()
            }
            let token = JWT.sign(subject: "bench", now: Int64(Date().timeIntervalSince1970), ttl: 3600, secret: credentials.secret)
            let syncCredentials = SyncCredentials(apiKey: key, token: token)

            // The device: N entries logged (one import batch), then the backend configured.
            let device = directory + "/device"
            try ServerBench.preload(device, entries: entries)
            var options = Ledger.Options()
            options.durability = .batched
            let ledger = try Ledger.open(at: device, options: options)
            defer { ledger.close() }
            _ = try ledger.execute { _, _ in
                ([.remoteConfigured(RemoteConfig(url: "http://127.0.0.1:\(server.port)", dialect: .moodAPI))], .none, false)
            }
            let before = ledger.lastSeq
            var sync = SyncEngine.Configuration()
            sync.seed = 1
            let engine = try SyncEngine(ledger: ledger, credentials: { syncCredentials }, configuration: sync)
            let start = Benchmark.now()
            let report = try engine.run(once: true)
            let seconds = Double(Benchmark.now() - start) / 1e9
            guard report.delivered == entries else {
                FileHandle.standardError.write(Data("moodledger-bench --sync: delivered \(report.delivered) of \(entries)\n".utf8))
                return 1
            }
            let appended = try ledger.events(after: before).filter {
                switch $0.event.type {
                case .syncAttempted, .syncSucceeded, .syncFailed: return true
                default: return false
                }
            }.count
            bench.record("sync_entries", Double(entries), places: 0)
            bench.record("sync_push_entries_per_s", Double(entries) / seconds, places: 0)
            bench.record("sync_run_s", seconds, places: 3)
            bench.record("sync_events_per_delivered", Double(appended) / Double(entries), places: 2)
            bench.record("sync_pulled_pages_changes", Double(report.pulled), places: 0)
        } catch {
            FileHandle.standardError.write(Data("moodledger-bench --sync: \(error)\n".utf8))
            return 74
        }
        bench.printSideResults(json: json)
        return 0
    }
}
