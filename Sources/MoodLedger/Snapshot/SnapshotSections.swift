import EventLog

/// A snapshot being written (`SnapshotWriter.write`): the rows and the arena stream to the file as each day adds
/// its entries; the id slots, days, valences, word stats and sources gather here, a few bytes per entry or per day,
/// and go to the file with the outbox, the record index, the meta, the pieces, the table and the header at
/// ``finish(_:positions:location:fileID:to:)``.
struct SnapshotSections {
    private typealias Layout = SnapshotLayout
    private let capacity: Int
    private let metaOffset: Int
    private var rows: SectionStream
    private var arena: SectionStream
    private var days = ByteWriter(capacity: 4096 * SnapshotLayout.daySize)
    private var dayCount = 0
    private var valences: ByteWriter
    private var valenceCount = 0
    private var words = ByteWriter(capacity: 4096 * 32)
    private var slots: IDSlots
    private var rowCount = 0
    private var sources: [(hash: UInt64, row: UInt32)] = []
    /// Each row's revision, in row order (8 bytes a row), and where a row's revision is read.
    private var rowRevisions: ByteWriter
    private let revision: (EntryID) -> UInt64
    /// A row's body ended past the 4 GiB a row can address: the snapshot cannot be written (said at the end).
    private var overflow = false
    /// The source hashes of the rows of the last image a day was copied from.
    private var hashes: (image: SnapshotImage, byRow: [Int: UInt64])?

    /// Sections for at most `capacity` rows: the arena starts after that many.
    /// - Parameter revision: an entry's revision (``LedgerState/revision(of:)``), written beside its row.
    init(capacity: Int, revision: @escaping (EntryID) -> UInt64) {
        self.capacity = capacity
        self.revision = revision
        rowRevisions = ByteWriter(capacity: capacity * 8)
        let sectionCount = Layout.Section.allCases.count
        metaOffset = SnapshotWriter.align(Layout.headerSize + sectionCount * Layout.tableEntrySize)
        let rowsOffset = SnapshotWriter.align(metaOffset + Layout.metaSize)
        rows = SectionStream(offset: rowsOffset, streams: true)
        arena = SectionStream(offset: SnapshotWriter.align(rowsOffset + capacity * Layout.rowSize), streams: true)
        valences = ByteWriter(capacity: capacity * 8)  // at most one per entry: never grown by copying
        slots = IDSlots(rows: capacity)
        sources.reserveCapacity(capacity)
    }

    /// Adds one day's entries as rows (ascending days), its day record, valences and word stats; an unchanged day
    /// of a mapped image is copied as it is stored.
    /// - Throws: ``SnapshotProblem`` past `capacity` rows; what `sink` throws.
    mutating func addDay(
        _ date: LocalDate, _ source: EntriesState.DaySource, analytics: AnalyticsState, sink: SnapshotWriter.Sink
    ) throws {
        let firstRow = rowCount
        var moodRow = Layout.noRow
        let wordsStart = words.bytes.count
        let valencesStart = valences.bytes.count
        let dayValences: Int
        if case .image(let image, let day) = source, analytics.readsImage(image, on: date),
            let raw = SnapshotWriter.storedRows(image, day)
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
            try addRows(of: source, moodRow: &moodRow)
            let aggregate = analytics.days[date] ?? DayAggregate()
            SnapshotWriter.writeStats(aggregate.labels, to: &words)
            SnapshotWriter.writeStats(aggregate.associations, to: &words)
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

    /// Adds the rows of a day that is not copied whole from an image: rows encoded already, entries of an image
    /// (a day that changed), or entries held in memory.
    private mutating func addRows(of source: EntriesState.DaySource, moodRow: inout UInt32) throws {
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
    }

    /// Adds entries as rows, encoding each.
    private mutating func addEntries(_ entries: [MoodEntry], dailyMood: EntryID?, moodRow: inout UInt32) throws {
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

    /// Adds one row (its first 40 bytes already in `rows`) whose body `body` writes to the arena.
    private mutating func addRow(_ id: EntryID, body: (inout ByteWriter) -> Void) throws {
        guard rowCount < capacity else { throw SnapshotProblem("more entries than the snapshot was laid out for") }
        let start = arena.length
        body(&arena.w)
        if arena.length > Int(UInt32.max) { overflow = true }
        rows.w.fixed(UInt64(truncatingIfNeeded: start), 4)
        rows.w.fixed(UInt64(truncatingIfNeeded: arena.length - start), 4)
        slots.insert(id, row: rowCount)
        rowRevisions.fixed(revision(id), 8)
        rowCount += 1
    }

    /// Writes every section after the arena, in order, then the meta, the zeros between sections, the table and
    /// the header.
    /// - Throws: ``SnapshotProblem`` when the bodies or the outbox exceed what 32-bit offsets address; what `sink`
    ///   throws.
    mutating func finish(
        _ state: LedgerState, isEntry: (EntryID) -> Bool, positions: [IndexPosition], location: RecordLocation,
        fileID: [UInt8], to sink: SnapshotWriter.Sink
    )
        throws
    {
        guard !overflow, rowCount < Int(UInt32.max) / 2 else {
            throw SnapshotProblem("entries too large for one snapshot")
        }
        try rows.spill(to: sink, all: true)
        try arena.spill(to: sink, all: true)
        var streams = [rows, arena]
        /// The next section, written after the last one.
        func section(_ fill: (inout SectionStream) throws -> Void) throws {
            let last = streams[streams.count - 1]
            var stream = SectionStream(offset: SnapshotWriter.align(last.offset + last.length))
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
            SnapshotWriter.writeStats(state.analytics.labelTotals, to: &stream.w)
            SnapshotWriter.writeStats(state.analytics.associationTotals, to: &stream.w)
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
        let blocks = state.seq == 0 ? 0 : Int((state.seq - 1) / RecordIndex.blockRecords) + 1
        try section { stream in
            let kept = positions.count == blocks ? positions : []
            stream.w.fixed(UInt64(kept.count), 4)
            stream.w.fixed(UInt64(state.records.everyEntryEvents.count), 4)
            for position in kept {
                stream.w.fixed(UInt64(bitPattern: position.offset), 8)
                stream.w.fixed(UInt64(bitPattern: position.recordedAt), 8)
            }
            for seq in state.records.everyEntryEvents { stream.w.fixed(seq, 8) }
        }
        try section { stream in
            for block in 0..<blocks {
                for word in state.records.words(ofBlock: block) { stream.w.fixed(word, 8) }
                try stream.spill(to: sink)
            }
        }
        try section(taking: &rowRevisions)
        // The revisions of the entries that are no row: removed ones, and those only events about them named.
        var revisions: [(id: EntryID, revision: UInt64)] = []
        state.forEachRevision { id, revision in
            if !isEntry(id) { revisions.append((id, revision)) }
        }
        revisions.sort { $0.id < $1.id }
        try section { stream in
            for (id, revision) in revisions {
                stream.w.id(id)
                stream.w.fixed(revision, 8)
                try stream.spill(to: sink)
            }
        }
        revisions = []
        try section { $0.w.bytes = state.kept.encoded() }
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
        try Self.writeTableAndHeader(streams, state: state, location: location, fileID: fileID, to: sink)
    }

    /// Pads each section to the next (none after the last, the pieces, which ends the file), then writes the section
    /// table and the header at the start.
    private static func writeTableAndHeader(
        _ streams: [SectionStream], state: LedgerState, location: RecordLocation, fileID: [UInt8],
        to sink: SnapshotWriter.Sink
    ) throws {
        precondition(streams.count == Layout.Section.allCases.count, "a snapshot has one stream per section kind")
        for stream in streams.dropLast() {
            let end = stream.offset + stream.length
            let padded = SnapshotWriter.align(end)
            guard padded > end else { continue }
            try [UInt8](repeating: 0, count: padded - end).withUnsafeBytes { try sink(end, $0) }
        }
        var table = ByteWriter(capacity: streams.count * Layout.tableEntrySize)
        for (index, stream) in streams.enumerated() {
            table.fixed(UInt64(index + 1), 4)
            table.fixed(UInt64(stream.checksum), 4)
            table.fixed(UInt64(stream.offset), 8)
            table.fixed(UInt64(stream.length), 8)
        }
        let last = streams[streams.count - 1]
        let header = SnapshotHeader(
            sectionCount: streams.count, fingerprint: SnapshotCodec.fingerprint, location: location,
            fileID: fileID, recordedAt: state.recordedAt, fileLength: UInt64(last.offset + last.length),
            tableCRC: CRC32C.mask(CRC32C.checksum(table.bytes)))
        try (header.encoded() + table.bytes).withUnsafeBytes { try sink(0, $0) }
    }
}
