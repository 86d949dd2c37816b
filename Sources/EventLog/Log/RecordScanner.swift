/// Walks records from an offset, applying the reading rules of `Specs/log-format.md` exactly once, for every
/// caller: open, replay, verify and repair.
struct RecordScanner {
    /// One step of the walk.
    enum Step {
        /// A valid record; its payload view is valid until the next call.
        case record(RecordView)
        /// The end of the log, exactly at a record boundary.
        case end
        /// The rest of the file is a torn tail (reason given).
        case torn(String)
        /// Damage at the current offset.
        case damage(String)
    }

    let reader: ChunkReader
    let maxPayload: Int
    /// Offset of the next record.
    var offset: Int64
    /// The sequence number the next record must have.
    var nextSeq: UInt64
    /// The previous record's recorded-at (records never go back in time).
    var lastRecordedAt: Int64

    init(reader: ChunkReader, maxPayload: Int, offset: Int64, nextSeq: UInt64, lastRecordedAt: Int64 = .min) {
        self.reader = reader
        self.maxPayload = maxPayload
        self.offset = offset
        self.nextSeq = nextSeq
        self.lastRecordedAt = lastRecordedAt
    }

    /// Reads the record at `offset`; on success advances past it.
    mutating func next() throws -> Step {
        let remaining = reader.limit - offset
        if remaining == 0 { return .end }
        guard let header = try reader.bytes(at: offset, count: LogFormat.recordHeaderSize) else {
            return .torn("incomplete header")
        }
        let storedCRC = header.u32(0)
        let storedHeaderCRC = header.u32(4)
        let length = header.u32(8)
        let type = header.u16(12)
        let reserved = header.u16(14)
        let seq = header.u64(16)
        let recordedAt = header.i64(24)
        let fields = UnsafeRawBufferPointer(rebasing: header[8..<LogFormat.recordHeaderSize])
        let headerState = CRC32C.extend(0xFFFF_FFFF, fields)
        guard CRC32C.mask(CRC32C.finish(headerState)) == storedHeaderCRC else {
            if try reader.isZero(from: offset) { return .torn("zero-filled tail") }
            return .damage("record header checksum mismatch")
        }
        if reserved != 0 { return .damage("reserved record field is not zero") }
        if type == 0 { return .damage("record type 0") }
        if Int(length) > maxPayload { return .damage("record length \(length) exceeds the maximum \(maxPayload)") }
        if seq != nextSeq { return .damage("sequence gap: found seq \(seq)") }
        let total = LogFormat.recordHeaderSize + Int(length)
        guard let record = try reader.bytes(at: offset, count: total) else { return .torn("incomplete payload") }
        let payload = UnsafeRawBufferPointer(rebasing: record[LogFormat.recordHeaderSize...])
        guard CRC32C.mask(CRC32C.finish(CRC32C.extend(headerState, payload))) == storedCRC else {
            return .damage("record checksum mismatch")
        }
        if recordedAt < lastRecordedAt { return .damage("recorded_at goes back in time") }
        let view = RecordView(seq: seq, type: type, recordedAt: recordedAt, offset: offset, crc: storedCRC,
                              payload: payload)
        offset += Int64(total)
        nextSeq = seq + 1
        lastRecordedAt = recordedAt
        return .record(view)
    }

    /// Searches forward from `offset + 1` for the next offset holding a fully valid record whose sequence number
    /// is at least `minimumSeq` (used by salvage and verify after damage).
    /// - Returns: the offset found, or `nil` if there is none before the end.
    func resynchronise(minimumSeq: UInt64) throws -> Int64? {
        var candidate = offset + 1
        while reader.limit - candidate >= Int64(LogFormat.recordHeaderSize) {
            guard let header = try reader.bytes(at: candidate, count: LogFormat.recordHeaderSize) else { return nil }
            let fields = UnsafeRawBufferPointer(rebasing: header[8..<LogFormat.recordHeaderSize])
            if CRC32C.mask(CRC32C.checksum(fields)) == header.u32(4), header.u64(16) >= minimumSeq {
                var probe = RecordScanner(reader: reader, maxPayload: maxPayload, offset: candidate,
                                          nextSeq: header.u64(16))
                if case .record = try probe.next() { return candidate }
            }
            candidate += 1
        }
        return nil
    }
}
