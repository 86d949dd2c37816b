import Foundation
import MoodLedger
import MoodLedgerSync
import Synchronization
import TestSupport
import Testing

/// 2–4 devices of one account edit random fields of shared entries concurrently, sync in random orders through
/// random faults (lost answers, failures before sending, 5xx, a kill between an attempt and its outcome), then converge. Every edit survives unless a later
/// edit of the same field replaced it knowingly (by a device that held it) or a merge listed it as a conflict.
@Suite("Merge properties")
struct MergePropertyTests {
    /// One edit: which device wrote which value into which field of which entry, and whether a later edit replaced
    /// it knowingly (its writer, or a device that held the value, edited the field again).
    struct Write {
        var device: Int
        var entry: EntryID
        var field: MergeFields
        var value: String
        var replacedKnowingly = false
    }

    static func value(_ field: MergeFields, of entry: MoodEntry?) -> String? {
        guard let entry else { return nil }
        switch field {
        case .notes: return entry.notes
        case .mood:
            if let score = entry.enteredScore { return "score \(score)" }
            return entry.valence.map { "\(Valence.display($0))" }
        default: return nil
        }
    }

    @Test(
        "Concurrent edits on 2–4 devices with faults: converged, no tag lost, every lost value a listed conflict",
        arguments: [nil, 7_493_122_058_111_004_311] as [UInt64?])
    func concurrentEdits(seed: UInt64?) throws {
        var random = SeededRandom(seed: seed)
        let dir = TemporaryDirectory("merge-property")
        // The server restarts (its ledgers closed, the revisions derived again on open) and goes down at random.
        var server = try SyncServer(dir: dir.sub("server"))
        let port = server.port
        let credentials = server.credentials
        defer { server.stop() }
        let count = Int.random(in: 2...4, using: &random)
        // Odd devices push through the batch route (a lost or failed batch fails all its items at once), even
        // ones one request per entry.
        let devices = try (0..<count).map {
            try Device(
                dir.sub("d\($0)"), remote: server.url,
                capabilities: $0 % 2 == 1 ? .all : RemoteCapabilities.all.subtracting(.batch))
        }
        let faults = SyncPropertyTests.Faults(seed: random.next(), rate: 0.2)
        let plain = HTTPTransport(url: try RemoteURL(server.url))
        let faulty = FaultyTransport(plain) { _, _ in faults.next() }
        let ids = try (0..<3).map { _ in try devices[0].log(0.1, label: "calm", notes: "start") }
        for device in devices { try device.sync(credentials) }
        #expect(devices.allSatisfy { $0.ledger.state.entries.all.count == 3 })

        var writes: [Write] = []
        var tags: [EntryID: Set<String>] = [:]
        var serial = 0
        var kills = 0
        var restarts = 0
        var outages = 0
        // One run appends at most 12 events per entry (4 attempts, 4 outcomes, 3 merges, a re-queue).
        func checkBound(_ device: Device, after seq: UInt64) throws {
            var perEntry: [EntryID: Int] = [:]
            for recorded in try device.ledger.events(after: seq) { perEntry[recorded.event.entryID, default: 0] += 1 }
            perEntry[EntryID.none] = nil
            #expect((perEntry.values.max() ?? 0) <= 12, "events per entry in one run: \(perEntry), seed \(random.seed)")
        }
        for round in 0..<10 {
            for (index, device) in devices.enumerated() {
                for _ in 0..<Int.random(in: 0...3, using: &random) {
                    serial += 1
                    let id = ids.randomElement(using: &random)!
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0, 1:
                        let field: MergeFields = Bool.random(using: &random) ? .notes : .mood
                        let before = Self.value(field, of: device.ledger.entry(id))
                        for w in writes.indices
                        where writes[w].entry == id && writes[w].field == field
                            && (writes[w].value == before || writes[w].device == index)
                        {
                            writes[w].replacedKnowingly = true
                        }
                        let entry: MoodEntry
                        if field == .notes {
                            entry = try device.ledger.update(
                                id, MoodChanges(notes: .set("d\(index)-r\(round)-\(serial)")))
                        } else if Bool.random(using: &random) {
                            // A typed score (never the one the entry has here: that would change nothing), which must
                            // stay typed on every device and on the server.
                            var score = serial % 10 + 1
                            if device.ledger.entry(id)?.enteredScore == score { score = score % 10 + 1 }
                            entry = try device.ledger.update(id, MoodChanges(score: score))
                        } else {
                            entry = try device.ledger.update(
                                id, MoodChanges(valence: Double(serial % 997) / 1000 - 0.4))
                        }
                        writes.append(
                            Write(device: index, entry: id, field: field, value: Self.value(field, of: entry)!))
                    default:
                        let tag = "t\(index)-\(round)-\(serial)"
                        _ = try device.ledger.editTags(id, .add(tag))
                        tags[id, default: []].insert(tag)
                    }
                }
            }
            if Int.random(in: 0..<3, using: &random) == 0 {
                // A kill between attempt and outcome: one pending change's attempt is recorded, the server applies
                // the request, and the outcome is never recorded. The next run resends it under the same key.
                let device = devices.randomElement(using: &random)!
                let engine = try SyncEngine(ledger: device.ledger, credentials: { credentials })
                if let request = engine.plannedRequests().filter({ $0.method != "POST" }).randomElement(using: &random),
                    let key = request.idempotencyKey, let id = EntryID(String(key.prefix(36)))
                {
                    try device.ledger.recordSyncAttempt(id, to: .backend, key: key)
                    _ = plain.perform(request, credentials: credentials)
                    kills += 1
                }
            }
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                // A restart between rounds (sometimes right after an attempt whose outcome was never recorded).
                server.stop()
                server = try SyncServer(dir: dir.sub("server"), port: port)
                restarts += 1
            case 1:
                // An outage: every device syncs with --now against nothing, then the server comes back.
                server.stop()
                for device in devices {
                    let before = device.ledger.lastSeq
                    let report = try device.sync(credentials, seed: random.next(), concurrency: 1, now: true)
                    #expect(report.parked == 0, "an outage parked items: \(random.seed)")
                    try checkBound(device, after: before)
                }
                server = try SyncServer(dir: dir.sub("server"), port: port)
                outages += 1
            default: break
            }
            for index in (0..<count).shuffled(using: &random) {
                devices[index].advance(Int64.random(in: 0...3_000, using: &random))
                let before = devices[index].ledger.lastSeq
                try devices[index].sync(
                    credentials, transport: faulty, seed: random.next(), concurrency: 1,
                    now: Bool.random(using: &random))
                try checkBound(devices[index], after: before)
            }
        }
        // Fault-free, every retry due: sync until nothing moves.
        for _ in 0..<4 {
            for device in devices {
                device.advance(60 * 60_000)
                try device.sync(credentials, transport: plain)
            }
        }
        let context = "seed \(random.seed), \(count) devices"
        let first = Content.of(devices[0].ledger.state.entries.all)
        for device in devices {
            #expect(Content.of(device.ledger.state.entries.all) == first, "converged: \(context)")
            #expect(device.ledger.state.outboxItems(destination: .backend).isEmpty, "\(context)")
            let replayed = try device.replayed()
            #expect(
                replayed.outbox == device.ledger.state.outbox && replayed.entries == device.ledger.state.entries,
                "replay == live: \(context)")
        }
        // Adds never conflict: every tag is there.
        for id in ids {
            let final = Set(devices[0].ledger.entry(id)?.tags ?? [])
            #expect((tags[id] ?? []).isSubset(of: final), "tags lost on \(id): \(context)")
        }
        // A value that is not final and was not replaced knowingly was replaced by a concurrent edit: some device's
        // merge must list it as a conflict with both values.
        var listed: Set<String> = []
        for device in devices {
            for recorded in try device.ledger.events(ofType: .syncMerged) {
                guard case .syncMerged(let merge) = recorded.event else { continue }
                for field in [MergeFields.notes, .mood] where merge.conflicts.contains(field) {
                    for version in [merge.here, merge.theirs] {
                        if let value = Self.value(field, of: version) {
                            listed.insert("\(merge.entryID) \(field.rawValue) \(value)")
                        }
                    }
                }
            }
        }
        let merges = try devices.reduce(0) { $0 + (try $1.ledger.events(ofType: .syncMerged).count) }
        let requeues = try devices.reduce(0) { $0 + (try $1.ledger.events(ofType: .syncRequeued).count) }
        #expect(requeues == 0, "a server that never went back made \(requeues) re-queues: \(context)")
        print(
            "[concurrentEdits] \(context): \(writes.count) writes, \(merges) merges, \(kills) kills, \(restarts) restarts, \(outages) outages, \(listed.count) conflicting values listed"
        )
        for write in writes where !write.replacedKnowingly {
            let final = Self.value(write.field, of: devices[0].ledger.entry(write.entry))
            if final == write.value { continue }
            #expect(
                listed.contains("\(write.entry) \(write.field.rawValue) \(write.value)"),
                "device \(write.device)'s \(write.field.names) \(write.value) on \(write.entry) vanished unlisted: \(context)"
            )
        }
        // The conflicts are a fold over the log: at every point, folding the events so far equals asking as of
        // that point (time travel), and a snapshot changes nothing.
        for device in devices {
            var fold = ConflictsFold()
            for recorded in try device.ledger.events() {
                fold.apply(recorded)
                if recorded.seq % 7 == 0 || recorded.seq == device.ledger.lastSeq {
                    #expect(
                        try device.ledger.conflicts(through: recorded.seq) == fold.conflicts,
                        "seq \(recorded.seq): \(context)")
                }
            }
            let live = try device.ledger.conflicts()
            try device.ledger.snapshot()
            #expect(try device.replayedConflicts() == live, "\(context)")
        }
        server.stop()
        let onServer = try server.entries()
        #expect(Content.of(onServer) == first, "\(context)")
        #expect(onServer.count == 3)
    }
}
