/// The layout of a version-6 snapshot file (`Specs/ledger.md`, *Snapshots*): an 80-byte header, a section table,
/// then eighteen 8-byte-aligned little-endian sections, each with its own checksum, the last holding a checksum
/// of every 1 KiB piece of the others.
enum SnapshotLayout {
    static let headerSize = 80
    static let tableEntrySize = 24
    static let metaSize = 32
    static let rowSize = 48
    static let daySize = 32
    static let sourceSize = 16
    static let outboxIndexSize = 24
    /// Bytes per kept log position in the record index: the indexed record's offset and recorded-at.
    static let positionSize = 16
    /// Bytes per block's filter in the record filters (``RecordIndex/filterWords`` words).
    static let filterSize = RecordIndex.filterWords * 8
    /// Bytes per entry in the revisions section (the entries that are no row): the id and its revision.
    static let revisionSize = 24
    /// "No row" in a day's daily-mood field.
    static let noRow = UInt32.max
    /// The span of each checksum in the pieces section: 1 KiB, so that a lookup checks 16 cache lines around what
    /// it reads, not 64 (`Specs/ledger.md`, *Checking where read*).
    static let pieceSize = 1024

    /// How many pieces a section of `length` bytes has.
    static func pieces(ofLength length: Int) -> Int { (length + pieceSize - 1) / pieceSize }

    /// The sections, in the order (and with the kind codes) they appear in the file.
    enum Section: UInt32, CaseIterable {
        case meta = 1, rows, arena, idSlots, days, valences, words, totals, sources, outboxIndex, outboxRecords, sync,
            recordIndex, recordFilters, rowRevisions, revisions, projections, pieces

        /// Whether a large snapshot checks this section a piece at a time where it is read: the sections read row
        /// by row (the others are decoded, or read whole, on open).
        var isCheckedWhereRead: Bool {
            switch self {
            case .rows, .arena, .idSlots, .valences, .words, .sources, .outboxIndex, .outboxRecords, .recordFilters,
                .rowRevisions, .revisions:
                true
            case .meta, .days, .totals, .sync, .recordIndex, .projections, .pieces: false
            }
        }
    }
}

extension UnsafeRawBufferPointer {
    /// A little-endian integer at a byte offset (the caller has checked the offset).
    @inline(__always)
    func le<T: FixedWidthInteger>(_ offset: Int) -> T {
        T(littleEndian: loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}
