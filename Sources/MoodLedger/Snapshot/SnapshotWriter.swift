import EventLog

/// Writes a version-5 snapshot file (`Specs/ledger.md`, *Snapshots*): the state's entries as fixed-width rows
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
    static func file(
        of state: LedgerState, positions: [IndexPosition] = [], location: RecordLocation, fileID: [UInt8]
    ) throws -> [UInt8] {
        var file: [UInt8] = []
        try write(state, positions: positions, location: location, fileID: fileID) { offset, bytes in
            if file.count < offset + bytes.count {
                file.append(contentsOf: repeatElement(0, count: offset + bytes.count - file.count))
            }
            file.withUnsafeMutableBytes {
                UnsafeMutableRawBufferPointer(rebasing: $0[offset..<(offset + bytes.count)]).copyMemory(from: bytes)
            }
        }
        return file
    }

    /// Writes a snapshot of `state` covering `location` to `sink`: the days' rows and bodies as they come (a
    /// ``SnapshotSections`` gathers the rest on the way), then the other sections, the table and the header.
    /// - Parameters:
    ///   - state: the analytics, outbox, numbering and (unless `days` is given) entries to write.
    ///   - days: where each day's entries are, when not `state`'s own (an import's entries held elsewhere).
    ///   - rowCapacity: at least as many rows as `days` gives (default: `state`'s entry count); the arena starts
    ///     after this many rows.
    ///   - isEntry: whether an id is one of the entries `days` gives (default: one of `state`'s): the revisions of
    ///     the others are listed apart from the rows'.
    ///   - revision: an entry's revision (default: `state`'s; an import's held entries are not in its state).
    ///   - positions: the log's sparse index through `location` (``EventLog/indexPositions(through:)``), kept so
    ///     that an open from the snapshot need not read the records before it to find them; empty: none kept.
    ///   - location: the record the snapshot covers.
    ///   - fileID: the log's file id.
    ///   - sink: where the bytes go.
    /// - Throws: ``SnapshotProblem`` when the entries' bodies exceed the 4 GiB a row can address or `days` gave
    ///   more rows than `rowCapacity`; what `days` or `sink` throw.
    static func write(
        _ state: LedgerState, days: Days? = nil, rowCapacity: Int? = nil, isEntry: ((EntryID) -> Bool)? = nil,
        revision: ((EntryID) -> UInt64)? = nil, positions: [IndexPosition] = [], location: RecordLocation,
        fileID: [UInt8], to sink: Sink
    ) throws {
        let forEachDay: Days = days ?? { body in try state.entries.forEachDaySource(body) }
        var sections = SnapshotSections(
            capacity: rowCapacity ?? state.entries.count, revision: revision ?? { state.revision(of: $0) })
        try forEachDay { date, source in try sections.addDay(date, source, analytics: state.analytics, sink: sink) }
        try sections.finish(
            state, isEntry: isEntry ?? { state.entries.contains($0) }, positions: positions, location: location,
            fileID: fileID, to: sink)
    }

    /// `offset` rounded up to a multiple of 8.
    static func align(_ offset: Int) -> Int { (offset + 7) / 8 * 8 }

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
    static func storedRows(
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
    static func writeStats<D>(_ table: WordTable<D, WordStat>, to w: inout ByteWriter) {
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
