import EventLog
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// Seeded ids so runs with the same seed are identical.
final class IDSource: Sendable {
    let state: Mutex<SeededRandom>
    init(seed: UInt64) { state = Mutex(SeededRandom(seed: seed, test: "ids")) }
    func next() -> EntryID { state.withLock { EntryID.random(using: &$0) } }
}

func ledgerOptions(clock: ManualClock, ids: IDSource? = nil, snapshotInterval: Int = 10_000) -> Ledger.Options {
    var options = Ledger.Options()
    options.clock = { clock.now }
    options.utcOffsetMinutes = 60
    options.snapshotInterval = snapshotInterval
    options.sparseSnapshotInterval = 50
    options.lockWaitMilliseconds = 2000
    if let ids { options.newID = { ids.next() } }
    return options
}

/// The bytes of a snapshot encoded afresh from a replay of the whole log (what any snapshot of it must equal).
func snapshotEncodedFromReplay(_ ledger: Ledger) throws -> [UInt8] {
    var replayed = LedgerState()
    try ledger.eventLog.forEach(from: 1, through: ledger.lastSeq) { view in
        try replayed.fold(view)
        return true
    }
    let location = try #require(ledger.eventLog.lastRecord)
    return try SnapshotWriter.file(
        of: replayed, positions: try ledger.eventLog.indexPositions(through: location.seq), location: location,
        fileID: ledger.eventLog.fileID)
}

/// Drives a ledger with a seeded random mix of every command, recording the live state at every step.
struct Workload {
    var random: SeededRandom
    let clock: ManualClock
    var ids: [EntryID] = []

    static let labelPool = [
        "calm", "happy", "indifferent", "stressed", "content", "surprised", "drained", "anxious",
        "grateful", "joyful", "hopeless", "proud", "my own word"
    ]
    static let associationPool = ["work", "family", "friends", "fitness", "weather", "hobbies", "sport", "gardening"]

    mutating func valence() -> Double { (Double.random(in: -1...1, using: &random) * 1000).rounded() / 1000 }

    mutating func step(_ ledger: Ledger) throws {
        clock.advance(Int64.random(in: 60_000...40_000_000, using: &random))
        let roll = Int.random(in: 0..<100, using: &random)
        let target = ids.randomElement(using: &random)
        do {
            switch roll {
            case 0..<35 where true:
                var draft = MoodDraft(
                    labels: (0..<Int.random(in: 0...3, using: &random)).map { _ in
                        Self.labelPool.randomElement(using: &random)!
                    },
                    associations: (0..<Int.random(in: 0...2, using: &random)).map { _ in
                        Self.associationPool.randomElement(using: &random)!
                    })
                if Bool.random(using: &random) || draft.labels.isEmpty {
                    if Int.random(in: 0..<4, using: &random) == 0 {
                        draft.score = Int.random(in: 1...10, using: &random)
                    } else {
                        draft.valence = valence()
                    }
                }
                if Int.random(in: 0..<3, using: &random) == 0 {
                    draft.notes = "note \(Int.random(in: 0..<999, using: &random))"
                }
                if Int.random(in: 0..<6, using: &random) == 0 { draft.kind = .dailyMood }
                if Int.random(in: 0..<8, using: &random) == 0 {
                    draft.source = .healthkit
                    draft.sourceID = "HK-\(Int.random(in: 0..<40, using: &random))"
                }
                if Int.random(in: 0..<10, using: &random) == 0 {
                    draft.source = .backend; draft.sourceID = "B-\(ids.count)"
                }
                let offset = Int64.random(in: -3 * 86_400_000...0, using: &random)
                draft.loggedAt = LoggedAt(
                    milliseconds: clock.now + offset,
                    utcOffsetMinutes: [0, 60, -300, 330].randomElement(using: &random)!)
                let outcome = try ledger.log(draft)
                if outcome.created { ids.append(outcome.entry.id) }
            case 35..<47:
                guard let target else { return }
                var changes = MoodChanges()
                switch Int.random(in: 0..<4, using: &random) {
                case 0: changes.valence = valence()
                case 1: changes.score = Int.random(in: 1...10, using: &random)
                case 2: changes.notes = Bool.random(using: &random) ? .set("changed") : .clear
                default:
                    changes.loggedAt = LoggedAt(
                        milliseconds: clock.now - Int64.random(in: 0...900_000_000, using: &random))
                }
                try ledger.update(target, changes)
            case 47..<55:
                guard let target else { return }
                try ledger.editLabels(
                    target,
                    Bool.random(using: &random)
                        ? .add(Self.labelPool.randomElement(using: &random)!)
                        : .remove(Self.labelPool.randomElement(using: &random)!))
            case 55..<60:
                guard let target else { return }
                try ledger.editAssociations(target, .set([Self.associationPool.randomElement(using: &random)!]))
            case 60..<63:
                guard let target else { return }
                try ledger.editTags(target, .add("tag\(Int.random(in: 0..<5, using: &random))"))
            case 63..<70:
                guard let target else { return }
                try ledger.delete(target)
            case 70..<80:
                guard let target else { return }
                try ledger.recordSyncAttempt(
                    target, to: SyncDestination.allCases.randomElement(using: &random)!,
                    key: Bool.random(using: &random) ? "\(target).\(ledger.lastSeq)" : "")
            case 80..<88:
                guard let target else { return }
                try ledger.recordSyncSuccess(
                    target, to: SyncDestination.allCases.randomElement(using: &random)!,
                    remoteID: "r-\(Int.random(in: 0..<1000, using: &random))",
                    revision: UInt64.random(in: 0...500, using: &random))
            case 88..<95:
                guard let target else { return }
                try ledger.recordSyncFailure(
                    target, to: SyncDestination.allCases.randomElement(using: &random)!,
                    SyncFailure(
                        status: 503, error: "unavailable", retryable: Bool.random(using: &random),
                        nextAttemptAt: Bool.random(using: &random)
                            ? clock.now + Int64.random(in: 0...60_000, using: &random) : nil))
            case 95..<98:
                // The sync engine's bookkeeping events.
                let event: MoodEvent
                switch Int.random(in: 0..<8, using: &random) {
                case 5:
                    // A server's keyed change with a replacement note: three events of one batch.
                    guard let target, ledger.entry(target) != nil else { return }
                    let key = RequestKey(
                        key: "PUT /api/v1/mood/\(target) k\(Int.random(in: 0..<30, using: &random))",
                        fingerprint: "f\(Int.random(in: 0..<3, using: &random))", status: 200, entryID: target)
                    _ = try ledger.execute { _, _ in
                        (
                            [
                                .tagsEdited(target, ["t\(Int.random(in: 0..<9, using: &random))"]),
                                .editReplaced(
                                    target, revision: UInt64.random(in: 1...500, using: &random), fields: [.tags]),
                                .requestKeyed(key)
                            ], target, false
                        )
                    }
                    return
                case 6:
                    // Sync attempts ended by a carrier record the folds skip: the batch ends on that record.
                    guard let target else { return }
                    let carrier = Attachment(.carrier, payload: Array(#"{"carrier":"test"}"#.utf8))
                    _ = try ledger.execute(attaching: { _, _ in [carrier] }) { _, _ in
                        ([.syncAttempted(target, .backend, .update, key: "")], target, false)
                    }
                    return
                case 7:
                    // Several entries in one batch.
                    let made = try ledger.log(contentsOf: [MoodDraft(valence: valence()), MoodDraft(valence: valence())]
                    )
                    ids += made.map(\.id)
                    return
                case 3:
                    // A merge: the entry (or its deletion) against a server version with another valence and labels.
                    guard let target else { return }
                    let here = ledger.entry(target)
                    var theirs = here ?? MoodEntry(id: target, loggedAt: LoggedAt(milliseconds: clock.now), valence: 0)
                    theirs.valence = valence()
                    theirs.labels = [try MoodLabel.parse(Self.labelPool.randomElement(using: &random)!)]
                    let merged = here.map { ThreeWayMerge.merge(base: nil, here: $0, theirs: theirs) }
                    event = .syncMerged(
                        SyncMerge(
                            entryID: target, remoteID: "srv-\(target.low % 1000)",
                            serverRevision: UInt64.random(in: 0...500, using: &random),
                            baseRevision: 0, base: nil, here: here,
                            theirs: Int.random(in: 0..<5, using: &random) == 0 && here != nil ? nil : theirs,
                            merged: Int.random(in: 0..<5, using: &random) == 0 ? nil : merged))
                case 4:
                    guard let target else { return }
                    event = .conflictResolved(target, [.mood, .labels], .here)
                case 0:
                    event = .syncPulled(
                        SyncPull(
                            cursor: UInt64.random(in: 0...500, using: &random),
                            serverRevision: UInt64.random(in: 0...500, using: &random),
                            applied: Int.random(in: 0...5, using: &random), serverWentBack: Bool.random(using: &random))
                    )
                case 1:
                    event = .remoteConfigured(
                        RemoteConfig(
                            url: "http://127.0.0.1:\(Int.random(in: 8080...8081, using: &random))",
                            dialect: RemoteDialect.allCases.randomElement(using: &random)!,
                            capabilities: RemoteCapabilities(rawValue: UInt8.random(in: 0...31, using: &random)),
                            source: Bool.random(using: &random) ? .probed : .unknown))
                default:
                    guard let target else { return }
                    event = .syncRequeued(target, .backend, reason: "the server lost it")
                }
                _ = try ledger.execute { _, _ in ([event], event.entryID, false) }
            default:
                guard let target else { return }
                var entry = ledger.entry(target) ?? MoodEntry(id: target, loggedAt: LoggedAt(milliseconds: clock.now))
                entry.valence = valence()
                let deleted = Int.random(in: 0..<5, using: &random) == 0
                try ledger.applyRemote(
                    RemoteChange(
                        origin: .backend, remoteID: "srv-\(target.low % 1000)",
                        entry: deleted ? nil : entry, entryID: target,
                        revision: UInt64.random(in: 0...500, using: &random),
                        conflict: Int.random(in: 0..<4, using: &random) == 0))
            }
        } catch let error as MoodError where [.notFound, .readOnly].contains(error.code) {
            // Deleted or HealthKit targets: refused, nothing appended. That is part of the workload.
        }
    }
}
