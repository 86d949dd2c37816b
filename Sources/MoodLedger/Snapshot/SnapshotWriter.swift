import EventLog

/// Writes a version-4 snapshot file (`Specs/ledger.md`, *Snapshots*): the state's entries as fixed-width rows
/// ordered by local day, their bodies in one arena, the id and source indexes, per-day analytics and the outbox.
enum SnapshotWriter {
    /// The bytes of a snapshot of `state` covering `location`.
    /// - Throws: ``SnapshotProblem`` when the entries' bodies exceed the 4 GiB a row can address.
    static func file(
        of state: LedgerState, location: RecordLocation, fileID: [UInt8]
    ) throws(SnapshotProblem) -> [UInt8] {
        let pieces = try self.pieces(of: state, location: location, fileID: fileID)
        var file: [UInt8] = []
        file.reserveCapacity(pieces.last.map { $0.offset + $0.bytes.count } ?? 0)
        for (offset, bytes) in pieces {
            file.append(contentsOf: repeatElement(0, count: offset - file.count))
            file.append(contentsOf: bytes)
        }
        return file
    }

    /// The snapshot file as its pieces and where each starts (header and section table, then each section): the bytes
    /// between them are zero. Written piece by piece, a large snapshot is never also copied whole in memory.
    static func pieces(
        of state: LedgerState, location: RecordLocation, fileID: [UInt8]
    ) throws(SnapshotProblem) -> [(offset: Int, bytes: [UInt8])] {
        var rows = ByteWriter(capacity: state.entries.count * SnapshotLayout.rowSize)
        var arena = ByteWriter(capacity: state.entries.count * 48)
        var days = ByteWriter(capacity: 4096 * SnapshotLayout.daySize)
        var dayCount = 0
        var valences = ByteWriter(capacity: state.entries.count * 8)
        var words = ByteWriter(capacity: 4096 * 32)
        var ids: [EntryID] = []
        ids.reserveCapacity(state.entries.count)
        var sources: [(hash: UInt64, row: UInt32)] = []
        var valenceCount = 0
        var overflow = false
        var hashes: (image: SnapshotImage, byRow: [Int: UInt64])?
        state.entries.forEachDaySource { date, source in
            let firstRow = ids.count
            var moodRow = SnapshotLayout.noRow
            let wordsStart = words.bytes.count
            let valencesStart = valences.bytes.count
            let dayValences: Int
            if case .image(let image, let day) = source, state.analytics.readsImage(image, on: date),
                let raw = storedRows(image, day)
            {
                // An unchanged day: its rows, bodies, valences and word stats are copied as they are.
                if hashes?.image !== image { hashes = (image, image.sourceHashes()) }
                for (row, bytes) in zip(day.rows, raw) {
                    let start = arena.bytes.count
                    arena.bytes.append(contentsOf: bytes.body)
                    if arena.bytes.count > Int(UInt32.max) { overflow = true }
                    rows.bytes.append(contentsOf: bytes.row[0..<40])
                    rows.fixed(UInt64(truncatingIfNeeded: start), 4)
                    rows.fixed(UInt64(bytes.body.count), 4)
                    if row == day.dailyMoodRow { moodRow = UInt32(ids.count) }
                    if let hash = hashes?.byRow[row] { sources.append((hash, UInt32(ids.count))) }
                    ids.append(image.id(ofRow: row))
                }
                let stored = image.rawAggregate(day)
                valences.bytes.append(contentsOf: stored.valences)
                words.bytes.append(contentsOf: stored.words)
                dayValences = day.valences.count
            } else {
                let entries: [MoodEntry]
                let dailyMood: EntryID?
                switch source {
                case .image(let image, let day):
                    entries = day.rows.compactMap(image.entry(atRow:))
                    dailyMood = day.dailyMoodRow.map(image.id(ofRow:))
                case .entries(let list, let mood):
                    entries = list
                    dailyMood = mood
                }
                for entry in entries {
                    let start = arena.bytes.count
                    EventCodec.writeEntryBody(entry, to: &arena, withTags: true)
                    if arena.bytes.count > Int(UInt32.max) { overflow = true }
                    rows.id(entry.id)
                    rows.fixed(UInt64(bitPattern: entry.loggedAt.milliseconds), 8)
                    rows.fixed(UInt64(bitPattern: entry.createdAt), 8)
                    rows.fixed(UInt64(bitPattern: entry.updatedAt), 8)
                    rows.fixed(UInt64(truncatingIfNeeded: start), 4)
                    rows.fixed(UInt64(truncatingIfNeeded: arena.bytes.count - start), 4)
                    if entry.id == dailyMood { moodRow = UInt32(ids.count) }
                    if let sourceID = entry.sourceID {
                        sources.append((SnapshotImage.sourceHash(entry.source, sourceID), UInt32(ids.count)))
                    }
                    ids.append(entry.id)
                }
                let aggregate = state.analytics.days[date] ?? DayAggregate()
                writeStats(aggregate.labels, to: &words)
                writeStats(aggregate.associations, to: &words)
                for q in aggregate.valences { valences.fixed(UInt64(bitPattern: q), 8) }
                dayValences = aggregate.valences.count
            }
            guard ids.count > firstRow else {
                // A day whose rows all failed to decode (only a crafted image has one): no day record, no stats.
                words.bytes.removeSubrange(wordsStart...)
                valences.bytes.removeSubrange(valencesStart...)
                return
            }
            days.fixed(UInt64(UInt32(bitPattern: date.daysSinceEpoch)), 4)
            days.fixed(UInt64(firstRow), 4)
            days.fixed(UInt64(ids.count - firstRow), 4)
            days.fixed(UInt64(moodRow), 4)
            days.fixed(UInt64(valenceCount), 4)
            days.fixed(UInt64(dayValences), 4)
            days.fixed(UInt64(wordsStart), 4)
            days.fixed(UInt64(words.bytes.count - wordsStart), 4)
            valenceCount += dayValences
            dayCount += 1
        }
        guard !overflow, ids.count < Int(UInt32.max) / 2 else {
            throw SnapshotProblem("entries too large for one snapshot")
        }
        let slots = idSlots(ids)
        sources.sort { ($0.hash, $0.row) < ($1.hash, $1.row) }
        var sourceBytes = ByteWriter(capacity: sources.count * SnapshotLayout.sourceSize)
        for source in sources {
            sourceBytes.fixed(source.hash, 8)
            sourceBytes.fixed(UInt64(source.row), 4)
            sourceBytes.fixed(0, 4)
        }
        var totals = ByteWriter(capacity: 1024)
        writeStats(state.analytics.labelTotals, to: &totals)
        writeStats(state.analytics.associationTotals, to: &totals)
        var meta = ByteWriter(capacity: SnapshotLayout.metaSize)
        meta.fixed(state.seq, 8)
        meta.fixed(UInt64(bitPattern: state.recordedAt), 8)
        meta.fixed(UInt64(ids.count), 4)
        meta.fixed(UInt64(dayCount), 4)
        meta.fixed(UInt64(slots.count / 8), 4)
        meta.fixed(UInt64(sources.count), 4)
        let outbox = SnapshotCodec.encodeOutbox(state)
        guard outbox.records.count <= Int(UInt32.max) else {
            throw SnapshotProblem("outbox too large for one snapshot")
        }
        var sections = [
            meta.bytes, rows.bytes, arena.bytes, slots, days.bytes, valences.bytes, words.bytes, totals.bytes,
            sourceBytes.bytes, outbox.index, outbox.records, outbox.sync
        ]
        sections.append(pieceChecksums(of: sections))
        return assemble(sections, location: location, recordedAt: state.recordedAt, fileID: fileID)
    }

    /// The pieces section: for each section in order, the masked CRC-32C of each of its 1 KiB pieces (the last
    /// one shorter), which lets a reader check a large snapshot where it reads instead of all of it on open.
    static func pieceChecksums(of sections: [[UInt8]]) -> [UInt8] {
        var w = ByteWriter(capacity: sections.reduce(0) { $0 + SnapshotLayout.pieces(ofLength: $1.count) } * 4)
        for section in sections {
            section.withUnsafeBytes { bytes in
                var start = 0
                while start < bytes.count {
                    let end = min(bytes.count, start + SnapshotLayout.pieceSize)
                    w.fixed(
                        UInt64(CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[start..<end])))), 4)
                    start = end
                }
            }
        }
        return w.bytes
    }

    /// A day's rows and bodies as the image stores them, if every body lies inside its arena.
    private static func storedRows(
        _ image: SnapshotImage, _ day: SnapshotImage.Day
    )
        -> [(row: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer)]?
    {
        let raw = day.rows.compactMap(image.rawRow)
        return raw.count == day.rows.count ? raw : nil
    }

    /// Header, section table, then each section at the next multiple of 8 (zero padding).
    private static func assemble(
        _ sections: [[UInt8]], location: RecordLocation, recordedAt: Int64, fileID: [UInt8]
    ) -> [(offset: Int, bytes: [UInt8])] {
        var table = ByteWriter(capacity: sections.count * SnapshotLayout.tableEntrySize)
        var offset = SnapshotLayout.headerSize + sections.count * SnapshotLayout.tableEntrySize
        var offsets: [Int] = []
        for (index, section) in sections.enumerated() {
            offset = (offset + 7) / 8 * 8
            offsets.append(offset)
            table.fixed(UInt64(index + 1), 4)
            table.fixed(UInt64(CRC32C.mask(CRC32C.checksum(section))), 4)
            table.fixed(UInt64(offset), 8)
            table.fixed(UInt64(section.count), 8)
            offset += section.count
        }
        let header = SnapshotHeader(
            sectionCount: sections.count, fingerprint: SnapshotCodec.fingerprint, location: location,
            fileID: fileID, recordedAt: recordedAt, fileLength: UInt64(offset),
            tableCRC: CRC32C.mask(CRC32C.checksum(table.bytes)))
        return [(0, header.encoded() + table.bytes)] + zip(offsets, sections).map { ($0, $1) }
    }

    /// The id slots: a power of two with the load at or below 0.7, each `u64` holding `row + 1` in its low half
    /// and the hash's high 32 bits (a fingerprint: a lookup of an absent id rarely reads a row) in its high half,
    /// at the id's hash, linear probing.
    private static func idSlots(_ ids: [EntryID]) -> [UInt8] {
        var count = 16
        while count * 7 < ids.count * 10 { count <<= 1 }
        var slots = [UInt64](repeating: 0, count: count)
        let mask = count - 1
        for (row, id) in ids.enumerated() {
            let hash = UInt64(bitPattern: Int64(id.slotHash))
            var slot = Int(truncatingIfNeeded: hash) & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = (hash >> 32) << 32 | UInt64(row + 1)
        }
        var w = ByteWriter(capacity: count * 8)
        for value in slots { w.fixed(value, 8) }
        return w.bytes
    }

    /// Recomputes every section checksum, the table's and the header's of a snapshot's bytes, so that a mutation
    /// of them reaches the readers (the seeded mutation test and the fuzz harness; never used on real files).
    static func reseal(_ bytes: inout [UInt8]) {
        let sections = SnapshotLayout.Section.allCases.count
        let tableEnd = SnapshotLayout.headerSize + sections * SnapshotLayout.tableEntrySize
        guard bytes.count >= tableEnd else { return }
        func put(_ value: UInt32, at offset: Int) {
            withUnsafeBytes(of: value.littleEndian) { for i in 0..<4 { bytes[offset + i] = $0[i] } }
        }
        func u64(_ offset: Int) -> UInt64 { bytes.withUnsafeBytes { $0.le(offset) } }
        func section(_ index: Int) -> Range<Int>? {
            let entry = SnapshotLayout.headerSize + index * SnapshotLayout.tableEntrySize
            let offset = u64(entry + 8)
            let length = u64(entry + 16)
            guard offset <= UInt64(bytes.count), length <= UInt64(bytes.count) - offset else { return nil }
            return Int(offset)..<Int(offset + length)
        }
        // The pieces section first (where it fits as laid out): its own checksum follows below.
        let ranges = (0..<(sections - 1)).compactMap(section)
        if ranges.count == sections - 1, let last = section(sections - 1) {
            let pieces = pieceChecksums(of: ranges.map { Array(bytes[$0]) })
            if pieces.count == last.count { bytes.replaceSubrange(last, with: pieces) }
        }
        for index in 0..<sections {
            let entry = SnapshotLayout.headerSize + index * SnapshotLayout.tableEntrySize
            let offset = u64(entry + 8)
            let length = u64(entry + 16)
            guard offset <= UInt64(bytes.count), length <= UInt64(bytes.count) - offset else { continue }
            put(CRC32C.mask(CRC32C.checksum(Array(bytes[Int(offset)..<Int(offset + length)]))), at: entry + 4)
        }
        put(CRC32C.mask(CRC32C.checksum(Array(bytes[SnapshotLayout.headerSize..<tableEnd]))), at: 72)
        put(CRC32C.mask(CRC32C.checksum(Array(bytes[0..<76]))), at: 76)
    }

    /// A word-stats table, canonical words in Apple's order, then custom words by name.
    private static func writeStats<D>(_ table: WordTable<D, WordStat>, to w: inout ByteWriter) {
        let pairs = table.pairs
        w.varint(UInt64(pairs.count))
        for (word, stat) in pairs {
            EventCodec.writeWord(word, to: &w)
            w.varint(UInt64(stat.count))
            w.varint(UInt64(stat.valenceCount))
            w.signed(stat.valenceSum)
        }
    }
}
