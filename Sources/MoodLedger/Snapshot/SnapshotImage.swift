import CPlatform
import Dispatch
import EventLog
import Platform
import Synchronization

/// A mapped, checked snapshot: the immutable base that the projections read through, row by row, without
/// decoding it on open. Shared by every state built from it (a class: copying a state never copies the snapshot).
// @unchecked Sendable: the mapped bytes and the decoded header never change; what is filled in lazily (decoded days,
// checked pieces, damage) is behind a Mutex, an Atomic or the atomic piece bitmap.
final class SnapshotImage: @unchecked Sendable {
    let file: MappedFile
    let header: SnapshotHeader
    let seq: UInt64
    let recordedAt: Int64
    let rowCount: Int
    let dayCount: Int
    /// The all-time word totals (small: decoded on open).
    let labelTotals: WordTable<LabelDomain, WordStat>
    let associationTotals: WordTable<AssociationDomain, WordStat>
    /// Each destination's sync progress and the pending erasures (small: decoded on open).
    let progress: [SyncProgress]
    let pendingErasures: [EntryID: UInt64]
    /// The log's sparse index through the covered record (empty when the writer had none to give; decoded on open).
    let positions: [IndexPosition]
    /// The sequence numbers of the `ledger.erased` and `remote.configured` events covered (decoded on open).
    let everyEntryEvents: [UInt64]
    /// The record filters' blocks: one per 1,024 sequence numbers covered.
    let filterBlockCount: Int
    let filters: UnsafeRawBufferPointer
    /// Each row's revision, and those of the entries that are no row, ids ascending (read by
    /// `SnapshotImage+Revisions.swift`).
    let rowRevisions: UnsafeRawBufferPointer
    let revisions: UnsafeRawBufferPointer
    /// The projections kept whole (decoded on open).
    let kept: KeptProjections

    private let rows: UnsafeRawBufferPointer
    private let arena: UnsafeRawBufferPointer
    private let slots: UnsafeRawBufferPointer
    private let days: UnsafeRawBufferPointer
    private let valences: UnsafeRawBufferPointer
    private let words: UnsafeRawBufferPointer
    private let sources: UnsafeRawBufferPointer
    /// The outbox sections (read by `SnapshotImage+Outbox.swift`).
    let outboxIndex: UnsafeRawBufferPointer
    let outboxRecords: UnsafeRawBufferPointer
    private let slotMask: Int
    /// Day aggregates decoded so far (by day index): analytics over all days decode each day once per image.
    private let decoded: Mutex<[Int: DayAggregate]> = Mutex([:])

    /// The checksum of every 1 KiB piece of the other sections.
    private let pieces: UnsafeRawBufferPointer
    /// The index in ``pieces`` of each section's first piece.
    private let firstPiece: [Int]
    /// One bit per piece, set once the piece is checked (shared by the threads reading the image); `nil` when every
    /// section was checked whole on open.
    private let checkedPieces: UnsafeMutablePointer<UInt64>?
    private let damaged = Atomic<Bool>(false)
    private let damage: Mutex<String?> = Mutex(nil)

    /// Maps nothing itself: checks `file` (already mapped) and keeps it.
    /// - Parameters:
    ///   - file: the mapped snapshot.
    ///   - fingerprint: the running projection code's schema fingerprint.
    ///   - checkWhereRead: check the sections read row by row a 1 KiB piece at a time when first read, instead of
    ///     whole now (a piece that then fails its checksum marks the image damaged: ``isDamaged``).
    /// - Throws: ``SnapshotProblem`` naming the first rule the bytes break.
    ///
    /// Long because validity is a list of checks in the file's order (header, table, each section) on one mapping,
    /// each refusing with its own reason (`Specs/ledger.md`, *Validity*).
    init(file: MappedFile, fingerprint: UInt32, checkWhereRead: Bool = false) throws(SnapshotProblem) {
        self.file = file
        let bytes = file.bytes
        guard bytes.count >= SnapshotLayout.headerSize, let header = SnapshotHeader.decode(bytes) else {
            throw SnapshotProblem("damaged header")
        }
        guard header.fingerprint == fingerprint else {
            throw SnapshotProblem("written by other projection code (fingerprint mismatch)")
        }
        guard header.fileLength == UInt64(bytes.count) else { throw SnapshotProblem("truncated or extended") }
        self.header = header
        let sections = try Self.sections(of: file, header: header, checkWhereRead: checkWhereRead)
        func section(_ kind: SnapshotLayout.Section) -> UnsafeRawBufferPointer { sections[Int(kind.rawValue) - 1] }
        pieces = section(.pieces)
        var first: [Int] = []
        var total = 0
        for kind in SnapshotLayout.Section.allCases where kind != .pieces {
            first.append(total)
            total += SnapshotLayout.pieces(ofLength: section(kind).count)
        }
        guard pieces.count == total * 4 else {
            throw SnapshotProblem("pieces: length is not 4 × the other sections' pieces")
        }
        firstPiece = first

        let meta = section(.meta)
        guard meta.count == SnapshotLayout.metaSize else { throw SnapshotProblem("meta: wrong length") }
        seq = meta.le(0)
        recordedAt = Int64(bitPattern: meta.le(8))
        rowCount = Int(meta.le(16) as UInt32)
        dayCount = Int(meta.le(20) as UInt32)
        let slotCount = Int(meta.le(24) as UInt32)
        let sourceCount = Int(meta.le(28) as UInt32)
        guard seq == header.location.seq, recordedAt == header.recordedAt else {
            throw SnapshotProblem("meta: seq or recorded_at differs from the header")
        }
        rows = section(.rows)
        arena = section(.arena)
        slots = section(.idSlots)
        days = section(.days)
        valences = section(.valences)
        words = section(.words)
        sources = section(.sources)
        guard rows.count == rowCount * SnapshotLayout.rowSize else {
            throw SnapshotProblem("rows: length is not rows × 48")
        }
        guard slotCount.nonzeroBitCount == 1, slotCount > rowCount, slots.count == slotCount * 8 else {
            throw SnapshotProblem("id slots: not a power of two above the row count")
        }
        slotMask = slotCount - 1
        guard days.count == dayCount * SnapshotLayout.daySize else {
            throw SnapshotProblem("days: length is not days × 32")
        }
        guard valences.count % 8 == 0 else { throw SnapshotProblem("valences: length is not a multiple of 8") }
        guard sources.count == sourceCount * SnapshotLayout.sourceSize, sourceCount <= rowCount else {
            throw SnapshotProblem("sources: length is not sources × 16")
        }
        try Self.checkDays(days, count: dayCount, rows: rowCount, valences: valences.count / 8, words: words.count)
        do throws(ByteReader.Malformed) {
            var r = ByteReader(section(.totals))
            labelTotals = try Self.readStats(from: &r, limit: rowCount)
            associationTotals = try Self.readStats(from: &r, limit: rowCount)
            guard r.isAtEnd else { throw ByteReader.Malformed(what: "trailing bytes") }
        } catch {
            throw SnapshotProblem("totals: \(error.what)")
        }
        outboxIndex = section(.outboxIndex)
        outboxRecords = section(.outboxRecords)
        guard outboxIndex.count % SnapshotLayout.outboxIndexSize == 0 else {
            throw SnapshotProblem("outbox index: length is not a multiple of 24")
        }
        do throws(ByteReader.Malformed) {
            (progress, pendingErasures) = try SnapshotCodec.decodeSync(section(.sync), seq: seq)
        } catch {
            throw SnapshotProblem("sync: \(error.what)")
        }
        filterBlockCount = seq == 0 ? 0 : Int((seq - 1) / RecordIndex.blockRecords) + 1
        (positions, everyEntryEvents) = try Self.decodeRecordIndex(
            section(.recordIndex), blocks: filterBlockCount, seq: seq)
        filters = section(.recordFilters)
        guard filters.count == filterBlockCount * SnapshotLayout.filterSize else {
            throw SnapshotProblem("record filters: length is not 2,048 × one block per 1,024 seqs covered")
        }
        rowRevisions = section(.rowRevisions)
        guard rowRevisions.count == rowCount * 8 else { throw SnapshotProblem("row revisions: length is not rows × 8") }
        revisions = section(.revisions)
        guard revisions.count % SnapshotLayout.revisionSize == 0 else {
            throw SnapshotProblem("revisions: length is not a multiple of 24")
        }
        do throws(ByteReader.Malformed) {
            kept = try KeptProjections(decoding: section(.projections), seq: seq)
        } catch {
            throw SnapshotProblem("projections: \(error.what)")
        }
        // Allocated last: an initializer that throws after it would never run `deinit` to free it.
        if checkWhereRead {
            let count = max(1, (total + 63) / 64)
            checkedPieces = UnsafeMutablePointer<UInt64>.allocate(capacity: count)
            checkedPieces?.initialize(repeating: 0, count: count)
        } else {
            checkedPieces = nil
        }
    }

    deinit {
        checkedPieces?.deallocate()
    }

    /// Reads and checks the section table and every section's checksum (with `checkWhereRead`, only those of the
    /// sections not read row by row), a window at a time (each window's pages are released after it is checked,
    /// so checking costs no resident memory).
    private static func sections(
        of file: MappedFile, header: SnapshotHeader, checkWhereRead: Bool
    ) throws(SnapshotProblem)
        -> [UnsafeRawBufferPointer]
    {
        let bytes = file.bytes
        let kinds = SnapshotLayout.Section.allCases
        guard header.sectionCount == kinds.count else {
            throw SnapshotProblem("section table: \(header.sectionCount) sections, not \(kinds.count)")
        }
        let tableEnd = SnapshotLayout.headerSize + kinds.count * SnapshotLayout.tableEntrySize
        guard bytes.count >= tableEnd else { throw SnapshotProblem("section table: past the end") }
        let table = UnsafeRawBufferPointer(rebasing: bytes[SnapshotLayout.headerSize..<tableEnd])
        guard CRC32C.mask(CRC32C.checksum(table)) == header.tableCRC else {
            throw SnapshotProblem("section table: checksum mismatch")
        }
        var result: [UnsafeRawBufferPointer] = []
        var previousEnd = UInt64(tableEnd)
        for (index, kind) in kinds.enumerated() {
            let at = index * SnapshotLayout.tableEntrySize
            let code: UInt32 = table.le(at)
            let crc: UInt32 = table.le(at + 4)
            let offset: UInt64 = table.le(at + 8)
            let length: UInt64 = table.le(at + 16)
            guard code == kind.rawValue else {
                throw SnapshotProblem("section table: entry \(index) is kind \(code), not \(kind.rawValue)")
            }
            guard offset % 8 == 0, offset >= previousEnd, offset <= UInt64(bytes.count),
                length <= UInt64(bytes.count) - offset
            else {
                throw SnapshotProblem(
                    "section \(kind.rawValue): offset \(offset) length \(length) outside the file or out of order")
            }
            let section = UnsafeRawBufferPointer(rebasing: bytes[Int(offset)..<Int(offset + length)])
            guard
                checkWhereRead && kind.isCheckedWhereRead
                    || CRC32C.mask(CRC32C.finish(checksumState(of: Int(offset)..<Int(offset + length), in: file)))
                        == crc
            else {
                throw SnapshotProblem("section \(kind.rawValue): checksum mismatch")
            }
            previousEnd = offset + length
            result.append(section)
        }
        return result
    }

    /// The running CRC-32C state of a section, read 8 MiB at a time with each window's pages released after it.
    /// A section of 4 MiB or more is checked in two halves by two threads, their states combined: the check is
    /// most of an open (~10 ms for the 85 MB snapshot of 1,000,000 events), and a second core halves it.
    static func checksumState(of range: Range<Int>, in file: MappedFile) -> UInt32 {
        @Sendable func run(_ range: Range<Int>, from initial: UInt32) -> UInt32 {
            var state = initial
            var start = range.lowerBound
            while start < range.upperBound {
                let end = min(range.upperBound, start + (8 << 20))
                state = CRC32C.extend(state, UnsafeRawBufferPointer(rebasing: file.bytes[start..<end]))
                file.release(start..<end)
                start = end
            }
            return state
        }
        guard range.count >= 4 << 20 else { return run(range, from: 0xFFFF_FFFF) }
        let middle = range.lowerBound + range.count / 2 / 4096 * 4096
        let states = Mutex((first: UInt32(0), second: UInt32(0)))
        DispatchQueue.concurrentPerform(iterations: 2) { half in
            if half == 0 {
                let state = run(range.lowerBound..<middle, from: 0xFFFF_FFFF)
                states.withLock { $0.first = state }
            } else {
                let state = run(middle..<range.upperBound, from: 0)
                states.withLock { $0.second = state }
            }
        }
        let (first, second) = states.withLock { ($0.first, $0.second) }
        return CRC32C.combine(first, second, secondLength: range.upperBound - middle)
    }

    // MARK: - Checking where read

    /// Whether a piece read since open failed its checksum, or the file was cut under the process (SIGBUS): what
    /// was read through this image may be wrong, and a state reading through it must be rebuilt from the log.
    var isDamaged: Bool { damaged.load(ordering: .acquiring) || file.isDamaged }

    /// What is damaged, for a notice (`nil` while nothing is).
    var damageDescription: String? {
        if let text = damage.withLock({ $0 }) { return text }
        return file.isDamaged ? "the file was cut short while mapped" : nil
    }

    /// Checks the pieces of a section that `count` bytes from `start` lie in, those not checked yet.
    @inline(__always)
    func check(_ kind: SnapshotLayout.Section, _ start: Int, _ count: Int) {
        guard let bits = checkedPieces, count > 0 else { return }
        let base = firstPiece[Int(kind.rawValue) - 1]
        var piece = start / SnapshotLayout.pieceSize
        let last = (start + count - 1) / SnapshotLayout.pieceSize
        while piece <= last {
            if cplatform_bit_test(bits, base + piece) == 0 { checkPiece(kind, piece) }
            piece += 1
        }
    }

    @inline(never)
    private func checkPiece(_ kind: SnapshotLayout.Section, _ piece: Int) {
        let bytes = buffer(kind)
        let start = piece * SnapshotLayout.pieceSize
        guard let bits = checkedPieces, piece >= 0, start < bytes.count else { return }
        let end = min(bytes.count, start + SnapshotLayout.pieceSize)
        let index = firstPiece[Int(kind.rawValue) - 1] + piece
        let stored: UInt32 = pieces.le(index * 4)
        if CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))) != stored {
            let offset = (bytes.baseAddress.map { $0 - UnsafeRawPointer(file.bytes.baseAddress!) } ?? 0) + start
            damage.withLock { text in
                if text == nil {
                    text = "section \(kind.rawValue): the piece at byte \(offset) does not match its checksum"
                }
            }
            damaged.store(true, ordering: .releasing)
        }
        cplatform_bit_set(bits, index)
    }

    private func buffer(_ kind: SnapshotLayout.Section) -> UnsafeRawBufferPointer {
        switch kind {
        case .rows: rows
        case .arena: arena
        case .idSlots: slots
        case .valences: valences
        case .words: words
        case .sources: sources
        case .outboxIndex: outboxIndex
        case .outboxRecords: outboxRecords
        case .recordFilters: filters
        case .rowRevisions: rowRevisions
        case .revisions: revisions
        case .meta, .days, .totals, .sync, .recordIndex, .projections, .pieces:
            UnsafeRawBufferPointer(start: nil, count: 0)
        }
    }

    /// Drops the mapped pages from the process's resident memory (they are read again, from the page cache, when used).
    func releaseResidentPages() { file.release(0..<file.bytes.count) }

    /// Days ascending and in range, rows, valences and word stats each in contiguous runs that add up.
    private static func checkDays(
        _ days: UnsafeRawBufferPointer, count: Int, rows: Int, valences: Int, words: Int
    )
        throws(SnapshotProblem)
    {
        var nextRow = 0
        var nextValence = 0
        var nextWords = 0
        var previousDay = Int64.min
        let range =
            Int64(
                EventCodec.loggedAtRange.lowerBound / 86_400_000 - 2)...Int64(
                EventCodec.loggedAtRange.upperBound / 86_400_000 + 2)
        for index in 0..<count {
            let at = index * SnapshotLayout.daySize
            let day = Int64(Int32(bitPattern: days.le(at)))
            let first = Int(days.le(at + 4) as UInt32)
            let rowCount = Int(days.le(at + 8) as UInt32)
            let dailyMood: UInt32 = days.le(at + 12)
            let firstValence = Int(days.le(at + 16) as UInt32)
            let valenceCount = Int(days.le(at + 20) as UInt32)
            let wordsOffset = Int(days.le(at + 24) as UInt32)
            let wordsLength = Int(days.le(at + 28) as UInt32)
            guard day > previousDay, range.contains(day) else {
                throw SnapshotProblem("days: day \(day) out of order or range")
            }
            guard first == nextRow, rowCount > 0, rowCount <= rows - first else {
                throw SnapshotProblem("days: rows of day \(day) do not follow on")
            }
            guard dailyMood == SnapshotLayout.noRow || (Int(dailyMood) >= first && Int(dailyMood) < first + rowCount)
            else {
                throw SnapshotProblem("days: daily mood of day \(day) outside its rows")
            }
            guard firstValence == nextValence, valenceCount <= rowCount, valenceCount <= valences - firstValence else {
                throw SnapshotProblem("days: valences of day \(day) do not follow on")
            }
            guard wordsOffset == nextWords, wordsLength <= words - wordsOffset else {
                throw SnapshotProblem("days: word stats of day \(day) do not follow on")
            }
            previousDay = day
            nextRow += rowCount
            nextValence += valenceCount
            nextWords += wordsLength
        }
        guard nextRow == rows, nextValence == valences, nextWords == words else {
            throw SnapshotProblem("days: rows, valences or word stats left over")
        }
    }

    // MARK: - Rows

    // Row numbers come from the day records and id slots, which the load checked against `rowCount`: a number out
    // of range is a bug here, never a property of the file, and stops the process rather than read past the rows.

    @inline(__always)
    func id(ofRow row: Int) -> EntryID {
        precondition(row >= 0, "snapshot row \(row) of \(rowCount)")
        precondition(row < rowCount, "snapshot row \(row) of \(rowCount)")
        check(.rows, row * SnapshotLayout.rowSize, 16)
        return rows.entryID(row * SnapshotLayout.rowSize)
    }

    @inline(__always)
    func milliseconds(ofRow row: Int) -> Int64 {
        precondition(row >= 0, "snapshot row \(row) of \(rowCount)")
        precondition(row < rowCount, "snapshot row \(row) of \(rowCount)")
        check(.rows, row * SnapshotLayout.rowSize + 16, 8)
        return Int64(bitPattern: rows.le(row * SnapshotLayout.rowSize + 16))
    }

    /// The key a day's list orders by.
    func key(ofRow row: Int) -> DayKey { DayKey(ms: milliseconds(ofRow: row), id: id(ofRow: row)) }

    /// The entry of a row, decoded (nil if the row breaks a rule: only a crafted file holds such a row).
    func entry(atRow row: Int) -> MoodEntry? {
        precondition(row >= 0, "snapshot row \(row) of \(rowCount)")
        precondition(row < rowCount, "snapshot row \(row) of \(rowCount)")
        let at = row * SnapshotLayout.rowSize
        check(.rows, at, SnapshotLayout.rowSize)
        let createdAt = Int64(bitPattern: rows.le(at + 24))
        let updatedAt = Int64(bitPattern: rows.le(at + 32))
        let offset = Int(rows.le(at + 40) as UInt32)
        let length = Int(rows.le(at + 44) as UInt32)
        guard offset <= arena.count, length <= arena.count - offset else { return nil }
        check(.arena, offset, length)
        var r = ByteReader(UnsafeRawBufferPointer(rebasing: arena[offset..<(offset + length)]))
        guard var entry = try? EventCodec.readEntryBody(id: id(ofRow: row), from: &r, withTags: true), r.isAtEnd,
            entry.loggedAt.milliseconds == milliseconds(ofRow: row),
            SnapshotCodec.isTimeInRange(milliseconds: createdAt),
            SnapshotCodec.isTimeInRange(milliseconds: updatedAt)
        else { return nil }
        entry.createdAt = createdAt
        entry.updatedAt = updatedAt
        return entry
    }

    /// A row's 48 bytes and its body's bytes, as stored, if the body lies inside the arena (the snapshot writer
    /// copies unchanged rows with them).
    func rawRow(_ row: Int) -> (row: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer)? {
        precondition(row >= 0, "snapshot row \(row) of \(rowCount)")
        precondition(row < rowCount, "snapshot row \(row) of \(rowCount)")
        let at = row * SnapshotLayout.rowSize
        check(.rows, at, SnapshotLayout.rowSize)
        let offset = Int(rows.le(at + 40) as UInt32)
        let length = Int(rows.le(at + 44) as UInt32)
        guard offset <= arena.count, length <= arena.count - offset else { return nil }
        check(.arena, offset, length)
        return (
            UnsafeRawBufferPointer(rebasing: rows[at..<(at + SnapshotLayout.rowSize)]),
            UnsafeRawBufferPointer(rebasing: arena[offset..<(offset + length)])
        )
    }

    /// A day's stored valences and word stats, as stored.
    func rawAggregate(_ day: Day) -> (valences: UnsafeRawBufferPointer, words: UnsafeRawBufferPointer) {
        check(.valences, day.valences.lowerBound * 8, day.valences.count * 8)
        check(.words, day.words.lowerBound, day.words.count)
        return (
            UnsafeRawBufferPointer(rebasing: valences[(day.valences.lowerBound * 8)..<(day.valences.upperBound * 8)]),
            UnsafeRawBufferPointer(rebasing: words[day.words])
        )
    }

    /// The source-index hash of every row that has one (the writer carries them over for copied rows).
    func sourceHashes() -> [Int: UInt64] {
        var result: [Int: UInt64] = [:]
        let count = sources.count / SnapshotLayout.sourceSize
        check(.sources, 0, sources.count)
        result.reserveCapacity(count)
        for index in 0..<count {
            let row = Int(sources.le(index * SnapshotLayout.sourceSize + 8) as UInt32)
            if row < rowCount { result[row] = sources.le(index * SnapshotLayout.sourceSize) }
        }
        return result
    }

    /// Starts loading the id slot where a lookup of `id` begins into the CPU's caches (a hint; see ``IdentifiedTable``).
    @inline(__always)
    func prefetch(_ id: EntryID) {
        guard let base = slots.baseAddress else { return }
        cplatform_prefetch(base + (id.slotHash & slotMask) * 8)
    }

    /// The row of an id, if the snapshot holds it (open addressing, linear probing, at most every slot once; a row
    /// is read only where the slot's fingerprint matches).
    func row(of id: EntryID) -> Int? {
        let hash = UInt64(bitPattern: Int64(id.slotHash))
        let fingerprint = UInt32(truncatingIfNeeded: hash >> 32)
        var slot = Int(truncatingIfNeeded: hash) & slotMask
        for _ in 0...slotMask {
            check(.idSlots, slot * 8, 8)
            let value: UInt64 = slots.le(slot * 8)
            if value == 0 { return nil }
            let row = Int(UInt32(truncatingIfNeeded: value))
            if UInt32(truncatingIfNeeded: value >> 32) == fingerprint, row >= 1, row <= rowCount,
                self.id(ofRow: row - 1) == id
            {
                return row - 1
            }
            slot = (slot + 1) & slotMask
        }
        return nil
    }

    /// FNV-1a (64-bit) over the source's code byte, then the source id's UTF-8 bytes.
    static func sourceHash(_ source: MoodSource, _ sourceID: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        hash = (hash ^ UInt64(source.code)) &* 0x0000_0100_0000_01B3
        for byte in sourceID.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
    }

    /// The rows holding a (source, source id) key, in row order.
    func rows(source: MoodSource, sourceID: String) -> [Int] {
        let hash = Self.sourceHash(source, sourceID)
        let count = sources.count / SnapshotLayout.sourceSize
        var low = 0
        var high = count
        while low < high {
            let mid = (low + high) / 2
            check(.sources, mid * SnapshotLayout.sourceSize, 8)
            if (sources.le(mid * SnapshotLayout.sourceSize) as UInt64) < hash { low = mid + 1 } else { high = mid }
        }
        var result: [Int] = []
        while low < count {
            check(.sources, low * SnapshotLayout.sourceSize, SnapshotLayout.sourceSize)
            guard (sources.le(low * SnapshotLayout.sourceSize) as UInt64) == hash else { break }
            let row = Int(sources.le(low * SnapshotLayout.sourceSize + 8) as UInt32)
            if row < rowCount { result.append(row) }
            low += 1
        }
        return result
    }

    // MARK: - Days

    /// One day's record.
    struct Day {
        var date: LocalDate
        var rows: Range<Int>
        var dailyMoodRow: Int?
        var valences: Range<Int>
        var words: Range<Int>
    }

    func day(at index: Int) -> Day {
        let at = index * SnapshotLayout.daySize
        let first = Int(days.le(at + 4) as UInt32)
        let mood: UInt32 = days.le(at + 12)
        let firstValence = Int(days.le(at + 16) as UInt32)
        let wordsOffset = Int(days.le(at + 24) as UInt32)
        return Day(
            date: LocalDate(daysSinceEpoch: Int32(bitPattern: days.le(at))),
            rows: first..<(first + Int(days.le(at + 8) as UInt32)),
            dailyMoodRow: mood == SnapshotLayout.noRow ? nil : Int(mood),
            valences: firstValence..<(firstValence + Int(days.le(at + 20) as UInt32)),
            words: wordsOffset..<(wordsOffset + Int(days.le(at + 28) as UInt32)))
    }

    /// The index of a date's record (binary search), if the snapshot has entries that day.
    func dayIndex(of date: LocalDate) -> Int? {
        var low = 0
        var high = dayCount
        while low < high {
            let mid = (low + high) / 2
            let day = Int32(bitPattern: days.le(mid * SnapshotLayout.daySize))
            if day == date.daysSinceEpoch { return mid }
            if day < date.daysSinceEpoch { low = mid + 1 } else { high = mid }
        }
        return nil
    }

    /// Every day with entries, ascending.
    var dates: [LocalDate] {
        (0..<dayCount).map { LocalDate(daysSinceEpoch: Int32(bitPattern: days.le($0 * SnapshotLayout.daySize))) }
    }

    /// The analytics aggregate of the day at `index`, decoded once and then kept.
    func aggregate(dayAt index: Int) -> DayAggregate {
        if let known = decoded.withLock({ $0[index] }) { return known }
        let aggregate = aggregate(day(at: index))
        decoded.withLock { $0[index] = aggregate }
        return aggregate
    }

    /// A day's analytics aggregate, decoded (an empty one for a malformed record: only a crafted file has one).
    func aggregate(_ day: Day) -> DayAggregate {
        var aggregate = DayAggregate()
        aggregate.count = day.rows.count
        aggregate.valences.reserveCapacity(day.valences.count)
        check(.valences, day.valences.lowerBound * 8, day.valences.count * 8)
        check(.words, day.words.lowerBound, day.words.count)
        for index in day.valences {
            let q = Int64(bitPattern: valences.le(index * 8))
            guard q >= -Valence.scale, q <= Valence.scale else { continue }
            aggregate.valences.append(q)
            aggregate.valenceSum += q
            aggregate.valenceSquareSum += Int128(q) * Int128(q)
        }
        var r = ByteReader(UnsafeRawBufferPointer(rebasing: words[day.words]))
        aggregate.labels = (try? Self.readStats(from: &r, limit: day.rows.count)) ?? WordTable()
        aggregate.associations = (try? Self.readStats(from: &r, limit: day.rows.count)) ?? WordTable()
        return aggregate
    }

    /// A word-stats table: `varint n · n × (word · varint count · varint valence count · signed valence sum)`.
    static func readStats<D>(
        from r: inout ByteReader, limit: Int
    ) throws(ByteReader.Malformed) -> WordTable<D, WordStat> {
        var table = WordTable<D, WordStat>()
        let n = try r.count()
        for _ in 0..<n {
            let word: VocabularyWord<D> = try EventCodec.readWord(from: &r)
            let count = try r.varint()
            let valenceCount = try r.varint()
            let sum = try r.signed()
            guard count >= 1, count <= UInt64(limit), count <= UInt64(Int32.max), valenceCount <= count,
                sum.magnitude <= UInt64(Valence.scale) * valenceCount, table[word] == nil
            else {
                throw ByteReader.Malformed(what: "word stats out of range or repeated")
            }
            table[word] = WordStat(count: Int(count), valenceCount: Int(valenceCount), valenceSum: sum)
        }
        return table
    }
}
