import EventLog
import EventLogFormat
import MoodLedger

/// One row of the `events` table: a ledger record, as `Specs/server.md`, *PostgreSQL*, *Schema*, lays it out — read
/// back, written by a command or a migration, and folded or redacted through a ``RecordView`` like a log's record.
struct EventRow {
    var seq: UInt64
    var type: UInt16
    var continuesBatch: Bool
    var recordedAt: Int64
    var payload: [UInt8]

    /// The columns a row is selected with, in the order ``init(_:)`` reads them.
    static let columns = "seq, type, continues_batch, recorded_at, payload"
    /// How many columns ``columns`` names.
    static let width = 5

    /// ``columns`` of the table aliased `alias`.
    static func columns(of alias: String) -> String {
        columns.split(separator: ", ").map { "\(alias).\($0)" }.joined(separator: ", ")
    }

    init(seq: UInt64, type: UInt16, continuesBatch: Bool, recordedAt: Int64, payload: [UInt8]) {
        self.seq = seq
        self.type = type
        self.continuesBatch = continuesBatch
        self.recordedAt = recordedAt
        self.payload = payload
    }

    /// A row selected with ``columns``.
    /// - Throws: ``PostgresError`` `postgres_protocol` for a column missing or out of range.
    init(_ row: PostgresRow) throws(PostgresError) {
        let seq = try row.int(0)
        let type = try row.int(1)
        guard seq > 0, (0...Int64(UInt16.max)).contains(type) else {
            throw PostgresError(.protocolViolation, "an event row's seq \(seq) or type \(type) is out of range")
        }
        self.init(
            seq: UInt64(seq), type: UInt16(type), continuesBatch: try row.int(2) != 0, recordedAt: try row.int(3),
            payload: try row.bytes(4))
    }

    /// A command's record about to be written at `seq`; `last` ends its batch.
    init(_ record: PendingRecord, seq: UInt64, last: Bool, now: Int64) {
        self.init(
            seq: seq, type: record.type, continuesBatch: !last, recordedAt: record.recordedAt ?? now * 1000,
            payload: record.payload)
    }

    /// Calls `body` with the row as a log's record view.
    func withView<T>(_ body: (RecordView) throws -> T) rethrows -> T {
        try payload.withUnsafeBytes { bytes in
            try body(
                RecordView(
                    seq: seq, type: type, recordedAt: recordedAt, payload: bytes, continuesBatch: continuesBatch))
        }
    }

    /// The `entry_id` column: the entry an event's payload names (none for a record the folds skip, or for an
    /// event about no entry).
    var entryID: PostgresValue {
        let named = payload.withUnsafeBytes { bytes -> EntryID? in
            guard type & LogFormat.safeToIgnoreBit == 0, let id = EventCodec.entryID(inPayload: bytes), id != .none
            else { return nil }
            return id
        }
        return named.map { .bytes(Self.bytes(of: $0)) } ?? .null
    }

    /// The statement that inserts it for `user`.
    func insert(for user: String) -> (String, [PostgresValue]) {
        (
            "INSERT INTO events (user_name, seq, type, continues_batch, recorded_at, entry_id, payload) "
                + "VALUES ($1, $2, $3, $4, $5, $6, $7)",
            [
                .text(user), .int64(Int64(seq)), .int32(Int32(type)), .bool(continuesBatch), .int64(recordedAt),
                entryID, .bytes(payload)
            ]
        )
    }

    /// An entry id as the `entry_id` column holds it: its 16 bytes, high half first.
    static func bytes(of id: EntryID) -> [UInt8] {
        withUnsafeBytes(of: id.high.bigEndian, Array.init) + withUnsafeBytes(of: id.low.bigEndian, Array.init)
    }
}
