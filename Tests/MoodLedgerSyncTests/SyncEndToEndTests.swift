import Foundation
import MoodLedger
import MoodLedgerSync
import TestSupport
import Testing

@Suite("Sync end to end against moodledger serve")
struct SyncEndToEndTests {
    @Test("Two devices and the server converge: creates, edits and deletes on either side")
    func converge() throws {
        let dir = TemporaryDirectory("sync-e2e")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let a = try Device(dir.sub("a"), remote: server.url)
        let b = try Device(dir.sub("b"), remote: server.url)
        var ids: [EntryID] = []
        for i in 0..<20 { ids.append(try a.log(Double(i % 10) / 10 - 0.45, notes: i % 3 == 0 ? "note \(i)" : nil)) }
        _ = try a.ledger.log(MoodDraft(score: 7, labels: ["calm"], tags: ["walk"]))
        let first = try a.sync(server.credentials)
        #expect(first.delivered == 21 && first.isComplete)
        try b.sync(server.credentials)
        #expect(Content.of(b.ledger.state.entries.all) == Content.of(a.ledger.state.entries.all))
        #expect(b.ledger.state.entries.all.contains { $0.enteredScore == 7 }, "a typed score is pulled as typed")

        // Edits on both sides, a delete on each, a new entry on each.
        _ = try b.ledger.update(ids[0], MoodChanges(valence: -0.9))
        try b.ledger.delete(ids[1])
        _ = try b.ledger.editLabels(ids[2], .set(["sad", "tired"]))
        _ = try a.ledger.update(ids[3], MoodChanges(notes: .set("edited on a")))
        try a.ledger.delete(ids[4])
        try b.log(0.3, label: "calm")
        try a.log(-0.3, label: "stressed")
        for _ in 0..<2 {
            try a.sync(server.credentials)
            try b.sync(server.credentials)
        }
        let device = Content.of(a.ledger.state.entries.all)
        #expect(device == Content.of(b.ledger.state.entries.all))
        server.stop()
        let onServer = try server.entries()
        #expect(Content.of(onServer) == device)
        #expect(Set(onServer.map(\.id)).count == onServer.count)
        #expect(a.ledger.state.outboxItems(destination: .backend).isEmpty)
        #expect(b.ledger.state.outboxItems(destination: .backend).isEmpty)
        // Replaying the device's log gives the same state (the sync events are pure folds).
        let replayed = try a.replayed()
        #expect(replayed.outbox == a.ledger.state.outbox)
        #expect(Content.of(replayed.entries.all) == device)
    }

    @Test("A skewed device clock does not decide: the change that reaches the server last wins")
    func clockSkew() throws {
        let dir = TemporaryDirectory("sync-skew")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let ahead = try Device(dir.sub("ahead"), remote: server.url, skewMilliseconds: 86_400_000)
        let behind = try Device(dir.sub("behind"), remote: server.url, skewMilliseconds: -86_400_000)
        let id = try ahead.log(0.1)
        try ahead.sync(server.credentials)
        try behind.sync(server.credentials)
        _ = try ahead.ledger.update(id, MoodChanges(valence: 0.9))  // "later" by its clock, sent first
        try ahead.sync(server.credentials)
        _ = try behind.ledger.update(id, MoodChanges(valence: -0.9))  // "earlier" by its clock, sent last
        try behind.sync(server.credentials)
        try ahead.sync(server.credentials)
        #expect(ahead.ledger.entry(id)?.valence == -0.9)
        #expect(behind.ledger.entry(id)?.valence == -0.9)
    }

    @Test(
        "A remote change to an entry with an unsent local change is merged; the same field changed on both is a recorded conflict and the local change wins"
    )
    func conflict() throws {
        let shared = try SharedEntry(TemporaryDirectory("sync-conflict"))
        let (server, a, b, id) = (shared.server, shared.a, shared.b, shared.id)
        defer { withExtendedLifetime(shared) { server.stop() } }
        _ = try b.ledger.update(id, MoodChanges(valence: 0.5))
        try b.sync(server.credentials)
        _ = try a.ledger.update(id, MoodChanges(valence: -0.5))
        // a's PUT fails (503), then its pull meets b's change while a's is unsent.
        let failing = FaultyTransport(HTTPTransport(url: try RemoteURL(server.url))) { _, request in
            request.method == "PUT"
                ? .answer(503, [], #"{"success":false,"error":{"code":"down","message":"maintenance"}}"#) : nil
        }
        let report = try a.sync(server.credentials, transport: failing)
        #expect(report.conflicts == 1)
        #expect(a.ledger.entry(id)?.valence == -0.5, "the local change is kept")
        let history = try a.ledger.history(of: id).map(\.event.event)
        #expect(
            history.contains {
                if case .syncMerged(let merge) = $0 { return merge.conflicts == .mood } else { return false }
            })
        let story = try SyncExplanation.explain(id, in: a.ledger)
        #expect(
            story.steps.contains {
                $0.text.contains("mood: conflict — base valence 0.1, here valence -0.5, server valence 0.5")
            }, "\(story.text)")
        #expect(story.steps.contains { $0.text.contains("HTTP 503: maintenance") })
        // The retry (no new local write needed) lands last and wins everywhere.
        a.advance(20 * 60_000)
        try a.sync(server.credentials)
        try b.sync(server.credentials)
        #expect(b.ledger.entry(id)?.valence == -0.5)
    }

    @Test("A server restored from an old copy of its data directory: the client notices and re-uploads what it lacks")
    func restoredServer() throws {
        let dir = TemporaryDirectory("sync-restore")
        var server = try SyncServer(dir: dir.sub("server"))
        let a = try Device(dir.sub("a"), remote: server.url)
        for i in 0..<5 { try a.log(Double(i) / 10) }
        try a.sync(server.credentials)
        server.stop()
        try FileManager.default.copyItem(atPath: dir.sub("server"), toPath: dir.sub("backup"))
        server = try SyncServer(dir: dir.sub("server"), port: server.port)
        for i in 0..<5 { try a.log(-Double(i) / 10) }
        try a.sync(server.credentials)
        server.stop()
        try FileManager.default.removeItem(atPath: dir.sub("server"))
        try FileManager.default.moveItem(atPath: dir.sub("backup"), toPath: dir.sub("server"))
        #expect(try server.entries().count == 5)
        server = try SyncServer(dir: dir.sub("server"), port: server.port)
        defer { server.stop() }
        let report = try a.sync(server.credentials)
        #expect(report.serverWentBack)
        #expect(report.requeued == 5)
        server.stop()
        #expect(Content.of(try server.entries()) == Content.of(a.ledger.state.entries.all))
    }
}

@Suite("Sync dialects")
struct SyncDialectTests {
    @Test("wellness pushes through the CRUD routes; progress creates 1–10 records and holds what it cannot carry")
    func dialects() throws {
        let dir = TemporaryDirectory("sync-dialects")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let wellness = try Device(dir.sub("w"), remote: server.url, dialect: .wellness)
        let id = try wellness.log(0.4, notes: "w")
        try wellness.sync(server.credentials)
        _ = try wellness.ledger.update(id, MoodChanges(valence: -0.4))
        let other = try wellness.log(0.1)
        try wellness.ledger.delete(other)
        let report = try wellness.sync(server.credentials)
        #expect(report.isComplete && report.pulled == 0)

        let progress = try Device(dir.sub("p"), remote: server.url, dialect: .progress)
        let scored = try progress.ledger.log(MoodDraft(score: 8, labels: ["happy"])).entry.id
        let labelsOnly = try progress.ledger.log(MoodDraft(labels: ["calm"])).entry.id
        let first = try progress.sync(server.credentials)
        #expect(first.delivered == 1 && first.parked == 0 && first.heldAfter == 1 && first.isComplete)
        _ = try progress.ledger.update(scored, MoodChanges(score: 3))
        let second = try progress.sync(server.credentials)
        #expect(second.sent == 0 && second.heldAfter == 2 && second.isComplete)
        let held = SyncStatus.of(progress.ledger.state, now: 0).first { $0.destination == .backend }!.held
        #expect(held.map(\.entryID).sorted() == [scored, labelsOnly].sorted())
        #expect(held.contains { $0.text.contains("cannot update") })
        #expect(plannedPaths(progress).isEmpty, "held items are not planned")
        server.stop()
        let onServer = try server.entries()
        #expect(onServer.contains { $0.id == id && $0.valence == -0.4 })
        #expect(!onServer.contains { $0.id == other })
        #expect(
            onServer.contains { $0.enteredScore == 8 && $0.labels.isEmpty }, "a progress record carries the score only")
    }

    func plannedPaths(_ device: Device) -> [String] {
        (try? SyncEngine(ledger: device.ledger, credentials: { SyncCredentials() }).plannedRequests().map(\.path)) ?? [
            "error"
        ]
    }
}
