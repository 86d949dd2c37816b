import Foundation
import MoodLedger
import MoodLedgerServer
import MoodLedgerSync

/// `moodledger-bench --sync --restarts`: two devices of one account edit apart (A the notes of a third of the
/// entries, B the typed score of a fifth, each round), the server restarts before every round, and A, B, A sync.
/// Counts edits lost, revisions that went back across a restart, and the most events one run appended for one entry
/// (`Specs/benchmark.md`, *Sync*).
enum SyncRestartBench {
    static let rounds = 6

    static func run(
        entries: Int, data: String, credentials: SyncCredentials, directory: String, into bench: inout Benchmark
    ) throws {
        var server = try LoopbackServer(data: data)
        let port = server.port
        defer { server.stop() }
        var options = Ledger.Options()
        options.durability = .batched
        options.createIfMissing = true
        let remote = RemoteConfig(url: "http://127.0.0.1:\(port)", dialect: .moodAPI, capabilities: .all, source: .set)
        try ServerBench.preload(directory + "/a", entries: entries)
        let a = try Ledger.open(at: directory + "/a", options: options)
        let b = try Ledger.open(at: directory + "/b", options: options)
        defer {
            a.close()
            b.close()
        }
        var configuration = SyncEngine.Configuration()
        configuration.seed = 1
        var mostPerEntry = 0
        func sync(_ ledger: Ledger) throws {
            let before = ledger.lastSeq
            _ = try SyncEngine(ledger: ledger, credentials: { credentials }, configuration: configuration).run()
            var perEntry: [EntryID: Int] = [:]
            for recorded in try ledger.events(after: before) where recorded.event.entryID != EntryID.none {
                perEntry[recorded.event.entryID, default: 0] += 1
            }
            mostPerEntry = max(mostPerEntry, perEntry.values.max() ?? 0)
        }
        for ledger in [a, b] { _ = try ledger.execute { _, _ in ([.remoteConfigured(remote)], .none, false) } }
        try sync(a)
        try sync(b)
        let ids = a.state.entries.all.map(\.id)
        var notes: [EntryID: String] = [:]
        var scores: [EntryID: Int] = [:]
        var wentBack = 0
        let transport = HTTPTransport(url: try RemoteURL("http://127.0.0.1:\(port)"))
        let start = Benchmark.now()
        for round in 0..<rounds {
            for (index, id) in ids.enumerated() {
                if index % 3 == round % 3 {
                    let note = "a \(round) \(index)"
                    notes[id] = note
                    _ = try a.update(id, MoodChanges(notes: .set(note)))
                }
                if index % 5 == round % 5 {
                    let score = (index + round) % 10 + 1
                    scores[id] = score
                    _ = try b.update(id, MoodChanges(score: score))
                }
            }
            let before = try revisions(transport, credentials)
            server.stop()
            server = try LoopbackServer(data: data, port: port)
            let after = try revisions(transport, credentials)
            wentBack += before.filter { id, revision in (after[id] ?? 0) < revision }.count
            for ledger in [a, b, a] { try sync(ledger) }
        }
        try sync(b)
        let seconds = Double(Benchmark.now() - start) / 1e9
        let lost = ids.filter { id in
            [a, b].contains { ledger in
                guard let entry = ledger.entry(id) else { return true }
                return (notes[id].map { entry.notes != $0 } ?? false)
                    || (scores[id].map { entry.enteredScore != $0 } ?? false)
            }
        }.count
        bench.record("restart_entries", Double(entries), places: 0)
        bench.record("restart_rounds", Double(rounds), places: 0)
        bench.record("restart_run_s", seconds, places: 3)
        bench.record("restart_lost_edits", Double(lost), places: 0)
        bench.record("restart_revisions_back", Double(wentBack), places: 0)
        bench.record("restart_events_entry_run", Double(mostPerEntry), places: 0)
    }

    /// Every entry's revision in the server's changes feed.
    static func revisions(_ transport: HTTPTransport, _ credentials: SyncCredentials) throws -> [String: Int] {
        var result: [String: Int] = [:]
        var since = 0
        while true {
            let request = SyncRequest(
                method: "GET", path: "/api/v1/mood/changes?since=\(since)&limit=1000",
                maximumResponseBytes: SyncLimits.changesPageBytes(limit: 1000))
            guard case .response(200, _, let body) = transport.perform(request, credentials: credentials),
                let data = try JSONParser.parse(String(decoding: body, as: UTF8.self))["data"]
            else { throw SyncError(.unavailable, "the changes feed did not answer") }
            for change in data["changes"]?.arrayValue ?? [] {
                if let id = change["id"]?.stringValue, let revision = change["revision"]?.intValue {
                    result[id] = revision
                }
            }
            guard data["has_more"] == .bool(true), let next = data["next_since"]?.intValue, next > since else {
                return result
            }
            since = next
        }
    }
}
