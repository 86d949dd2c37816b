import EventLog

/// The snapshot's schema and its outbox sections (`Specs/ledger.md`): the outbox records, each destination's sync
/// progress and the pending erasures, in the varint primitives of the event catalog. Entries and analytics are sections of
/// their own (``SnapshotWriter``, ``SnapshotImage``).
enum SnapshotCodec {
    /// Bump when any projection, or the snapshot's encoding, changes: old snapshots are then ignored and the ledger
    /// replays.
    /// entries=2: a shared (source, source id) goes to the entry created first (the fold's rule, not insertion order).
    /// outbox=2: server revisions, in-flight idempotency keys and per-destination sync progress (Specs/sync.md).
    /// entries=3: a remote.applied upsert identical to the entry changes nothing (updated_at kept).
    /// snapshot-payload=2: pending erasures at the end.
    /// snapshot-payload=3: version-2 files: sections of rows, stored indexes and per-day aggregates, mapped on open.
    /// snapshot-payload=4: the outbox as an index of ids and a records section read on demand, beside a sync section.
    /// snapshot-payload=5: id slots of 8 bytes with a 32-bit fingerprint of the id's hash.
    /// snapshot-payload=6: version-3 files: a pieces section, a checksum of every 4 KiB of the other sections.
    /// snapshot-payload=7: version-4 files: pieces of 1 KiB.
    /// records=1, snapshot-payload=8: version-5 files: the record index (the log's sparse index, the `ledger.erased`
    /// seqs) and a filter of the entries each block of 1,024 records names.
    /// outbox=3: each destination's remote carries its capabilities and how they were learned.
    /// entries=4: an upsert of an existing entry keeps its source id even when a crafted log shares the pair.
    /// outbox=4: each destination's progress carries the server's account (`sync.pulled` v2).
    /// outbox=6: HealthKit's progress carries the anchor of the last pull (`healthkit.anchored`).
    /// outbox=5: a backend create attempted and never acknowledged, then deleted, leaves a pending delete.
    /// revisions=1, snapshot-payload=9..11: version-6 files: each entry's revision (beside its row from revisions=2);
    /// the projections kept whole (``KeptProjections``: the open conflicts, a server's notes and keys) name
    /// themselves here, in their order, and share one section.
    static let schema =
        "moodledger-projections/entries=4/outbox=6/analytics=1/records=1/revisions=2/" + KeptProjections.schema
        + "/snapshot-payload=11"
    static var fingerprint: UInt32 { CRC32C.checksum(Array(schema.utf8)) }

    /// The outbox sections of a state: the index (ids ascending, each with its pair's place in the records
    /// section), the records (per entry: a destination mask, then each present destination's record) and the sync
    /// section (each destination's progress, then the pending erasures).
    static func encodeOutbox(_ state: LedgerState) -> (index: [UInt8], records: [UInt8], sync: [UInt8]) {
        let pairs = state.outbox.pairsByID
        var index = ByteWriter(capacity: pairs.count * SnapshotLayout.outboxIndexSize)
        var records = ByteWriter(capacity: pairs.count * 24)
        for pair in pairs {
            let start = records.bytes.count
            records.u8((pair.records.0 == nil ? 0 : 1) | (pair.records.1 == nil ? 0 : 2))
            for record in [pair.records.0, pair.records.1] {
                if let record { writeRecord(record, to: &records) }
            }
            index.id(pair.id)
            index.fixed(UInt64(truncatingIfNeeded: start), 4)
            index.fixed(UInt64(records.bytes.count - start), 4)
        }
        var w = ByteWriter(capacity: 256)
        for destination in SyncDestination.allCases.sorted() {
            let progress = state.outbox.progress(destination)
            var flags: UInt8 = 0
            if progress.remote != nil { flags |= 1 }
            if progress.lastPullAt != nil { flags |= 2 }
            if progress.lastSuccessAt != nil { flags |= 4 }
            if progress.lastErrorAt != nil { flags |= 8 }
            if progress.account != nil { flags |= 16 }
            if progress.anchor != nil { flags |= 32 }
            w.u8(flags)
            w.varint(progress.cursor)
            w.varint(progress.serverRevision)
            if let remote = progress.remote {
                w.u8(remote.dialect.code)
                w.string(remote.url)
                w.u8(remote.capabilitySource.rawValue)
                w.u8(remote.capabilities.rawValue)
            }
            if let time = progress.lastPullAt { w.signed(time) }
            if let time = progress.lastSuccessAt { w.signed(time) }
            if let time = progress.lastErrorAt {
                w.signed(time)
                w.string(progress.lastError ?? "")
                w.id(progress.lastErrorEntry ?? .none)
            }
            if let account = progress.account { w.string(account) }
            if let anchor = progress.anchor { w.bytes(anchor) }
        }
        let pending = state.pendingErasures.sorted { $0.key < $1.key }
        w.varint(UInt64(pending.count))
        for (id, seq) in pending {
            w.id(id)
            w.varint(seq)
        }
        return (index.bytes, records.bytes, w.bytes)
    }

    /// One outbox record, without its key.
    private static func writeRecord(_ record: OutboxRecord, to w: inout ByteWriter) {
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

    /// One entry's records, as the records section holds them (read when the outbox first asks for that entry).
    /// - Throws: ``ByteReader/Malformed`` for an empty mask, unknown bits or codes, values out of range.
    static func readPair(from r: inout ByteReader) throws(ByteReader.Malformed) -> (OutboxRecord?, OutboxRecord?) {
        let mask = try r.u8()
        guard mask != 0, mask & ~3 == 0 else { throw ByteReader.Malformed(what: "outbox pair: mask \(mask)") }
        let first = mask & 1 != 0 ? try readRecord(from: &r) : nil
        let second = mask & 2 != 0 ? try readRecord(from: &r) : nil
        return (first, second)
    }

    /// One outbox record, without its key.
    private static func readRecord(from r: inout ByteReader) throws(ByteReader.Malformed) -> OutboxRecord {
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
        return record
    }

    /// Decodes and checks the sync section: each destination's progress, then the pending erasures.
    /// - Parameters:
    ///   - buffer: the section's bytes.
    ///   - seq: the snapshot's covered seq (a pending erasure cannot be after it).
    static func decodeSync(
        _ buffer: UnsafeRawBufferPointer, seq: UInt64
    ) throws(ByteReader.Malformed)
        -> (progress: [SyncProgress], pendingErasures: [EntryID: UInt64])
    {
        var r = ByteReader(buffer)
        var progress: [SyncProgress] = []
        for destination in SyncDestination.allCases.sorted() {
            var current = SyncProgress()
            let flags = try r.u8()
            guard flags & ~0x3F == 0 else { throw ByteReader.Malformed(what: "progress flags: unknown bits") }
            current.cursor = try EventCodec.readRevision(from: &r)
            current.serverRevision = try EventCodec.readRevision(from: &r)
            if flags & 1 != 0 {
                guard let dialect = RemoteDialect(code: try r.u8()) else {
                    throw ByteReader.Malformed(what: "dialect: unknown code")
                }
                let url = try r.string("url")
                guard let source = CapabilitySource(rawValue: try r.u8()) else {
                    throw ByteReader.Malformed(what: "capability_source: unknown code")
                }
                let bits = try r.u8()
                let capabilities = RemoteCapabilities(rawValue: bits)
                guard bits & ~RemoteCapabilities.all.rawValue == 0, source != .unknown || capabilities.isEmpty,
                    capabilities.isSubset(of: .ceiling(dialect))
                else {
                    throw ByteReader.Malformed(what: "capabilities: not possible for this dialect or source")
                }
                current.remote = RemoteConfig(
                    destination: destination, url: url, dialect: dialect,
                    capabilities: capabilities, source: source)
            }
            if flags & 2 != 0 { current.lastPullAt = try checkedTime(try r.signed(), "last_pull_at") }
            if flags & 4 != 0 { current.lastSuccessAt = try checkedTime(try r.signed(), "last_success_at") }
            if flags & 8 != 0 {
                current.lastErrorAt = try checkedTime(try r.signed(), "last_error_at")
                current.lastError = try r.string("last_error")
                let entry = try r.id()
                current.lastErrorEntry = entry == .none ? nil : entry
            }
            if flags & 16 != 0 {
                let account = try r.string("account")
                guard SyncPull.isUsableAccount(account) else {
                    throw ByteReader.Malformed(what: "account: not 1 to 64 visible ASCII characters")
                }
                current.account = account
            }
            if flags & 32 != 0 {
                guard destination == .healthkit else { throw ByteReader.Malformed(what: "anchor: not HealthKit's") }
                current.anchor = try r.bytes("anchor")
            }
            progress.append(current)
        }
        var pendingErasures: [EntryID: UInt64] = [:]
        let pendingCount = try r.count()
        for _ in 0..<pendingCount {
            let id = try r.id()
            let erasedAt = try r.varint()
            guard erasedAt <= seq else { throw ByteReader.Malformed(what: "pending erasure: seq after the snapshot") }
            guard pendingErasures.updateValue(erasedAt, forKey: id) == nil else {
                throw ByteReader.Malformed(what: "pending erasure: repeated entry")
            }
        }
        guard r.isAtEnd else { throw ByteReader.Malformed(what: "trailing bytes") }
        return (progress, pendingErasures)
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
