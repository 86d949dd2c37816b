import EventLog
import Foundation
import Platform
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// The version-5 snapshot file (`Specs/ledger.md`, *Snapshots*): its bytes, its checksums, and readers that never
/// trap on bytes a crafted file can hold.
@Suite("Snapshot format v6")
struct SnapshotFormatTests {
    /// A small fixed state: two days, a daily mood, a custom word, a source id, outbox records (one entry with both
    /// destinations, a failure), a deletion.
    static func fixedState() -> LedgerState {
        var state = LedgerState()
        let day: Int64 = 1_780_000_000_000
        let ids = (1...4).map { EntryID(high: 0x0123_4567_89AB_4DEF, low: 0x8000_0000_0000_0000 | UInt64($0)) }
        let events: [MoodEvent] = [
            .created(
                MoodEntry(
                    id: ids[0], loggedAt: LoggedAt(milliseconds: day, utcOffsetMinutes: 120), valence: 0.5,
                    labels: [MoodLabel(appleRawValue: 3)!, MoodLabel(custom: "mine")],
                    associations: [MoodAssociation(appleRawValue: 2)!], notes: "a note")),
            .created(
                MoodEntry(
                    id: ids[1], loggedAt: LoggedAt(milliseconds: day + 3_600_000, utcOffsetMinutes: 120),
                    kind: .dailyMood, valence: -0.25, enteredScore: 4, source: .healthkit, sourceID: "HK-1")),
            .created(
                MoodEntry(
                    id: ids[2], loggedAt: LoggedAt(milliseconds: day + 86_400_000, utcOffsetMinutes: 0),
                    labels: [MoodLabel(appleRawValue: 5)!], tags: ["walk"])),
            .created(
                MoodEntry(
                    id: ids[3], loggedAt: LoggedAt(milliseconds: day + 90_000_000, utcOffsetMinutes: 0), valence: 1)),
            .deleted(ids[3]),
            .syncSucceeded(ids[0], .backend, remoteID: "srv-1", revision: 7),
            // Both destinations' records for one entry, and a failure with its retry time.
            .syncAttempted(ids[0], .healthkit, .create, key: "k-1"),
            .syncFailed(
                ids[2], .backend,
                SyncFailure(
                    status: 503, error: "down", retryable: true,
                    nextAttemptAt: day + 60_000))
        ]
        for (index, event) in events.enumerated() {
            state.apply(
                RecordedEvent(
                    seq: UInt64(index + 1), recordedAt: (day + Int64(index) * 1000) * 1000,
                    commandID: EntryID(high: 1, low: 1), event: event, offset: 0, size: 0))
        }
        return state
    }

    static let location = RecordLocation(seq: 8, offset: 4096, size: 64, crc: 0x1234_5678)
    /// The log's sparse index through seq 8: its first record (`Specs/log-format.md`: right after the file header).
    static let positions = [
        IndexPosition(seq: 1, offset: Int64(LogFormat.fileHeaderSize), recordedAt: 1_780_000_000_000_000)
    ]
    static let fileID = Array(0..<16).map { UInt8($0) }

    @Test("The bytes of a fixed state match the golden file (a format change without a schema bump fails here)")
    func golden() throws {
        let bytes = try SnapshotWriter.file(
            of: Self.fixedState(), positions: Self.positions, location: Self.location, fileID: Self.fileID)
        let path = Repository.root + "/Specs/vectors/snapshot-v6.hex"
        let hex =
            stride(from: 0, to: bytes.count, by: 32).map { start in
                bytes[start..<min(bytes.count, start + 32)].map { String(format: "%02x", $0) }.joined()
            }.joined(separator: "\n") + "\n"
        if Repository.recordGolden { try hex.write(toFile: path, atomically: true, encoding: .utf8) }
        let golden = try String(contentsOfFile: path, encoding: .utf8)
        #expect(hex == golden, "re-record with MOODLEDGER_RECORD_GOLDEN=1 after bumping SnapshotCodec.schema")
        #expect(
            golden.contains(String(format: "%08x", UInt32(SnapshotCodec.fingerprint).byteSwapped)),
            "the golden file carries the current schema's fingerprint")
        // A reader written from the Spec computes the fingerprint from the schema string it names.
        let spec = try String(contentsOfFile: Repository.root + "/Specs/ledger.md", encoding: .utf8)
        #expect(spec.contains("`" + SnapshotCodec.schema + "`"), "Specs/ledger.md names today's schema string")
    }

    @Test(
        "A snapshot taken between an erasure's append and its rewrite carries the pending erasure: golden bytes, and it maps back equal"
    )
    func pendingErasureGolden() throws {
        var state = Self.fixedState()
        let erased = EntryID(high: 0x0123_4567_89AB_4DEF, low: 0x8000_0000_0000_0003)
        state.apply(
            RecordedEvent(
                seq: 9, recordedAt: 1_780_000_020_000_000, commandID: EntryID(high: 1, low: 2),
                event: .entryErased(erased, Erasure(reason: "asked", requestedBy: "cli")), offset: 0, size: 0))
        #expect(state.pendingErasures[erased] == 9)
        let location = RecordLocation(seq: 9, offset: 4160, size: 64, crc: 0x8765_4321)
        let bytes = try SnapshotWriter.file(of: state, location: location, fileID: Self.fileID)
        let path = Repository.root + "/Specs/vectors/snapshot-v6-pending-erasure.hex"
        let hex =
            stride(from: 0, to: bytes.count, by: 32).map { start in
                bytes[start..<min(bytes.count, start + 32)].map { String(format: "%02x", $0) }.joined()
            }.joined(separator: "\n") + "\n"
        if Repository.recordGolden { try hex.write(toFile: path, atomically: true, encoding: .utf8) }
        #expect(hex == (try String(contentsOfFile: path, encoding: .utf8)), "re-record with MOODLEDGER_RECORD_GOLDEN=1")
        let dir = TemporaryDirectory("snapshot-pending")
        let store = SnapshotStore(ledgerDirectory: dir.path, io: SystemIO())
        try store.write(state, location: location, fileID: Self.fileID)
        let loaded = try #require(store.loadAndReadAll(seq: 9))
        #expect(loaded == state && loaded.pendingErasures == [erased: 9])
    }

    @Test("A written snapshot maps back to an equal state, and reads answer like the state it was written from")
    func roundTrip() throws {
        let dir = TemporaryDirectory("snapshot")
        let store = SnapshotStore(ledgerDirectory: dir.path, io: SystemIO())
        let state = Self.fixedState()
        try store.write(state, location: Self.location, fileID: Self.fileID)
        let loaded = try #require(store.loadAndReadAll(seq: 8))
        #expect(loaded == state)
        let day = state.entries.activeDays[0]
        #expect(loaded.entries.newest(1, on: day) == state.entries.newest(1, on: day))
        #expect(loaded.entries.dailyMood(on: day) == state.entries.dailyMood(on: day))
        #expect(loaded.entries.entry(source: .healthkit, sourceID: "HK-1")?.enteredScore == 4)
        #expect(loaded.analytics.days[day] == state.analytics.days[day])
        // Outbox records are read from the mapped file when asked for, and change through the overlay.
        let first = EntryID(high: 0x0123_4567_89AB_4DEF, low: 0x8000_0000_0000_0001)
        #expect(loaded.outbox.records.count == 3)
        #expect(loaded.outbox.recordCount == 3)
        #expect(loaded.outbox.record(OutboxKey(entryID: first, destination: .healthkit))?.idempotencyKey == "k-1")
        #expect(loaded.outbox.record(OutboxKey(entryID: first, destination: .backend))?.remoteID == "srv-1")
        var changed = loaded
        var expected = state
        for event in [
            MoodEvent.syncSucceeded(first, .healthkit, remoteID: "hk-1", revision: 0),
            .entryErased(first, Erasure(reason: "test", requestedBy: "test", complete: true))
        ] {
            let recorded = RecordedEvent(
                seq: 9, recordedAt: state.recordedAt + 1000, commandID: EntryID(high: 1, low: 1),
                event: event, offset: 0, size: 0)
            changed.apply(recorded)
            expected.apply(recorded)
            #expect(changed.outbox == expected.outbox)
            #expect(changed.outbox.recordCount == changed.outbox.records.count)
            #expect(expected.outbox.recordCount == expected.outbox.records.count)
        }
        #expect(changed.outbox.record(OutboxKey(entryID: first, destination: .backend)) == nil, "hidden by the overlay")
        #expect(changed.outbox.records.count == 1)
    }

    @Test("Hardware and software CRC-32C agree on random inputs and offsets")
    func crcImplementations() {
        var random = SeededRandom()
        for _ in 0..<200 {
            // Up to 15,300 bytes: the hardware path's carry-less folding (from 256 bytes, 64 at a time) and what is
            // left after it.
            let count = Int.random(in: 0...(Bool.random(using: &random) ? 3000 : 15_300), using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
            let start = count == 0 ? 0 : Int.random(in: 0...min(7, count), using: &random)
            bytes.withUnsafeBytes { buffer in
                let slice = UnsafeRawBufferPointer(rebasing: buffer[start...])
                #expect(
                    CRC32C.finish(CRC32C.extend(0xFFFF_FFFF, slice))
                        == CRC32C.finish(CRC32C.software(0xFFFF_FFFF, slice)),
                    "seed \(random.seed)")
            }
        }
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)  // the standard check value
    }

    @Test("A long section is checked in two halves by two threads and gives the checksum of one pass")
    func sectionChecksumInHalves() throws {
        var random = SeededRandom()
        let directory = TemporaryDirectory("halves")
        let path = directory.sub("file")
        var bytes = [UInt8](repeating: 0, count: (9 << 20) + 4_321)
        for index in stride(from: 0, to: bytes.count, by: 8) {
            bytes[index] = UInt8.random(in: 0...255, using: &random)
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let file = try AtomicFile.map(path)
        for range in [0..<bytes.count, 13..<(bytes.count - 77), 4_096..<(4_096 + (4 << 20)), 8..<(8 + (4 << 20) - 1)] {
            let whole = bytes.withUnsafeBytes {
                CRC32C.extend(0xFFFF_FFFF, UnsafeRawBufferPointer(rebasing: $0[range]))
            }
            #expect(SnapshotImage.checksumState(of: range, in: file) == whole, "\(range), seed \(random.seed)")
        }
    }

    @Test("Seeded mutations behind recomputed checksums: loading and reading everything never traps")
    func mutations() throws {
        let dir = TemporaryDirectory("snapshot-fuzz")
        let source = TemporaryDirectory("snapshot-source")
        let clock = ManualClock()
        var workload = Workload(random: SeededRandom(), clock: clock)
        let ledger = try Ledger.open(at: source.path, options: ledgerOptions(clock: clock, snapshotInterval: 0))
        for _ in 0..<120 { try workload.step(ledger) }
        try ledger.snapshot()
        let original = Bytes.read(ledger.snapshotFiles[0])
        let entries = ledger.state.entries.all.count
        // A snapshot file names the seq it was taken at; loaded under another seq it is refused whole.
        let seq = ledger.lastSeq
        ledger.close()
        let store = SnapshotStore(ledgerDirectory: dir.path, io: SystemIO())
        try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
        // The harness itself: the unmutated snapshot loads, whole.
        Bytes.write(original, to: store.path(for: seq))
        #expect(store.loadAndReadAll(seq: seq)?.entries.all.count == entries, "the original loads")
        try? FileManager.default.removeItem(atPath: store.path(for: seq))
        var random = SeededRandom()
        var refused = 0
        for _ in 0..<400 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let at = Int.random(in: 12..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[at] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
                case 1: bytes[at] = [0, 0xFF, 0x7F, 0x80][Int.random(in: 0..<4, using: &random)]
                default: bytes[at] = UInt8.random(in: 0...255, using: &random)
                }
            }
            SnapshotWriter.reseal(&bytes)
            let path = store.path(for: seq)
            Bytes.write(bytes, to: path)
            if let state = store.loadAndReadAll(seq: seq) { _ = state.entries.count } else { refused += 1 }
            try? FileManager.default.removeItem(atPath: path)
        }
        print("snapshot mutations: seed \(random.seed), \(refused) of 400 refused")
        // Strict decoding catches mutations the recomputed checksums let through (not every byte is checked: a
        // changed note is a valid snapshot of other data).
        #expect(refused > 0 && refused < 400, "seed \(random.seed): \(refused) refused")
    }

    @Test(
        "A snapshot written through an earlier one (unchanged days copied as stored) has the bytes of one encoded from a replay"
    )
    func copiedDays() throws {
        let dir = TemporaryDirectory("ledger")
        let clock = ManualClock()
        var workload = Workload(random: SeededRandom(), clock: clock)
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock, snapshotInterval: 0))
        defer { ledger.close() }
        for round in 0..<4 {
            for _ in 0..<60 { try workload.step(ledger) }
            try ledger.snapshot()  // the ledger now reads through it: the next one copies the days left unchanged
            #expect(
                Bytes.read(ledger.snapshotFiles[0]) == (try snapshotEncodedFromReplay(ledger)),
                "round \(round): copied rows differ from encoded ones")
        }
    }

    @Test(
        "The outbox index search finds every entry and no other, whatever the ids' spread (random, equal first halves, skewed)"
    )
    func outboxSearch() throws {
        var random = SeededRandom()
        let day: Int64 = 1_780_000_000_000
        let shapes: [(String, (Int) -> EntryID)] = [
            ("random", { _ in EntryID.random(using: &random) }),
            ("equal first halves", { EntryID(high: 0x0123_4567_89AB_4DEF, low: UInt64($0) &* 0x9E37_79B9_7F4A_7C15) }),
            ("skewed", { EntryID(high: UInt64($0 * $0 * $0), low: UInt64.random(in: 0...UInt64.max, using: &random)) })
        ]
        for (shape, makeID) in shapes {
            var state = LedgerState()
            var synced: [EntryID] = []
            var others: [EntryID] = []
            for index in 0..<3_000 {
                let id = makeID(index)
                var events: [MoodEvent] = [
                    .created(
                        MoodEntry(
                            id: id,
                            loggedAt: LoggedAt(
                                milliseconds: day + Int64(index) * 60_000,
                                utcOffsetMinutes: 0), valence: 0))
                ]
                if Int.random(in: 0..<3, using: &random) == 0 {
                    others.append(id)
                } else {
                    synced.append(id)
                    events.append(.syncSucceeded(id, .backend, remoteID: "r", revision: 1))
                }
                for event in events {
                    state.apply(
                        RecordedEvent(
                            seq: state.seq + 1, recordedAt: day * 1000, commandID: id, event: event,
                            offset: 0, size: 0))
                }
            }
            let dir = TemporaryDirectory("outbox-search")
            let store = SnapshotStore(ledgerDirectory: dir.path, io: SystemIO())
            let location = RecordLocation(seq: state.seq, offset: 0, size: 64, crc: 0)
            try store.write(state, location: location, fileID: Self.fileID)
            guard case .success(let image) = store.load(seq: state.seq, fileID: Self.fileID) else {
                Issue.record("\(shape): the snapshot did not load")
                continue
            }
            let ordered = synced.sorted()
            #expect(image.outboxCount == ordered.count)
            for (position, id) in ordered.enumerated() where image.outboxPosition(of: id) != position {
                Issue.record("\(shape): \(id) not found at \(position), seed \(random.seed)")
            }
            for id in others + [EntryID(high: 0, low: 0), EntryID(high: .max, low: .max)]
            where image.outboxPosition(of: id) != nil {
                Issue.record("\(shape): \(id) found without records, seed \(random.seed)")
            }
        }
    }

    @Test("A snapshot truncated under an open ledger: no crash; the ledger rebuilds from the log")
    func truncatedUnderTheProcess() throws {
        let dir = TemporaryDirectory("ledger")
        let clock = ManualClock()
        var workload = Workload(random: SeededRandom(), clock: clock)
        let options = ledgerOptions(clock: clock, snapshotInterval: 0)
        var ledger = try Ledger.open(at: dir.path, options: options)
        for _ in 0..<150 { try workload.step(ledger) }
        try ledger.snapshot()
        ledger.close()
        var replay = options
        replay.useSnapshots = false
        let expected = try Ledger.open(at: dir.path, options: replay)
        let truth = expected.state
        expected.close()
        ledger = try Ledger.open(at: dir.path, options: options)
        defer { ledger.close() }
        let file = ledger.snapshotFiles[0]
        // Cut the file in place (what the ledger itself never does) and read every page of the old length.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
        try handle.truncate(atOffset: 100)
        try handle.close()
        let torn = ledger.state
        _ = torn.entries.all  // the cut pages read as zeros: rows are refused, nothing traps
        for day in torn.entries.activeDays { _ = torn.analytics.days[day] }
        // When a read met the cut (a SIGBUS, turned into a zero page), the next read replays the log.
        if torn.entries.image?.file.isDamaged == true {
            #expect(ledger.state == truth, "the next read sees the damage and replays the log")
        } else {
            print("truncated snapshot: no read met the cut in this run")
        }
    }
}
