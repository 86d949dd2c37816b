import Foundation
import MoodLedger
import TestSupport
import Testing

@testable import MoodLedgerSync

/// The planner without a runner: no transport, no threads, no clock of its own. Answers are handed to it as a
/// runner would, and what it plans is appended by the test.
@Suite("The sync planner, without a network")
struct SyncPlannerTests {
    static func planner(_ device: Device) -> SyncPlanner {
        let remote = device.ledger.read { $0.outbox.progress(.backend).remote }!
        return SyncPlanner(
            dialect: SyncDialect(remote), keyTag: "0011223344556677", ignoreBackoff: true, maximumMergesPerRun: 3)
    }

    static func body(_ id: String, notes: String?, valence: Double = 0.25) -> [UInt8] {
        JSONValue.object([
            ("success", .bool(true)),
            (
                "data",
                .object([
                    ("id", .string(id)), ("valence", .double(valence)),
                    ("notes", notes.map { .string($0) } ?? .null)
                ])
            )
        ]).serializedBytes()
    }

    @Test("Each answer is judged against the request it answers: strays, answers without a record, other ids")
    func judged() throws {
        let dir = TemporaryDirectory("planner-judged")
        // A seed backend that makes its own ids.
        let seed = try Device(
            dir.sub("seed"), remote: "http://127.0.0.1:9", dialect: .wellness, capabilities: .seed(.wellness))
        let entry = try seed.ledger.log(MoodDraft(valence: 0.25, labels: ["calm"], notes: "mine")).entry!
        var planner = Self.planner(seed)
        var item = try #require(seed.ledger.read { planner.stillDue(entry.id, in: $0, now: 0) })
        var request = planner.request(for: .create, item: item, entry: entry, key: "k")
        let judge = { (status: Int, headers: [(name: String, value: String)], body: [UInt8]) in
            planner.judge(
                request, operation: item.operation, entryID: entry.id, status: status, headers: headers, body: body,
                now: 0)
        }
        #expect(judge(201, [], Self.body("r1", notes: "mine")).verdict == .delivered(remoteID: "r1", revision: 0))
        // Another request's answer: its notes are not the ones sent.
        guard case .retry(nil, let stray, _) = judge(201, [], Self.body("r2", notes: "theirs")).verdict else {
            Issue.record("a stray answer was taken")
            return
        }
        #expect(stray.contains("describes another record") && stray.contains("notes") && !stray.contains("theirs"))
        // A 204 to a create names no record: which one the server made is unknown.
        guard case .retry(nil, let none, _) = judge(204, [], []).verdict else {
            Issue.record("a create answered without an id was taken")
            return
        }
        #expect(none.contains("names no record"))

        // The reference server: our ids, extensions.
        let reference = try Device(dir.sub("reference"), remote: "http://127.0.0.1:9")
        let own = try reference.ledger.log(MoodDraft(valence: 0.25, labels: ["calm"], notes: "now")).entry!
        planner = Self.planner(reference)
        item = try #require(reference.ledger.read { planner.stillDue(own.id, in: $0, now: 0) })
        request = planner.request(for: .create, item: item, entry: own, key: "k")
        var system = SystemRandomNumberGenerator()
        let other = EntryID.random(using: &system).description
        let answered = planner.judge(
            request, operation: .create, entryID: own.id, status: 201, headers: [],
            body: Self.body(other, notes: "now"), now: 0)
        let attributed = planner.attributed(
            answered.verdict, alreadyThere: answered.alreadyThere, operation: .create, item: item)
        guard case .retry(nil, let another, _) = attributed.verdict else {
            Issue.record("a create answered with another entry's id was taken")
            return
        }
        #expect(another.contains("another entry"))
        // Our id in upper case is our id.
        let upper = planner.attributed(
            .delivered(remoteID: own.id.description.uppercased(), revision: 3), alreadyThere: false,
            operation: .create, item: item)
        #expect(upper.verdict == .delivered(remoteID: own.id.description, revision: 3))
        // 200 under our id, not a replay: the server already had it, an older copy; taken, and to be brought up to
        // date (not compared with what was sent).
        let had = planner.judge(
            request, operation: .create, entryID: own.id, status: 200, headers: [],
            body: Self.body(own.id.description, notes: "older"), now: 0)
        #expect(had.verdict == .delivered(remoteID: own.id.description, revision: 0) && had.alreadyThere)
        let replay = planner.judge(
            request, operation: .create, entryID: own.id, status: 200, headers: [("Idempotent-Replayed", "true")],
            body: Self.body(own.id.description, notes: "now"), now: 0)
        #expect(!replay.alreadyThere)
        // An update answered without an id concerns the record it was sent to.
        var update = item
        update.operation = .update
        update.remoteID = "server-7"
        let kept = planner.attributed(
            .delivered(remoteID: own.id.description, revision: 4), alreadyThere: false, operation: .update,
            item: update)
        #expect(kept.verdict == .delivered(remoteID: "server-7", revision: 4))
    }

    @Test(
        "Seeded answers (right, stray, lost, failed, redirected) through the planner alone: ids never shared, no delete of another's record, no edit lost"
    )
    func plannedRounds() throws {
        for round in 0..<4 {
            let dir = TemporaryDirectory("planner-rounds")
            let backend = HostileWellness(seed: nil)
            var random = SeededRandom(test: "planner rounds, round \(round)")
            let context = "seed \(random.seed), round \(round)"
            let device = try Device(
                dir.sub("device"), remote: "http://127.0.0.1:9", dialect: .wellness, capabilities: .seed(.wellness))
            let ledger = device.ledger
            let planner = Self.planner(device)
            var ids: [EntryID] = []
            for index in 0..<10 {
                ids.append(
                    try ledger.log(MoodDraft(valence: Double(index) / 10 - 0.4, labels: ["calm"], notes: "n\(index)"))
                        .entry.id)
            }
            /// One pass as a runner makes it: attempts appended, each request answered, outcomes appended.
            func pass() throws {
                let due = ledger.read { planner.dueItems(in: $0, now: 0, limit: .max) }
                var batch: [SyncPlanner.Sending] = []
                _ = try ledger.execute { state, now in
                    let planned = planner.attempts(from: due[...], in: state, now: now, limit: 256, replaces: [:])
                    batch = planned.batch
                    return (planned.events, .none, false)
                }
                let holders = ledger.read { state in
                    Dictionary(
                        state.outbox.records.compactMap { key, record in record.remoteID.map { ($0, key.entryID) } },
                        uniquingKeysWith: { first, _ in first })
                }
                var verdicts: [SyncVerdict] = []
                for sending in batch {
                    let request = planner.request(
                        for: sending.item.operation, item: sending.item, entry: sending.entry, key: sending.key)
                    if sending.item.operation == .delete, let remoteID = sending.item.remoteID {
                        #expect(
                            holders[remoteID] == sending.item.entryID,
                            "\(context): a delete is sent only to the entry's own record")
                    }
                    switch backend.handle(request) {
                    case .failure(let kind, let message):
                        verdicts.append(.retry(status: nil, error: "\(kind): \(message)", retryAfter: nil))
                    case .response(let status, let headers, let body):
                        let judged = planner.judge(
                            request, operation: sending.item.operation, entryID: sending.item.entryID,
                            status: status, headers: headers, body: body, now: 0)
                        verdicts.append(
                            planner.attributed(
                                judged.verdict, alreadyThere: judged.alreadyThere,
                                operation: sending.item.operation, item: sending.item
                            ).verdict)
                    }
                }
                var generator = SplitMix64(seed: random.seed &+ UInt64(round))
                _ = try ledger.execute { state, now in
                    let planned = planner.outcomes(
                        of: batch, verdicts, in: state, now: now, evidence: SyncPlanner.Evidence(),
                        random: &generator)
                    return (planned.outcomes.events, .none, false)
                }
                let held = ledger.read { state in state.outbox.records.compactMap { $0.value.remoteID } }
                #expect(Set(held).count == held.count, "\(context): two entries share a server id")
            }
            for step in 0..<15 {
                if let id = ids.randomElement(using: &random), ledger.entry(id) != nil {
                    if Int.random(in: 0..<7, using: &random) == 0 {
                        try ledger.delete(id)
                    } else {
                        _ = try ledger.update(id, MoodChanges(notes: .set("edit \(step)")))
                    }
                }
                try pass()
            }
            backend.calm()
            for _ in 0..<4 {
                _ = try ledger.releaseParked()
                try pass()
            }
            let state = ledger.state
            let records = backend.records
            for id in ids {
                guard let entry = state.entries[id] else { continue }
                let record = state.outbox.record(OutboxKey(entryID: id, destination: .backend))
                #expect(record?.operation == nil, "\(context): \(id) delivered once the backend is honest")
                let remote = try #require(record?.remoteID, "\(context)")
                #expect(records[remote]?["notes"]?.stringValue == entry.notes, "\(context): no edit lost for \(id)")
            }
        }
    }
}
