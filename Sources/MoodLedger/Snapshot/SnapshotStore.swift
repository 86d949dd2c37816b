import Dispatch
import EventLog
import Platform

/// A snapshot file's header fields (`Specs/ledger.md`, *Snapshots*).
struct SnapshotHeader: Equatable {
    static let magic: [UInt8] = Array("MLSNAP\r\n".utf8)
    static let size = SnapshotLayout.headerSize
    static let version: UInt16 = 6

    var sectionCount: Int
    var fingerprint: UInt32
    /// The last record the snapshot covers.
    var location: RecordLocation
    /// The log file's id: a snapshot of another log is never used.
    var fileID: [UInt8]
    /// The recorded-at of that record.
    var recordedAt: Int64
    /// The whole file's length.
    var fileLength: UInt64
    /// The masked CRC-32C of the section table.
    var tableCRC: UInt32

    func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: SnapshotHeader.size)
        w.bytes.append(contentsOf: SnapshotHeader.magic)
        w.fixed(UInt64(SnapshotHeader.version), 2)
        w.fixed(UInt64(sectionCount), 2)
        w.fixed(UInt64(fingerprint), 4)
        w.fixed(location.seq, 8)
        w.fixed(UInt64(bitPattern: location.offset), 8)
        w.fixed(UInt64(location.size), 4)
        w.fixed(UInt64(location.crc), 4)
        w.bytes.append(contentsOf: fileID)
        w.fixed(UInt64(bitPattern: recordedAt), 8)
        w.fixed(fileLength, 8)
        w.fixed(UInt64(tableCRC), 4)
        let crc = CRC32C.mask(CRC32C.checksum(w.bytes))
        w.fixed(UInt64(crc), 4)
        return w.bytes
    }

    static func decode(_ b: UnsafeRawBufferPointer) -> SnapshotHeader? {
        guard b.count >= size, Array(b[0..<8]) == magic, b.le(8) as UInt16 == version,
            b.le(76) as UInt32 == CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: b[0..<76])))
        else { return nil }
        return SnapshotHeader(
            sectionCount: Int(b.le(10) as UInt16), fingerprint: b.le(12),
            location: RecordLocation(
                seq: b.le(16), offset: Int64(bitPattern: b.le(24)), size: Int(b.le(32) as UInt32),
                crc: b.le(36)),
            fileID: Array(b[40..<56]), recordedAt: Int64(bitPattern: b.le(56)), fileLength: b.le(64), tableCRC: b.le(72)
        )
    }
}

extension ByteWriter {
    /// A fixed-width little-endian integer.
    mutating func fixed(_ value: UInt64, _ width: Int) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0.prefix(width)) }
    }
}

/// The snapshot files of a ledger: `snapshots/snapshot-<seq, 20 digits>.bin`. A cache, never a source of truth.
struct SnapshotStore: Sendable {
    let directory: String
    let io: any PlatformIO

    init(ledgerDirectory: String, io: any PlatformIO) {
        directory = ledgerDirectory + "/snapshots"
        self.io = io
    }

    func path(for seq: UInt64) -> String {
        let digits = String(seq)
        return directory + "/snapshot-" + String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".bin"
    }

    /// What the snapshots prove about the log (`Specs/log-format.md`, *Evidence of loss*): the newest intact snapshot
    /// says the log of its file id held every seq through the one it covers. `loaded`: that snapshot when the caller
    /// has it already.
    func evidence(loaded: SnapshotImage? = nil, checkWhereReadFrom: Int = 32 << 20) -> [EventLog.Evidence] {
        var image = loaded
        if image == nil {
            for seq in list() {
                if case .success(let found) = load(seq: seq, fileID: nil, checkWhereReadFrom: checkWhereReadFrom) {
                    image = found
                    break
                }
            }
        }
        guard let header = image?.header else { return [] }
        return [
            EventLog.Evidence(
                fileID: header.fileID, seq: header.location.seq, source: "snapshot \(header.location.seq)")
        ]
    }

    /// The covered sequence numbers of the snapshot files present, newest first.
    func list() -> [UInt64] {
        guard let names = try? io.contents(ofDirectory: directory) else { return [] }
        return names.compactMap { name -> UInt64? in
            guard name.hasPrefix("snapshot-"), name.hasSuffix(".bin") else { return nil }
            return UInt64(name.dropFirst("snapshot-".count).dropLast(".bin".count))
        }.sorted(by: >)
    }

    /// Writes a snapshot of `state` covering `location` atomically, streamed to the file (``SnapshotWriter``).
    /// - Parameters:
    ///   - state: the state.
    ///   - days: where each day's entries are, when not `state`'s own (see ``SnapshotWriter/write(_:days:rowCapacity:location:fileID:to:)``).
    ///   - rowCapacity: with `days`, at least as many rows as it gives.
    ///   - isEntry: with `days`, whether an id is one of its entries (a row).
    ///   - revision: with `days`, an entry's revision when not `state`'s.
    ///   - positions: the log's sparse index through `location`, kept in the snapshot (empty: none).
    ///   - location: the record the snapshot covers.
    ///   - fileID: the log's file id.
    /// - Throws: ``SnapshotProblem`` when the snapshot `state` reads through was found damaged while copying from
    ///   it (nothing is written); ``EventLogError`` for I/O or a state too large for one snapshot; what `days`
    ///   throws.
    func write(
        _ state: LedgerState, days: SnapshotWriter.Days? = nil, rowCapacity: Int? = nil,
        isEntry: ((EntryID) -> Bool)? = nil, revision: ((EntryID) -> UInt64)? = nil, positions: [IndexPosition] = [],
        location: RecordLocation,
        fileID: [UInt8]
    ) throws {
        try AtomicFile.makeDirectory(directory, io: io)
        // A cache: left out of device backups (the log and the lock are backed up).
        try AppleFileAttributes.excludeFromBackup(directory)
        let image = state.entries.image
        try AtomicFile.write(
            to: path(for: location.seq), io: io,
            check: { _ in
                if let image, image.isDamaged {
                    throw SnapshotProblem(
                        "the snapshot read through is damaged (\(image.damageDescription ?? "damaged"))")
                }
            },
            produce: { write in
                do {
                    try SnapshotWriter.write(
                        state, days: days, rowCapacity: rowCapacity, isEntry: isEntry, revision: revision,
                        positions: positions,
                        location: location, fileID: fileID, to: write)
                } catch let error as SnapshotProblem {
                    throw EventLogError(.invalidArgument, "cannot write a snapshot: \(error.text)")
                }
            })
    }

    /// Maps and checks one snapshot file: header, section table, every section's checksum and structure,
    /// fingerprint and (when given) the log's identity.
    /// - Parameters:
    ///   - seq: the covered seq of the file.
    ///   - fileID: the log's file id, or `nil` to accept any.
    ///   - checkWhereReadFrom: a file of this many bytes or more has the sections read row by row checked a piece
    ///     at a time where they are read, not on open (``SnapshotImage/isDamaged`` then tells of a failed piece).
    /// - Returns: the checked image, or the reason it cannot be used.
    func load(seq: UInt64, fileID: [UInt8]?, checkWhereReadFrom: Int = .max) -> Result<SnapshotImage, SnapshotProblem> {
        let file = path(for: seq)
        guard let mapped = try? AtomicFile.map(file, io: io) else { return .failure(.init("cannot read \(file)")) }
        do throws(SnapshotProblem) {
            let image = try SnapshotImage(
                file: mapped, fingerprint: SnapshotCodec.fingerprint,
                checkWhereRead: mapped.bytes.count >= checkWhereReadFrom)
            guard fileID == nil || image.header.fileID == fileID else {
                throw SnapshotProblem("belongs to another log file")
            }
            guard image.seq == seq else { throw SnapshotProblem("covers another seq (renamed)") }
            image.releaseResidentPages()
            return .success(image)
        } catch {
            return .failure(.init("\(file): \(error.text)"))
        }
    }

    /// Loads a snapshot and reads all it holds (tests and fuzzing): every row, day and aggregate is decoded, so any
    /// trap a crafted file could cause happens here.
    /// - Returns: the state, or `nil` when the file is refused.
    /// The covered seq a snapshot's header claims (7 for fewer than 24 bytes): fuzzing names a mutated file by it,
    /// so that the name check passes and the mutation reaches the readers.
    static func claimedSeq(_ bytes: [UInt8]) -> UInt64 {
        bytes.count >= 24 ? bytes.withUnsafeBytes { $0.le(16) } : 7
    }

    func loadAndReadAll(seq: UInt64, checkWhereReadFrom: Int = .max) -> LedgerState? {
        guard case .success(let image) = load(seq: seq, fileID: nil, checkWhereReadFrom: checkWhereReadFrom) else {
            return nil
        }
        return Self.readAll(LedgerState(image: image))
    }

    /// Reads every row, day, aggregate, source key and outbox record of a state (tests and fuzzing).
    @discardableResult
    static func readAll(_ state: LedgerState) -> LedgerState {
        _ = state.entries.all
        for day in state.entries.activeDays {
            _ = state.entries.entries(on: day)
            _ = state.entries.dailyMood(on: day)
            _ = state.analytics.days[day]
        }
        for entry in state.entries.all {
            if let sourceID = entry.sourceID { _ = state.entries.entry(source: entry.source, sourceID: sourceID) }
        }
        let records = state.outbox.records
        for (key, _) in records { _ = state.outbox.record(key) }
        if let image = state.entries.image {
            // The filter a long replay builds must admit every id the index lists (a fuzzed file traps here if not).
            let filter = image.outboxFilter()
            for (key, _) in records {
                precondition(filter.mayContain(key.entryID), "the outbox filter refused a listed id")
            }
        }
        return state
    }

    /// Keeps the newest snapshot and a few sparse ones for time travel, within `2 × logBytes` in all, or `floor`
    /// bytes for a small ledger (`Specs/ledger.md`, *Policy*).
    /// - Parameters:
    ///   - sparseInterval: the smallest spacing of sparse snapshots (sequence numbers; 0 keeps none).
    ///   - logBytes: the log's size, which bounds the snapshots' total.
    ///   - floor: the budget when twice the log is less (a snapshot's fixed overhead would otherwise leave a
    ///     small ledger without sparse snapshots).
    func prune(sparseInterval: UInt64, logBytes: Int64, floor: Int64 = 1 << 20) {
        // Temp files a crash left between write and rename are never valid snapshots.
        for name in (try? io.contents(ofDirectory: directory)) ?? [] where name.contains(".tmp-") {
            try? io.remove(directory + "/" + name)
        }
        let present = list()
        let keep = Set(
            Self.kept(newestFirst: present, sparseInterval: sparseInterval, budget: max(2 * logBytes, floor)) {
                (try? AtomicFile.size(of: path(for: $0), io: io)) ?? 0
            })
        for seq in present where !keep.contains(seq) { try? io.remove(path(for: seq)) }
    }

    /// The snapshots the policy keeps, newest first: those of the spacing rule, then held to `budget` bytes in all:
    /// while over, the sparse snapshot nearest below the next newer kept one goes (it adds the least for time travel);
    /// the newest stays whatever its size.
    /// - Parameters:
    ///   - seqs: covered sequence numbers of the snapshots present, newest first.
    ///   - sparseInterval: the smallest spacing of sparse snapshots (0 keeps none).
    ///   - budget: the bytes all kept snapshots may take.
    ///   - size: a snapshot's bytes.
    static func kept(
        newestFirst seqs: [UInt64], sparseInterval: UInt64, budget: Int64,
        size: (UInt64) -> Int64
    ) -> [UInt64] {
        var kept = kept(newestFirst: seqs, sparseInterval: sparseInterval)
        let sizes = Dictionary(uniqueKeysWithValues: kept.map { ($0, size($0)) })
        var total = sizes.values.reduce(0, +)
        while total > budget, kept.count > 1 {
            var drop = 1
            for index in 2..<max(2, kept.count) where kept[index - 1] - kept[index] < kept[drop - 1] - kept[drop] {
                drop = index
            }
            total -= sizes[kept[drop]]!
            kept.remove(at: drop)
        }
        return kept
    }

    /// The snapshots the spacing rule keeps, newest first: the newest, and the oldest of each bucket of `S`
    /// sequence numbers, where `S` is `sparseInterval` doubled until the newest seq is below `8 × S` (at most eight
    /// sparse snapshots before the byte budget, spread over the history; doubling merges buckets in pairs, so the
    /// ones kept stay).
    static func kept(newestFirst seqs: [UInt64], sparseInterval: UInt64) -> [UInt64] {
        guard let newest = seqs.first else { return [] }
        guard sparseInterval > 0 else { return [newest] }
        var spacing = sparseInterval
        while newest / 8 >= spacing, spacing <= UInt64.max / 4 { spacing *= 2 }
        var buckets = Set<UInt64>()
        var sparse: [UInt64] = []
        for seq in seqs.dropFirst().reversed() where buckets.insert(seq / spacing).inserted { sparse.append(seq) }
        return [newest] + sparse.reversed()
    }

    /// Removes every snapshot file.
    func removeAll() throws {
        for seq in list() { try io.remove(path(for: seq)) }
    }

    /// Removes the snapshots covering `first` or a later seq, and makes the removals durable.
    ///
    /// Each file is held open across its removal and closed afterwards on a background queue: when this returns
    /// no name leads to its bytes and the directory is synced, while the file system's freeing of its blocks —
    /// tens of milliseconds per hundred megabytes on ext4, which unlinking a file nobody holds open waits for — comes
    /// at that close, off the caller's path (at the latest when the process exits).
    /// - Throws: ``Errno`` from a removal or the directory's sync.
    func remove(coveringFrom first: UInt64) throws {
        let doomed = list().filter { $0 >= first }
        guard !doomed.isEmpty else { return }
        var held: [Int32] = []
        defer {
            if !held.isEmpty {
                let (io, descriptors) = (io, held)
                DispatchQueue.global(qos: .utility).async { for fd in descriptors { io.close(fd) } }
            }
        }
        for seq in doomed {
            let file = path(for: seq)
            if let fd = try? io.open(file, .readOnly) { held.append(fd) }
            try io.remove(file)
        }
        try io.syncDirectory(directory)
    }
}

/// Why a snapshot was skipped.
struct SnapshotProblem: Error {
    var text: String
    init(_ text: String) { self.text = text }
}
