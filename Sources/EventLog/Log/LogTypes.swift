/// A record seen while reading: its header fields and a view of its payload.
///
/// The payload buffer is valid only inside the closure it was passed to.
public struct RecordView {
    /// Sequence number.
    public var seq: UInt64
    /// Record type.
    public var type: UInt16
    /// Recorded-at time, microseconds since 1970.
    public var recordedAt: Int64
    /// Byte offset of the record's header in the log file.
    public var offset: Int64
    /// The masked `crc` field of the record.
    public var crc: UInt32
    /// The payload bytes (valid only during the callback).
    public var payload: UnsafeRawBufferPointer
    /// Whether another record of the same batch follows (the batch's records are all-or-nothing).
    public var continuesBatch: Bool = false
    /// The last sequence number this record stands for: `seq`, except for a *lost* record covering a range.
    public var lastSeq: UInt64
    /// Total size on disk: header and payload.
    public var size: Int { LogFormat.recordHeaderSize + payload.count }
    /// Where this record is, to resume or check from later.
    public var location: RecordLocation { RecordLocation(seq: seq, offset: offset, size: size, crc: crc) }
    /// Whether the engine wrote this record in place of one that repair could not save.
    public var isLost: Bool { type == LogFormat.lostRecordType }
}

extension RecordView {
    /// A view of a record held elsewhere than a log file (a database row): `offset` and `crc` are 0.
    public init(
        seq: UInt64, type: UInt16, recordedAt: Int64, payload: UnsafeRawBufferPointer, continuesBatch: Bool,
        offset: Int64 = 0, crc: UInt32 = 0
    ) {
        self.seq = seq
        self.type = type
        self.recordedAt = recordedAt
        self.offset = offset
        self.crc = crc
        self.payload = payload
        self.continuesBatch = continuesBatch
        lastSeq = seq
    }
}

/// A record with its payload copied out.
public struct LogRecord: Sendable, Equatable {
    public var seq: UInt64
    public var type: UInt16
    public var recordedAt: Int64
    public var offset: Int64
    public var payload: [UInt8]
    /// Total size on disk: header and payload.
    public var size: Int { LogFormat.recordHeaderSize + payload.count }

    init(_ view: RecordView) {
        seq = view.seq
        type = view.type
        recordedAt = view.recordedAt
        offset = view.offset
        payload = Array(view.payload)
    }
}

/// Identifies one record on disk: enough to find it again and to check it is still the same record.
public struct RecordLocation: Sendable, Hashable, Codable {
    /// Sequence number of the record.
    public var seq: UInt64
    /// Byte offset of its header.
    public var offset: Int64
    /// Header plus payload size.
    public var size: Int
    /// Its masked `crc` field.
    public var crc: UInt32
    /// The offset just past the record.
    public var end: Int64 { offset + Int64(size) }

    public init(seq: UInt64, offset: Int64, size: Int, crc: UInt32) {
        self.seq = seq
        self.offset = offset
        self.size = size
        self.crc = crc
    }
}

/// What open did about a torn tail: a notice, not an error (nothing acknowledged can be in it).
public struct RecoveryNotice: Sendable, Equatable, CustomStringConvertible {
    /// Where the torn tail began: the end of the last complete record.
    public var offset: Int64
    /// How many bytes were removed (or, read-only, ignored).
    public var bytesRemoved: Int64
    /// The last sequence number kept (0 if none).
    public var lastSeq: UInt64
    /// Why the tail is torn: "incomplete header", "incomplete payload" or "zero-filled tail".
    public var reason: String
    /// Whether the file was truncated (`false` for a read-only open).
    public var truncated: Bool

    public var description: String {
        let verb = truncated ? "trimmed" : "ignored"
        return "torn tail (\(reason)) \(verb): \(bytesRemoved) bytes at offset \(offset) after seq \(lastSeq); "
            + "nothing acknowledged was in it"
    }
}

/// Where damage was found.
public struct LogDamage: Sendable, Equatable, CustomStringConvertible {
    /// Byte offset of the damaged record (or of the header, 0).
    public var offset: Int64
    /// The sequence number expected there.
    public var seq: UInt64
    /// What is wrong.
    public var problem: String
    public var description: String { "\(problem) at byte offset \(offset) (seq \(seq))" }

    /// Creates a damage description.
    public init(offset: Int64, seq: UInt64, problem: String) {
        self.offset = offset
        self.seq = seq
        self.problem = problem
    }
}
