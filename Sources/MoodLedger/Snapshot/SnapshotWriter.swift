import EventLog

/// Writes a version-4 snapshot file (`Specs/ledger.md`, *Snapshots*): the state's entries as fixed-width rows
/// ordered by local day, their bodies in one arena, the id and source indexes, per-day analytics and the outbox.
///
/// The rows and the arena, which grow with the entries, go to the file as they are made (a MiB at a time, their
/// checksums taken on the way); the other sections are a few bytes per entry or per day and are written at the end,
/// then the header and section table at the start.
enum SnapshotWriter {
    /// Where the file's bytes go: `bytes` at `offset`, never overlapping what was given before.
    typealias Sink = (_ offset: Int, _ bytes: UnsafeRawBufferPointer) throws -> Void
    /// Calls its argument with every day that has entries, ascending, and where that day's entries are.
    typealias Days = (_ body: (LocalDate, EntriesState.DaySource) throws -> Void) throws -> Void

    /// The bytes of a snapshot of `state` covering `location`.
    /// - Throws: ``SnapshotProblem`` when the entries' bodies exceed the 4 GiB a row can address.
    static func file(of state: LedgerState, location: RecordLocation, fileID: [UInt8]) throws -> [UInt8] {
        var file: [UInt8] = []
        try write(state, location: location, fileID: fileID) { offset, bytes in
            if file.count < offset + bytes.count {
                file.append(contentsOf: repeatElement(0, count: offset + bytes.count - file.count))
            }
            file.withUnsafeMutableBytes {
                UnsafeMutableRawBufferPointer(rebasing: $0[offset..<(offset + bytes.count)]).copyMemory(from: bytes)
            }
        }
        return file
    }

    /// Writes a snapshot of `state` covering `location` to `sink`.
    /// - Parameters:
    ///   - state: the analytics, outbox, numbering and (unless `days` is given) entries to write.
    ///   - days: where each day's entries are, when not `state`'s own (an import's entries held elsewhere).
    ///   - rowCapacity: at least as many rows as `days` gives (default: `state`'s entry count); the arena starts
    ///     after this many rows.
    ///   - location: the record the snapshot covers.
    ///   - fileID: the log's file id.
    ///   - sink: where the bytes go.
    /// - Throws: ``SnapshotProblem`` when the entries' bodies exceed the 4 GiB a row can address or `days` gave
    ///   more rows than `rowCapacity`; what `days` or `sink` throw.
    ///
    /// Long because it is one streaming pass: the sections' buffers, the id slots, the sources and the running piece
    /// checksums are locals that the nested row and day writers share; split, each part would take a dozen of them
    /// `inout`.
    static func write(
        _ state: LedgerState, days: Days? = nil, rowCapacity: Int? = nil,
        location: RecordLocation, fileID: [UInt8], to sink: Sink
    ) throws {
        let forEachDay: Days = days ?? { body in try state.entries.forEachDaySource(body) }
        let capacity = rowCapacity ?? state.entries.count
        let sectionCount = SnapshotLayout.Section.allCases.count
        let metaOffset = align(SnapshotLayout.headerSize + sectionCount * SnapshotLayout.tableEntrySize)
        let rowsOffset = align(metaOffset + SnapshotLayout.metaSize)
        var rows = SectionStream(offset: rowsOffset, streams: true)
        var arena = SectionStream(offset: align(rowsOffset + capacity * SnapshotLayout.rowSize), streams: true)
        var days = ByteWriter(capacity: 4096 * SnapshotLayout.daySize)
        var dayCount = 0
        var valences = ByteWriter(capacity: capacity * 8)  // at most one per entry: never grown by copying
        var words = ByteWriter(capacity: 4096 * 32)
        var slots = IDSlots(rows: capacity)
        var rowCount = 0
        var sources: [(hash: UInt64, row: UInt32)] = []
        sources.reserveCapacity(capacity)
        var valenceCount = 0
        var overflow = false
        var hashes: (image: SnapshotImage, byRow: [Int: UInt64])?
        /// Adds one row (its first 40 bytes already in `rows`) whose body `body` writes to the arena.
        func addRow(_ id: EntryID, body: (inout ByteWriter) -> Void) throws {
            guard rowCount < capacity else { throw SnapshotProblem("more entries than the snapshot was laid out for") }
            let start = arena.length
            body(&arena.w)
            if arena.length > Int(UInt32.max) { overflow = true }
            rows.w.fixed(UInt64(truncatingIfNeeded: start), 4)
            rows.w.fixed(UInt64(truncatingIfNeeded: arena.length - start), 4)
            slots.insert(id, row: rowCount)
            rowCount += 1
        }
        /// Adds a day's entries as rows, encoding each.
        func addEntries(_ entries: [MoodEntry], dailyMood: EntryID?, moodRow: inout UInt32) throws {
            for entry in entries {
                if entry.id == dailyMood { moodRow = UInt32(rowCount) }
                if let sourceID = entry.sourceID {
                    sources.append((SnapshotImage.sourceHash(entry.source, sourceID), UInt32(rowCount)))
                }
                rows.w.id(entry.id)
                rows.w.fixed(UInt64(bitPattern: entry.loggedAt.milliseconds), 8)
                rows.w.fixed(UInt64(bitPattern: entry.createdAt), 8)
                rows.w.fixed(UInt64(bitPattern: entry.updatedAt), 8)
                try addRow(entry.id) { EventCodec.writeEntryBody(entry, to: &$0, withTags: true) }
            }
        }
        try forEachDay { date, source in
            let firstRow = rowCount
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
                    if row == day.dailyMoodRow { moodRow = UInt32(rowCount) }
                    if let hash = hashes?.byRow[row] { sources.append((hash, UInt32(rowCount))) }
                    rows.w.bytes.append(contentsOf: bytes.row[0..<40])
                    try addRow(image.id(ofRow: row)) { $0.bytes.append(contentsOf: bytes.body) }
                }
                let stored = image.rawAggregate(day)
                valences.bytes.append(contentsOf: stored.valences)
                words.bytes.append(contentsOf: stored.words)
                dayValences = day.valences.count
            } else {
                switch source {
                case .encoded(let day):
                    let mood = day.dailyMoodRow
                    try day.bodies.withUnsafeBytes { bodies in
                        for (index, row) in day.rows.enumerated() {
                            if index == mood { moodRow = UInt32(rowCount) }
                            if let hash = row.sourceHash { sources.append((hash, UInt32(rowCount))) }
                            rows.w.id(row.id)
                            rows.w.fixed(UInt64(bitPattern: row.loggedAt), 8)
                            rows.w.fixed(UInt64(bitPattern: row.createdAt), 8)
                            rows.w.fixed(UInt64(bitPattern: row.updatedAt), 8)
                            try addRow(row.id) {
                                $0.bytes.append(contentsOf: bodies[row.bodyStart..<(row.bodyStart + row.bodyCount)])
                            }
                        }
                    }
                case .image(let image, let day):
                    try addEntries(
                        day.rows.compactMap(image.entry(atRow:)), dailyMood: day.dailyMoodRow.map(image.id(ofRow:)),
                        moodRow: &moodRow)
                case .entries(let list, let mood):
                    try addEntries(list, dailyMood: mood, moodRow: &moodRow)
                }
                let aggregate = state.analytics.days[date] ?? DayAggregate()
                writeStats(aggregate.labels, to: &words)
                writeStats(aggregate.associations, to: &words)
                for q in aggregate.valences { valences.fixed(UInt64(bitPattern: q), 8) }
                dayValences = aggregate.valences.count
            }
            try rows.spill(to: sink)
            try arena.spill(to: sink)
            guard rowCount > firstRow else {
                // A day whose rows all failed to decode (only a crafted image has one): no day record, no stats.
                words.bytes.removeSubrange(wordsStart...)
                valences.bytes.removeSubrange(valencesStart...)
                return
            }
            days.fixed(UInt64(UInt32(bitPattern: date.daysSinceEpoch)), 4)
            days.fixed(UInt64(firstRow), 4)
            days.fixed(UInt64(rowCount - firstRow), 4)
            days.fixed(UInt64(moodRow), 4)
            days.fixed(UInt64(valenceCount), 4)
            days.fixed(UInt64(dayValences), 4)
            days.fixed(UInt64(wordsStart), 4)
            days.fixed(UInt64(words.bytes.count - wordsStart), 4)
            valenceCount += dayValences
            dayCount += 1
        }
        guard !overflow, rowCount < Int(UInt32.max) / 2 else {
            throw SnapshotProblem("entries too large for one snapshot")
        }
        try rows.spill(to: sink, all: true)
        try arena.spill(to: sink, all: true)
        var streams = [rows, arena]
        /// The next section, written after the last one.
        func section(_ fill: (inout SectionStream) throws -> Void) throws {
            let last = streams[streams.count - 1]
            var stream = SectionStream(offset: align(last.offset + last.length))
            try fill(&stream)
            try stream.spill(to: sink, all: true)
            streams.append(stream)
        }
        try section { stream in
            for value in slots.values {
                stream.w.fixed(value, 8)
                try stream.spill(to: sink)
            }
        }
        let slotCount = slots.values.count
        slots = IDSlots(rows: 0)
        /// The next section, made of `buffer`: handed over to its stream, not copied, and written whole.
        func section(taking buffer: inout ByteWriter) throws { try section { swap(&$0.w, &buffer) } }
        try section(taking: &days)
        try section(taking: &valences)
        try section(taking: &words)
        try section { stream in
            writeStats(state.analytics.labelTotals, to: &stream.w)
            writeStats(state.analytics.associationTotals, to: &stream.w)
        }
        sources.sort { ($0.hash, $0.row) < ($1.hash, $1.row) }
        try section { stream in
            for source in sources {
                stream.w.fixed(source.hash, 8)
                stream.w.fixed(UInt64(source.row), 4)
                stream.w.fixed(0, 4)
                try stream.spill(to: sink)
            }
        }
        let sourceCount = sources.count
        sources = []
        let outbox = SnapshotCodec.encodeOutbox(state)
        guard outbox.records.count <= Int(UInt32.max) else {
            throw SnapshotProblem("outbox too large for one snapshot")
        }
        for bytes in [outbox.index, outbox.records, outbox.sync] {
            try section { $0.w.bytes = bytes }
        }
        var meta = SectionStream(offset: metaOffset)
        meta.w.fixed(state.seq, 8)
        meta.w.fixed(UInt64(bitPattern: state.recordedAt), 8)
        meta.w.fixed(UInt64(rowCount), 4)
        meta.w.fixed(UInt64(dayCount), 4)
        meta.w.fixed(UInt64(slotCount), 4)
        meta.w.fixed(UInt64(sourceCount), 4)
        try meta.spill(to: sink, all: true)
        streams.insert(meta, at: 0)
        try section { stream in
            for piece in streams.lazy.flatMap(\.pieceCRCs) { stream.w.fixed(UInt64(piece), 4) }
        }
        // The zeros that pad each section to the next (none after the last, the pieces, which ends the file).
        for stream in streams.dropLast() where align(stream.offset + stream.length) > stream.offset + stream.length {
            let end = stream.offset + stream.length
            try [UInt8](repeating: 0, count: align(end) - end).withUnsafeBytes { try sink(end, $0) }
        }
        var table = ByteWriter(capacity: sectionCount * SnapshotLayout.tableEntrySize)
        for (index, stream) in streams.enumerated() {
            table.fixed(UInt64(index + 1), 4)
            table.fixed(UInt64(stream.checksum), 4)
            table.fixed(UInt64(stream.offset), 8)
            table.fixed(UInt64(stream.length), 8)
        }
        let last = streams[streams.count - 1]
        let header = SnapshotHeader(
            sectionCount: sectionCount, fingerprint: SnapshotCodec.fingerprint, location: location,
            fileID: fileID, recordedAt: state.recordedAt, fileLength: UInt64(last.offset + last.length),
            tableCRC: CRC32C.mask(CRC32C.checksum(table.bytes)))
        try (header.encoded() + table.bytes).withUnsafeBytes { try sink(0, $0) }
    }

    /// `offset` rounded up to a multiple of 8.
    private static func align(_ offset: Int) -> Int { (offset + 7) / 8 * 8 }

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
