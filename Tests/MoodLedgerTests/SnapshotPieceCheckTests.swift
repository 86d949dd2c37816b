import EventLog
import Foundation
import Platform
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// Large snapshots are checked where they are read, a 4 KiB piece at a time (`Specs/ledger.md`, *Checking where
/// read*): a damaged piece is found when read, and no answer, command or snapshot is ever taken from it.
@Suite("Snapshot pieces checked where read")
struct SnapshotPieceCheckTests {
    /// A ledger with a snapshot covering everything, the state a full replay gives, and the snapshot's path.
    static func ledgerWithSnapshot(
        _ dir: TemporaryDirectory, steps: Int = 400
    ) throws -> (truth: LedgerState, snapshot: String) {
        let clock = ManualClock()
        var workload = Workload(random: SeededRandom(), clock: clock)
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock, snapshotInterval: 0))
        for _ in 0..<steps { try workload.step(ledger) }
        try ledger.snapshot()
        let snapshot = ledger.snapshotFiles[0]
        ledger.close()
        var replay = ledgerOptions(clock: clock, snapshotInterval: 0)
        replay.useSnapshots = false
        let full = try Ledger.open(at: dir.path, options: replay)
        defer { full.close() }
        return (full.state, snapshot)
    }

    /// Where section `kind` lies in a snapshot file.
    static func section(_ kind: SnapshotLayout.Section, of bytes: [UInt8]) -> Range<Int> {
        let entry = SnapshotLayout.headerSize + (Int(kind.rawValue) - 1) * SnapshotLayout.tableEntrySize
        return bytes.withUnsafeBytes { b in
            let offset = Int(b.le(entry + 8) as UInt64)
            return offset..<(offset + Int(b.le(entry + 16) as UInt64))
        }
    }

    /// A ledger with a snapshot whose `kind` section `damage` changed (offsets are the file's): its truth and path.
    static func ledgerWithDamagedSnapshot(
        _ dir: TemporaryDirectory, _ kind: SnapshotLayout.Section,
        _ damage: (inout [UInt8], Range<Int>) -> Void
    ) throws -> (truth: LedgerState, snapshot: String) {
        let (truth, path) = try ledgerWithSnapshot(dir)
        var bytes = Bytes.read(path)
        damage(&bytes, section(kind, of: bytes))
        Bytes.write(bytes, to: path)
        return (truth, path)
    }

    /// Options that check every snapshot where read (none is small enough to be checked whole).
    static func pieceChecking(_ clock: ManualClock = ManualClock()) -> Ledger.Options {
        var options = ledgerOptions(clock: clock, snapshotInterval: 0)
        options.checkSnapshotsWhereReadFrom = 0
        return options
    }

    @Test(
        "Each piece's stored checksum is the CRC-32C of that piece of its section, and the pieces section is checked on open"
    )
    func piecesSection() throws {
        let dir = TemporaryDirectory("pieces")
        let (_, path) = try Self.ledgerWithSnapshot(dir, steps: 200)
        let bytes = Bytes.read(path)
        let pieces = Self.section(.pieces, of: bytes)
        var at = pieces.lowerBound
        for kind in SnapshotLayout.Section.allCases where kind != .pieces {
            let range = Self.section(kind, of: bytes)
            for start in stride(from: range.lowerBound, to: range.upperBound, by: SnapshotLayout.pieceSize) {
                let piece = Array(bytes[start..<min(range.upperBound, start + SnapshotLayout.pieceSize)])
                let stored = bytes.withUnsafeBytes { $0.le(at) as UInt32 }
                #expect(stored == CRC32C.mask(CRC32C.checksum(piece)), "section \(kind.rawValue) at \(start)")
                at += 4
            }
        }
        #expect(at == pieces.upperBound, "nothing left over in the pieces section")
    }

    @Test(
        "A flipped byte in the rows, found where read: read answers as a full replay, with a notice, and the state is rebuilt"
    )
    func damagedRowFoundWhereRead() throws {
        let dir = TemporaryDirectory("pieces")
        // A logged_at of the first row: the section's own checksum now fails too.
        let (truth, _) = try Self.ledgerWithDamagedSnapshot(dir, .rows) { bytes, rows in
            bytes[rows.lowerBound + 20] ^= 0x40
        }

        // Checked whole on open (the default for a small snapshot): skipped with a notice, as always.
        let whole = try Ledger.open(at: dir.path, options: ledgerOptions(clock: ManualClock(), snapshotInterval: 0))
        #expect(whole.notices.contains { $0.contains("snapshot skipped") && $0.contains("checksum mismatch") })
        #expect(whole.state == truth)
        whole.close()

        // Checked where read: open reads nothing of the rows, so the damage is found by the first read of them.
        let ledger = try Ledger.open(at: dir.path, options: Self.pieceChecking())
        defer { ledger.close() }
        #expect(ledger.notices.isEmpty)
        #expect(ledger.laterNotices.isEmpty)
        let all = ledger.read { $0.entries.all }
        #expect(all == truth.entries.all, "read answered again from the log")
        #expect(ledger.laterNotices.count == 1)
        #expect(ledger.laterNotices.first?.contains("section 2") == true, "\(ledger.laterNotices)")
        #expect(ledger.state == truth)
        #expect(ledger.state.entries.image == nil, "rebuilt from the log, not read through the damaged snapshot")

        // Time travel to the snapshot's own point reads through the same damaged piece: answered from the log too.
        var readOnly = Self.pieceChecking()
        readOnly.readOnly = true
        let traveller = try Ledger.open(at: dir.path, options: readOnly)
        defer { traveller.close() }
        let past = try traveller.read(at: .seq(truth.seq)) { $0.entries.all }
        #expect(past == truth.entries.all, "read(at:) answered again from a replay of the log")
        #expect(traveller.laterNotices.count == 1 && traveller.laterNotices[0].contains("replayed from the log"))
    }

    @Test("A command decides from an undamaged state; a snapshot is never copied from a damaged piece")
    func commandsAndSnapshotsAvoidDamage() throws {
        let dir = TemporaryDirectory("pieces")
        let (truth, _) = try Self.ledgerWithDamagedSnapshot(dir, .arena) { bytes, arena in
            for offset in stride(from: arena.lowerBound, to: arena.upperBound, by: 97) { bytes[offset] ^= 0x01 }
        }
        let clock = ManualClock()
        let ledger = try Ledger.open(at: dir.path, options: Self.pieceChecking(clock))
        defer { ledger.close() }
        // Every body fails to decode through the image: an update of a live entry would be "not found" from it.
        let target = try #require(truth.entries.all.first { (try? Ledger.editable($0.id, in: truth)) != nil })
        let updated = try ledger.update(target.id, MoodChanges(notes: .set("after the damage")))
        #expect(updated.notes == "after the damage")
        #expect(!ledger.laterNotices.isEmpty, "the damage was met and the state rebuilt")
        try ledger.snapshot()
        #expect(
            Bytes.read(ledger.snapshotFiles[0]) == (try snapshotEncodedFromReplay(ledger)),
            "the new snapshot holds the log's truth, not the damaged bytes")
    }

    @Test("Open replays the tail onto the snapshot; a damaged piece the tail reads makes open skip the snapshot")
    func damageMetByTheTail() throws {
        let dir = TemporaryDirectory("pieces")
        // Every slot piece damaged: any lookup by id meets it.
        _ = try Self.ledgerWithDamagedSnapshot(dir, .idSlots) { bytes, slots in
            for offset in slots { bytes[offset] ^= 0x10 }
        }
        let clock = ManualClock()
        var options = Self.pieceChecking(clock)
        let writer = try Ledger.open(at: dir.path, options: options)
        let created = try writer.log(MoodDraft(valence: 0.25))  // a lookup of the new id reads the slots
        #expect(created.created)
        writer.close()
        options.readOnly = true
        let ledger = try Ledger.open(at: dir.path, options: options)
        defer { ledger.close() }
        #expect(
            ledger.notices.contains { $0.hasPrefix("snapshot ") && $0.contains("skipped") && $0.contains("section 4") },
            "\(ledger.notices)")
        #expect(ledger.state.entries.image == nil)
        var replay = options
        replay.useSnapshots = false
        let full = try Ledger.open(at: dir.path, options: replay)
        defer { full.close() }
        #expect(ledger.state == full.state)
    }

    @Test(
        "Seeded mutations with stale piece checksums: reading everything where read never traps, and a read of a mutated piece is flagged"
    )
    func mutationsCheckedWhereRead() throws {
        let dir = TemporaryDirectory("snapshot-fuzz")
        let source = TemporaryDirectory("snapshot-source")
        let (_, original) = try Self.ledgerWithSnapshot(source, steps: 150)
        let bytes0 = Bytes.read(original)
        let store = SnapshotStore(ledgerDirectory: dir.path, io: SystemIO())
        try FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
        let lazy = SnapshotLayout.Section.allCases.filter(\.isCheckedWhereRead).map { Self.section($0, of: bytes0) }
        var random = SeededRandom()
        var flagged = 0
        var mustFlag = 0
        let slots = Self.section(.idSlots, of: bytes0)
        for round in 0..<200 {
            var bytes = bytes0
            let range = lazy.randomElement(using: &random)!
            guard !range.isEmpty else { continue }
            let at = Int.random(in: range, using: &random)
            bytes[at] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
            let seq = SnapshotStore.claimedSeq(bytes)
            let path = store.path(for: seq)
            Bytes.write(bytes, to: path)
            // Opens (nothing of the mutated section is checked yet), then reads everything.
            guard case .success(let image) = store.load(seq: seq, fileID: nil, checkWhereReadFrom: 0) else {
                Issue.record(
                    "round \(round): a mutation of a section checked where read was refused on open (seed \(random.seed))"
                )
                continue
            }
            #expect(!image.isDamaged)
            SnapshotStore.readAll(LedgerState(image: image))
            // Every piece of the sections checked where read is then read by a full writer pass.
            _ = try? SnapshotWriter.file(
                of: LedgerState(image: image), location: RecordLocation(seq: 1, offset: 0, size: 0, crc: 0),
                fileID: Array(repeating: 0, count: 16))
            if range != slots {
                // Every piece of these is read by the writer's pass (a lookup reads only the slots it probes).
                mustFlag += 1
                #expect(
                    image.isDamaged,
                    "round \(round): a read of the mutated piece at \(at) is not flagged (seed \(random.seed))")
            }
            if image.isDamaged { flagged += 1 }
            try? FileManager.default.removeItem(atPath: path)
        }
        print(
            "snapshot piece mutations: \(flagged) of 200 flagged (\(mustFlag) outside the id slots), seed \(random.seed)"
        )
        #expect(mustFlag > 100)
    }
}
