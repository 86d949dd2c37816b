import EventLog

/// The record index and filters of a snapshot (`Specs/ledger.md`, *An entry's records*).
extension SnapshotImage {
    /// Decodes the record index section: `u32 positions · u32 erasures · positions × (u64 offset · i64 recorded_at)
    /// · events × u64 seq`. Positions are none or one per block (the record at seq 1 + 1,024 × block), offsets
    /// ascending from the log's first record and recorded-at never decreasing; the seqs of the events about every
    /// entry (`ledger.erased`, `remote.configured`) ascending, within the covered seqs.
    static func decodeRecordIndex(
        _ bytes: UnsafeRawBufferPointer, blocks: Int, seq: UInt64
    ) throws(SnapshotProblem) -> (positions: [IndexPosition], erasures: [UInt64]) {
        guard bytes.count >= 8 else { throw SnapshotProblem("record index: shorter than its counts") }
        let positionCount = Int(bytes.le(0) as UInt32)
        let erasureCount = Int(bytes.le(4) as UInt32)
        guard positionCount == 0 || positionCount == blocks else {
            throw SnapshotProblem("record index: \(positionCount) positions for \(blocks) blocks")
        }
        guard bytes.count == 8 + positionCount * SnapshotLayout.positionSize + erasureCount * 8 else {
            throw SnapshotProblem("record index: length does not match its counts")
        }
        var positions: [IndexPosition] = []
        positions.reserveCapacity(positionCount)
        for index in 0..<positionCount {
            let at = 8 + index * SnapshotLayout.positionSize
            let position = IndexPosition(
                seq: UInt64(index) * RecordIndex.blockRecords + 1, offset: Int64(bitPattern: bytes.le(at)),
                recordedAt: Int64(bitPattern: bytes.le(at + 8)))
            if let previous = positions.last {
                guard position.offset > previous.offset, position.recordedAt >= previous.recordedAt else {
                    throw SnapshotProblem("record index: positions out of order")
                }
            } else if position.offset != Int64(LogFormat.fileHeaderSize) {
                throw SnapshotProblem("record index: the first position is not the log's first record")
            }
            positions.append(position)
        }
        var erasures: [UInt64] = []
        let start = 8 + positionCount * SnapshotLayout.positionSize
        for index in 0..<erasureCount {
            let value: UInt64 = bytes.le(start + index * 8)
            guard value >= 1, value <= seq, value > (erasures.last ?? 0) else {
                throw SnapshotProblem("record index: events out of order or past the covered seq")
            }
            erasures.append(value)
        }
        return (positions, erasures)
    }

    /// The filter of `block` (``RecordIndex/filterWords`` words), checked where read.
    func filterBlock(_ block: Int) -> [UInt64]? {
        guard block >= 0, block < filterBlockCount else { return nil }
        let start = block * SnapshotLayout.filterSize
        check(.recordFilters, start, SnapshotLayout.filterSize)
        return (0..<RecordIndex.filterWords).map { filters.le(start + $0 * 8) }
    }

    /// Calls `body` with the words of line `line` of `block`'s filter, checked where read.
    @inline(__always)
    func filterLine(_ block: Int, _ line: Int, _ body: (Line) -> Bool) -> Bool {
        let start = block * SnapshotLayout.filterSize + line * RecordIndex.lineWords * 8
        check(.recordFilters, start, RecordIndex.lineWords * 8)
        return body(Line(bytes: UnsafeRawBufferPointer(rebasing: filters[start..<(start + RecordIndex.lineWords * 8)])))
    }

    /// One 64-byte line of a block's filter.
    struct Line {
        let bytes: UnsafeRawBufferPointer
        subscript(word: Int) -> UInt64 { bytes.le(word * 8) }
    }
}
