/// Walks records from an offset, applying the reading rules of `Specs/log-format.md` exactly once, for every
/// caller: open, replay, verify and repair.
///
/// Records are grouped in batches: every record of a batch but the last carries the `continues` flag. A batch
/// whose last record is missing (the file ends, or the rest is a torn tail) is torn as a whole: the scanner
/// rewinds to where the batch began, so recovery trims all of it and no reader ever sees part of a command.
struct RecordScanner {
    /// One step of the walk.
    enum Step {
        /// A valid record; its payload view is valid until the next call.
        case record(RecordView)
        /// The end of the log, exactly at a batch boundary.
        case end
        /// The rest of the file, from ``offset`` (rewound to the start of an unfinished batch), is a torn tail.
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
    /// Where the last complete batch ended, with the state the scanner had there.
    private(set) var committed: (offset: Int64, nextSeq: UInt64, lastRecordedAt: Int64)
    /// How many records of an unfinished batch have been passed (0 at a batch boundary).
    private(set) var recordsInOpenBatch = 0
    /// ``CRC32C/usesHardware``, read once.
    private let hardwareCRC = CRC32C.usesHardware

    init(reader: ChunkReader, maxPayload: Int, offset: Int64, nextSeq: UInt64, lastRecordedAt: Int64 = .min) {
        self.reader = reader
        self.maxPayload = maxPayload
        self.offset = offset
        self.nextSeq = nextSeq
        self.lastRecordedAt = lastRecordedAt
        committed = (offset, nextSeq, lastRecordedAt)
    }

    /// Whether the scanner stands inside a batch whose last record it has not seen yet.
    var isInsideBatch: Bool { recordsInOpenBatch > 0 }

    /// Reads the record at `offset`; on success advances past it.
    mutating func next() throws -> Step {
        let remaining = reader.limit - offset
        if remaining == 0 { return isInsideBatch ? tornBatch("the file ends") : .end }
        guard let header = try reader.bytes(at: offset, count: LogFormat.recordHeaderSize) else {
            return tornBatch("incomplete header")
        }
        let storedCRC = header.u32(0)
        let storedHeaderCRC = header.u32(4)
        let length = header.u32(8)
        let type = header.u16(12)
        let flags = header.u16(14)
        let seq = header.u64(16)
        let recordedAt = header.i64(24)
        let fields = UnsafeRawBufferPointer(rebasing: header[8..<LogFormat.recordHeaderSize])
        let headerState = CRC32C.extend(0xFFFF_FFFF, fields, hardware: hardwareCRC)
        guard CRC32C.mask(CRC32C.finish(headerState)) == storedHeaderCRC else {
            if try reader.isZero(from: offset) { return tornBatch("zero-filled tail") }
            return .damage("record header checksum mismatch")
        }
        if flags & ~LogFormat.knownRecordFlags != 0 {
            return .damage("unknown record flags 0x\(String(flags, radix: 16))")
        }
        if type == 0 { return .damage("record type 0") }
        if Int(length) > maxPayload { return .damage("record length \(length) exceeds the maximum \(maxPayload)") }
        if seq > LogFormat.maximumSeq { return .damage("seq \(seq) is above the maximum \(LogFormat.maximumSeq)") }
        if seq != nextSeq { return .damage("sequence gap: found seq \(seq)") }
        if !LogFormat.recordedAtRange.contains(recordedAt) {
            return .damage("recorded_at \(recordedAt) is outside years 1…9999")
        }
        let total = LogFormat.recordHeaderSize + Int(length)
        guard let record = try reader.bytes(at: offset, count: total) else { return tornBatch("incomplete payload") }
        let payload = UnsafeRawBufferPointer(rebasing: record[LogFormat.recordHeaderSize...])
        guard CRC32C.mask(CRC32C.finish(CRC32C.extend(headerState, payload, hardware: hardwareCRC))) == storedCRC else {
            return .damage("record checksum mismatch")
        }
        if recordedAt < lastRecordedAt { return .damage("recorded_at goes back in time") }
        var lastSeqOfRecord = seq
        if type == LogFormat.lostRecordType {
            switch length {
            case 0: break
            case 8:
                lastSeqOfRecord = payload.u64(0)
                guard lastSeqOfRecord >= seq, lastSeqOfRecord <= LogFormat.maximumSeq else {
                    return .damage("lost range ends at seq \(lastSeqOfRecord), outside \(seq)…\(LogFormat.maximumSeq)")
                }
            default: return .damage("lost record with a \(length)-byte payload")
            }
        }
        let continues = flags & LogFormat.continuesBatchFlag != 0
        let view = RecordView(
            seq: seq, type: type, recordedAt: recordedAt, offset: offset, crc: storedCRC,
            payload: payload, continuesBatch: continues, lastSeq: lastSeqOfRecord)
        offset += Int64(total)
        nextSeq = lastSeqOfRecord + 1
        lastRecordedAt = recordedAt
        if continues {
            recordsInOpenBatch += 1
        } else {
            recordsInOpenBatch = 0
            committed = (offset, nextSeq, lastRecordedAt)
        }
        return .record(view)
    }

    /// A torn tail: rewinds to the start of an unfinished batch so that all of it is cut.
    private mutating func tornBatch(_ reason: String) -> Step {
        guard isInsideBatch else { return .torn(reason) }
        let count = recordsInOpenBatch
        (offset, nextSeq, lastRecordedAt) = committed
        recordsInOpenBatch = 0
        return .torn(
            "\(reason) inside a batch; its \(count) complete record\(count == 1 ? "" : "s") "
                + "without the batch's last record")
    }

    /// Searches forward from `offset` for the next offset holding a fully valid record whose sequence number
    /// is at least `minimumSeq` (used by salvage and verify after damage). The damaged offset itself qualifies when
    /// its record is sound on its own (a seq gap, or time going back): the seqs before it are what was lost.
    /// - Returns: the offset found, or `nil` if there is none before the end.
    func resynchronise(minimumSeq: UInt64) throws -> Int64? {
        var candidate = offset
        while reader.limit - candidate >= Int64(LogFormat.recordHeaderSize) {
            guard let header = try reader.bytes(at: candidate, count: LogFormat.recordHeaderSize) else { return nil }
            let fields = UnsafeRawBufferPointer(rebasing: header[8..<LogFormat.recordHeaderSize])
            if CRC32C.mask(CRC32C.checksum(fields)) == header.u32(4), header.u64(16) >= minimumSeq {
                var probe = RecordScanner(
                    reader: reader, maxPayload: maxPayload, offset: candidate,
                    nextSeq: header.u64(16))
                if case .record = try probe.next() { return candidate }
            }
            candidate += 1
        }
        return nil
    }

    /// The highest sequence number a damaged region from `offset` to the end appears to hold: record headers whose
    /// own checksum holds are followed (their length is then trustworthy) as long as their seqs run on.
    /// - Returns: at least ``nextSeq`` — the record expected at the damage was lost whatever else was.
    func lastSeqInDamagedTail() throws -> UInt64 {
        var position = offset
        var expected = nextSeq
        var last = nextSeq
        while reader.limit - position >= Int64(LogFormat.recordHeaderSize) {
            guard let header = try reader.bytes(at: position, count: LogFormat.recordHeaderSize) else { break }
            let fields = UnsafeRawBufferPointer(rebasing: header[8..<LogFormat.recordHeaderSize])
            guard CRC32C.mask(CRC32C.checksum(fields)) == header.u32(4), header.u64(16) == expected,
                Int(header.u32(8)) <= maxPayload, expected < LogFormat.maximumSeq
            else { break }
            last = expected
            expected += 1
            position += Int64(LogFormat.recordHeaderSize) + Int64(header.u32(8))
        }
        return last
    }
}
