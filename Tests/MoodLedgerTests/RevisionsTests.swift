import EventLog
import EventLogFormat
import Foundation
import TestSupport
import Testing

@testable import MoodInterchange
@testable import MoodLedger
@testable import MoodModel

/// The revisions fold (`Specs/ledger.md`, *Revisions*) against the walk it replaced: each record that names an entry
/// gives that entry its batch's last seq.
@Suite("Revisions")
struct RevisionsTests {
    /// Every entry's revision as the state answers it, for each entry the walk names (and no other).
    static func expectEqualToWalk(_ state: LedgerState, _ ledger: Ledger, _ context: String) throws {
        let walked = try ledger.lastEventSeqs(through: state.seq)
        var folded: [EntryID: UInt64] = [:]
        for change in state.changes(since: 0) { folded[change.id] = change.revision }
        #expect(folded == walked, "\(context): the fold's revisions equal the walk's")
        for (id, revision) in walked.prefix(50) {
            #expect(state.revision(of: id) == revision, "\(context): \(id)")
        }
        let since = state.seq / 2
        let changes = state.changes(since: since)
        #expect(changes.map(\.revision) == changes.map(\.revision).sorted(), "\(context): oldest change first")
        #expect(Set(changes.map(\.id)) == Set(walked.filter { $0.value > since }.keys), "\(context): since \(since)")
    }

    @Test(
        "Live, cold replay, pipelined replay, snapshot + tail and time travel to every seq give the walk's revisions",
        arguments: [false, true])
    func foldEqualsWalk(pipelined: Bool) throws {
        let dir = TemporaryDirectory("ledger")
        let clock = ManualClock()
        var workload = Workload(random: SeededRandom(), clock: clock)
        var options = ledgerOptions(clock: clock, snapshotInterval: 61)
        if pipelined { options.parallelReplayThreshold = 0 }
        let ledger = try Ledger.open(at: dir.path, options: options)
        for _ in 0..<500 { try workload.step(ledger) }
        try Self.expectEqualToWalk(ledger.state, ledger, "live")
        for seq in stride(from: UInt64(1), through: ledger.lastSeq, by: 7) {
            try Self.expectEqualToWalk(try ledger.state(at: .seq(seq)), ledger, "time travel to \(seq)")
        }
        let live = ledger.state
        ledger.close()

        let warm = try Ledger.open(at: dir.path, options: options)
        #expect(warm.eventLog.resumedFromCheckpoint, "from a snapshot")
        #expect(warm.state.revisions == live.revisions)
        try Self.expectEqualToWalk(warm.state, warm, "snapshot + tail")
        warm.close()
        var cold = options
        cold.useSnapshots = false
        let replayed = try Ledger.open(at: dir.path, options: cold)
        #expect(replayed.state.revisions == live.revisions)
        try Self.expectEqualToWalk(replayed.state, replayed, "full replay")
        replayed.close()
    }

    @Test("An import's one batch gives every entry it names the batch's last seq")
    func importBatch() throws {
        let dir = TemporaryDirectory("ledger")
        let clock = ManualClock()
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock))
        defer { ledger.close() }
        try ledger.log(MoodDraft(valence: 0.1))
        var plan = ImportPlan(format: .moodAPI)
        for line in 1...40 {
            var draft = MoodDraft(valence: Double(line) / 100)
            draft.loggedAt = LoggedAt(milliseconds: clock.now - Int64(line) * 60_000)
            plan.rows.append(ImportRow(line: line, draft: draft))
        }
        let report = try ledger.importPlan(plan)
        #expect(report.created == 40)
        let last = ledger.lastSeq
        #expect(ledger.state.changes(since: 1).allSatisfy { $0.revision == last })
        try Self.expectEqualToWalk(ledger.state, ledger, "after the import")
    }

    @Test(
        "An older log's 0x8001 and 0x8002 records are read as request.keyed and edit.replaced, with and without snapshots"
    )
    func olderRecords() throws {
        for useSnapshots in [false, true] {
            let dir = TemporaryDirectory("ledger")
            let clock = ManualClock()
            var options = ledgerOptions(clock: clock)
            let ledger = try Ledger.open(at: dir.path, options: options)
            let entry = try #require(try ledger.log(MoodDraft(valence: 0.2)).entry)
            let before = ledger.lastSeq
            ledger.close()
            // A keyed PUT with a note, as an older server wrote it: the change, its key, its note.
            let log = try EventLog.open(directory: dir.path)
            let update = Ledger.record(
                .tagsEdited(entry.id, ["x"]), command: EntryID(high: 7, low: 7), nowMilliseconds: clock.now)
            let key =
                #"{"key":"PUT /api/v1/mood/\#(entry.id) k-1","fingerprint":"abc","status":200,"entry_id":"\#(entry.id)"}"#
            let note = #"{"entry_id":"\#(entry.id)","revision":1,"fields":["notes","colour","mood"]}"#
            let bad = #"{"key":"","fingerprint":"abc","status":200,"entry_id":null}"#
            try log.append([
                update, PendingRecord(type: 0x8001, payload: Array(key.utf8), recordedAt: clock.now * 1000),
                PendingRecord(type: 0x8001, payload: Array(bad.utf8), recordedAt: clock.now * 1000),
                PendingRecord(type: 0x8002, payload: Array(note.utf8), recordedAt: clock.now * 1000)
            ])
            log.close()
            options.useSnapshots = useSnapshots
            if useSnapshots {
                // A snapshot of the state with the converted records, then an open from it.
                options.snapshotInterval = 1
                let writer = try Ledger.open(at: dir.path, options: options)
                try writer.editTags(entry.id, .add("y"))
                writer.close()
            }
            let reopened = try Ledger.open(at: dir.path, options: options)
            defer { reopened.close() }
            #expect(reopened.eventLog.resumedFromCheckpoint == useSnapshots)
            let state = try reopened.state(at: .seq(before + 4))
            #expect(state.revision(of: entry.id) == before + 4, "the batch's last seq")
            let kept = try #require(state.requests.key("PUT /api/v1/mood/\(entry.id) k-1", now: clock.now))
            #expect(kept.request.fingerprint == "abc" && kept.request.status == 200 && kept.request.entryID == entry.id)
            #expect(kept.seq == before + 4)
            #expect(state.requests.keyCount(now: clock.now) == 1, "the key that breaks the rules is passed over")
            let read = state.replacementNote(of: entry.id)
            #expect(read == RequestRecords.Note(seq: before + 4, revision: 1, fields: [.mood, .notes]))
            // The key outlives later changes; a later change without a note makes the entry plain again.
            if !useSnapshots { try reopened.editTags(entry.id, .add("y")) }
            #expect(reopened.state.requests.key("PUT /api/v1/mood/\(entry.id) k-1", now: clock.now) != nil)
            #expect(reopened.state.replacementNote(of: entry.id) == nil)
            #expect(reopened.state.revision(of: entry.id) == reopened.lastSeq)
            try Self.expectEqualToWalk(reopened.state, reopened, "older records")
        }
    }

    @Test("An erasure of every entry forgets every revision but the kept entries', live, replayed and from a snapshot")
    func eraseAllForgets() throws {
        let dir = TemporaryDirectory("ledger")
        let clock = ManualClock()
        var options = ledgerOptions(clock: clock, snapshotInterval: 5)
        let ledger = try Ledger.open(at: dir.path, options: options)
        var made: [EntryID] = []
        for index in 0..<12 {
            clock.advance(60_000)
            var draft = MoodDraft(valence: Double(index) / 20)
            if index % 4 == 0 {
                draft.source = .healthkit
                draft.sourceID = "HK-\(index)"
            }
            made.append(try #require(try ledger.log(draft).entry).id)
        }
        try ledger.delete(made[1])
        let kept = Set(ledger.state.entries.all.filter { $0.source == .healthkit }.map(\.id))
        let keptRevisions = kept.map { ($0, ledger.state.revision(of: $0)) }
        try ledger.eraseAll(keepingHealthKit: true, ignoringDestinations: true)
        let after = ledger.state
        #expect(Set(after.changes(since: 0).map(\.id)) == kept, "only the kept entries have revisions")
        for (id, revision) in keptRevisions { #expect(after.revision(of: id) == revision) }
        #expect(after.revision(of: made[1]) == 0 && after.revision(of: made[2]) == 0)
        ledger.close()
        for useSnapshots in [true, false] {
            options.useSnapshots = useSnapshots
            let reopened = try Ledger.open(at: dir.path, options: options)
            #expect(reopened.state.revisions == after.revisions, "snapshots \(useSnapshots)")
            reopened.close()
        }
    }

    @Test("A revision past 32 bits is kept by the revisions' table, not beside its entry; a later small one beside it")
    func revisionPastThirtyTwoBits() {
        var state = LedgerState()
        let id = EntryID(high: 7, low: 7)
        let other = EntryID(high: 8, low: 8)
        state.apply(
            RecordedEvent(
                seq: 1, recordedAt: 1_000, commandID: id,
                event: .created(MoodEntry(id: id, loggedAt: LoggedAt(milliseconds: 0)))))
        #expect(state.revision(of: id) == 1)
        let wide: UInt64 = 5_000_000_000
        state.noteRevision(of: id, seq: wide)
        state.noteRevision(of: other, seq: 3)
        #expect(state.revision(of: id) == wide, "held entry, wide revision")
        #expect(state.revisions.revisions == [id: wide, other: 3], "each id once, at its revision")
        #expect(state.changes(since: 3).map(\.id) == [id])
        state.noteRevision(of: id, seq: 9)
        #expect(state.revision(of: id) == 9, "beside the entry again: the table's wider one is older")
        #expect(state.revisions.revisions == [id: 9, other: 3])
    }

    @Test("Request keys: a key more than a day older than the newest is dropped, and at most 20,000 are kept")
    func keyBounds() {
        var state = LedgerState()
        let day = RequestRecords.keyWindowMilliseconds
        func keyed(_ name: String, at milliseconds: Int64) {
            let event = MoodEvent.requestKeyed(RequestKey(key: name, fingerprint: "f", status: 201, entryID: nil))
            state.apply(
                RecordedEvent(seq: state.seq + 1, recordedAt: milliseconds * 1000, commandID: .none, event: event))
        }
        keyed("old", at: 1_000)
        keyed("new", at: 1_000 + day)
        #expect(state.requests.key("old", now: 1_000 + day) != nil, "24 hours old: still in force")
        keyed("newer", at: 2_000 + day)
        #expect(state.requests.key("old", now: 1_000 + day) == nil, "dropped by the fold, whatever the time asked")
        #expect(state.requests.key("new", now: 1_000 + 2 * day + 1) == nil, "past its day when asked")
        for index in 0..<(RequestRecords.keysKept + 5) { keyed("k\(index)", at: 3_000 + day) }
        #expect(state.requests.keyCount(now: 3_000 + day) == RequestRecords.keysKept)
        #expect(
            state.requests.key("k0", now: 3_000 + day) == nil && state.requests.key("k5", now: 3_000 + day) != nil)
        #expect(state.requests.keptKeys.first?.request.key == "k5", "oldest first")
    }
}

extension Ledger {
    /// The walk the revisions fold replaced, kept here as its oracle: each record that names an entry through `last`
    /// (redacted ones included, read where the codec keeps the id) gives that entry its batch's last seq; a batch
    /// cut by `last` ends there. (`ledger.erased`, which the fold answers by forgetting, is not in these ledgers.)
    func lastEventSeqs(through last: UInt64) throws -> [EntryID: UInt64] {
        var seqs: [EntryID: UInt64] = [:]
        var open: [EntryID] = []
        try eventLog.forEach(from: 1, through: last) { view in
            if view.type & LogFormat.safeToIgnoreBit == 0, let id = EventCodec.entryID(inPayload: view.payload),
                id != EntryID.none
            {
                open.append(id)
            }
            if !view.continuesBatch {
                for id in open { seqs[id] = view.lastSeq }
                open.removeAll(keepingCapacity: true)
            }
            return true
        }
        for id in open { seqs[id] = last }
        return seqs
    }
}
