import EventLog

/// The snapshot's schema and its outbox section (`Specs/ledger.md`): the outbox, each destination's sync progress
/// and the pending erasures, in the varint primitives of the event catalog. Entries and analytics are sections of
/// their own (``SnapshotWriter``, ``SnapshotImage``).
enum SnapshotCodec {
    /// Bump when any projection, or the snapshot's encoding, changes: old snapshots are then ignored and the ledger
    /// replays.
    /// entries=2: a shared (source, source id) goes to the entry created first (the fold's rule, not insertion order).
    /// outbox=2: server revisions, in-flight idempotency keys and per-destination sync progress (Specs/sync.md).
    /// entries=3: a remote.applied upsert identical to the entry changes nothing (updated_at kept).
    /// snapshot-payload=2: pending erasures at the end.
    /// snapshot-payload=3: version-2 files: sections of rows, stored indexes and per-day aggregates, mapped on open.
    static let schema = "moodledger-projections/entries=3/outbox=2/analytics=1/snapshot-payload=3"
    static var fingerprint: UInt32 { CRC32C.checksum(Array(schema.utf8)) }

    /// What the outbox section holds, decoded.
    struct OutboxPart {
        var records: [OutboxKey: OutboxRecord] = [:]
        var progress: [SyncProgress] = []
        var pendingErasures: [EntryID: UInt64] = [:]
    }

    /// The outbox section of a state.
    static func encodeOutbox(_ state: LedgerState) -> [UInt8] {
        var w = ByteWriter(capacity: state.outbox.recordCount * 24 + 256)
        let records = state.outbox.records
        w.varint(UInt64(records.count))
        for (key, record) in records {
            w.id(key.entryID)
            w.u8(key.destination.code)
            w.u8(record.operation.map { $0.code + 1 } ?? 0)
            var flags: UInt8 = 0
            if record.remoteID != nil { flags |= 1 }
            if record.lastError != nil { flags |= 2 }
            if record.nextAttemptAt != nil { flags |= 4 }
            if record.parked { flags |= 8 }
            if record.changedSinceAttempt { flags |= 16 }
            if record.idempotencyKey != nil { flags |= 32 }
            if record.inFlight { flags |= 64 }
            w.u8(flags)
            w.varint(UInt64(record.attempts))
            w.varint(UInt64(max(0, record.lastStatus ?? 0)))
            if let remoteID = record.remoteID { w.string(remoteID) }
            if let lastError = record.lastError { w.string(lastError) }
            if let next = record.nextAttemptAt { w.signed(next) }
            w.varint(record.revision)
            if let key = record.idempotencyKey { w.string(key) }
        }
        for destination in SyncDestination.allCases.sorted() {
            let progress = state.outbox.progress(destination)
            var flags: UInt8 = 0
            if progress.remote != nil { flags |= 1 }
            if progress.lastPullAt != nil { flags |= 2 }
            if progress.lastSuccessAt != nil { flags |= 4 }
            if progress.lastErrorAt != nil { flags |= 8 }
            w.u8(flags)
            w.varint(progress.cursor)
            w.varint(progress.serverRevision)
            if let remote = progress.remote {
                w.u8(remote.dialect.code)
                w.string(remote.url)
            }
            if let time = progress.lastPullAt { w.signed(time) }
            if let time = progress.lastSuccessAt { w.signed(time) }
            if let time = progress.lastErrorAt {
                w.signed(time)
                w.string(progress.lastError ?? "")
                w.id(progress.lastErrorEntry ?? .none)
            }
        }
        let pending = state.pendingErasures.sorted { $0.key < $1.key }
        w.varint(UInt64(pending.count))
        for (id, seq) in pending {
            w.id(id)
            w.varint(seq)
        }
        return w.bytes
    }

    /// Decodes and checks an outbox section.
    /// - Parameters:
    ///   - buffer: the section's bytes.
    ///   - seq: the snapshot's covered seq (a pending erasure cannot be after it).
    static func decodeOutbox(_ buffer: UnsafeRawBufferPointer, seq: UInt64) throws(ByteReader.Malformed) -> OutboxPart {
        var r = ByteReader(buffer)
        var part = OutboxPart()
        let recordCount = try r.count()
        var records: [OutboxKey: OutboxRecord] = [:]
        records.reserveCapacity(recordCount)
        for _ in 0..<recordCount {
            let id = try r.id()
            guard let destination = SyncDestination(code: try r.u8()) else {
                throw ByteReader.Malformed(what: "unknown destination")
            }
            let operationCode = try r.u8()
            var record = OutboxRecord()
            if operationCode > 0 {
                guard let operation = SyncOperation(code: operationCode - 1) else {
                    throw ByteReader.Malformed(what: "unknown operation")
                }
                record.operation = operation
            }
            let flags = try r.u8()
            guard flags & ~0x7F == 0 else { throw ByteReader.Malformed(what: "outbox flags: unknown bits") }
            let attempts = try r.varint()
            guard attempts <= UInt64(Int32.max) else { throw ByteReader.Malformed(what: "attempts: out of range") }
            record.attempts = Int(attempts)
            let status = try r.varint()
            guard status <= 999 else { throw ByteReader.Malformed(what: "status: above 999") }
            record.lastStatus = status == 0 ? nil : Int(status)
            if flags & 1 != 0 { record.remoteID = try r.string("remote_id") }
            if flags & 2 != 0 { record.lastError = try r.string("error") }
            if flags & 4 != 0 { record.nextAttemptAt = try checkedTime(try r.signed(), "next_attempt_at") }
            record.parked = flags & 8 != 0
            record.changedSinceAttempt = flags & 16 != 0
            record.revision = try EventCodec.readRevision(from: &r)
            if flags & 32 != 0 { record.idempotencyKey = try r.string("idempotency_key") }
            record.inFlight = flags & 64 != 0
            records[OutboxKey(entryID: id, destination: destination)] = record
        }
        part.records = records
        var progress: [SyncProgress] = []
        for destination in SyncDestination.allCases.sorted() {
            var current = SyncProgress()
            let flags = try r.u8()
            guard flags & ~0x0F == 0 else { throw ByteReader.Malformed(what: "progress flags: unknown bits") }
            current.cursor = try EventCodec.readRevision(from: &r)
            current.serverRevision = try EventCodec.readRevision(from: &r)
            if flags & 1 != 0 {
                guard let dialect = RemoteDialect(code: try r.u8()) else {
                    throw ByteReader.Malformed(what: "dialect: unknown code")
                }
                current.remote = RemoteConfig(destination: destination, url: try r.string("url"), dialect: dialect)
            }
            if flags & 2 != 0 { current.lastPullAt = try checkedTime(try r.signed(), "last_pull_at") }
            if flags & 4 != 0 { current.lastSuccessAt = try checkedTime(try r.signed(), "last_success_at") }
            if flags & 8 != 0 {
                current.lastErrorAt = try checkedTime(try r.signed(), "last_error_at")
                current.lastError = try r.string("last_error")
                let entry = try r.id()
                current.lastErrorEntry = entry == .none ? nil : entry
            }
            progress.append(current)
        }
        part.progress = progress
        let pendingCount = try r.count()
        for _ in 0..<pendingCount {
            let id = try r.id()
            let erasedAt = try r.varint()
            guard erasedAt <= seq else { throw ByteReader.Malformed(what: "pending erasure: seq after the snapshot") }
            part.pendingErasures[id] = erasedAt
        }
        guard r.isAtEnd else { throw ByteReader.Malformed(what: "trailing bytes") }
        return part
    }
}

extension SnapshotCodec {
    /// A time field (µs since 1970) within the log format's recorded_at range.
    static func checkedTime(_ value: Int64, _ field: String) throws(ByteReader.Malformed) -> Int64 {
        guard LogFormat.recordedAtRange.contains(value) else {
            throw ByteReader.Malformed(what: "\(field): \(value) µs is outside years 1…9999")
        }
        return value
    }

    /// Whether a time in ms lies within the log format's recorded_at range (never overflows).
    static func isTimeInRange(milliseconds: Int64) -> Bool {
        let (micros, overflow) = milliseconds.multipliedReportingOverflow(by: 1000)
        return !overflow && LogFormat.recordedAtRange.contains(micros)
    }
}

extension OutboxState {
    init(records: [OutboxKey: OutboxRecord]) {
        self.init()
        self.restore(records)
    }
}
