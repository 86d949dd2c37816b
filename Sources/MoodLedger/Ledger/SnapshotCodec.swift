import Dispatch
import EventLog

/// Encodes the projections' state for a snapshot (`Specs/snapshots.md`). Analytics are not stored: they are a
/// fold of the entries and are rebuilt on load.
enum SnapshotCodec {
    /// Bump when any projection, or this encoding, changes: old snapshots are then ignored and the ledger replays.
    /// entries=2: a shared (source, source id) goes to the entry created first (the fold's rule, not insertion order).
    /// outbox=2: server revisions, in-flight idempotency keys and per-destination sync progress (Specs/sync.md).
    /// entries=3: a remote.applied upsert identical to the entry changes nothing (updated_at kept).
    /// snapshot-payload=2: pending erasures at the end.
    static let schema = "moodledger-projections/entries=3/outbox=2/analytics=1/snapshot-payload=2"
    static var fingerprint: UInt32 { CRC32C.checksum(Array(schema.utf8)) }

    static func encode(_ state: LedgerState) -> [UInt8] {
        var w = ByteWriter(capacity: state.entries.count * 96 + 1024)
        w.varint(state.seq)
        w.signed(state.recordedAt)
        let entries = state.entries.all.sorted { $0.id < $1.id }
        w.varint(UInt64(entries.count))
        for entry in entries {
            w.id(entry.id)
            w.signed(entry.createdAt)
            w.signed(entry.updatedAt)
            EventCodec.writeEntryBody(entry, to: &w, withTags: true)
        }
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

    static func decode(_ bytes: [UInt8]) throws(ByteReader.Malformed) -> LedgerState {
        let result: Result<LedgerState, ByteReader.Malformed> = bytes.withUnsafeBytes { buffer in
            do throws(ByteReader.Malformed) {
                return .success(try decodeState(buffer))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private static func decodeState(_ buffer: UnsafeRawBufferPointer) throws(ByteReader.Malformed) -> LedgerState {
        var r = ByteReader(buffer)
        var state = LedgerState()
        state.seq = try r.varint()
        guard state.seq <= LogFormat.maximumSeq else { throw ByteReader.Malformed(what: "seq: above 2⁶³ − 1") }
        state.recordedAt = try checkedTime(try r.signed(), "recorded_at")
        let entryCount = try r.count()
        var decoded: [MoodEntry] = []
        decoded.reserveCapacity(entryCount)
        var previousID: EntryID?
        for _ in 0..<entryCount {
            let id = try r.id()
            // Entries are written in ascending id order: anything else (a duplicate id) is not a snapshot we wrote.
            if let previousID, !(previousID < id) { throw ByteReader.Malformed(what: "entries: ids not ascending") }
            previousID = id
            let createdAt = try checkedTime(try r.signed(), "created_at")
            let updatedAt = try checkedTime(try r.signed(), "updated_at")
            var entry = try EventCodec.readEntryBody(id: id, from: &r, withTags: true)
            entry.createdAt = createdAt
            entry.updatedAt = updatedAt
            decoded.append(entry)
        }
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
        state.outbox = OutboxState(records: records)
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
        state.outbox.restore(progress: progress)
        let pendingCount = try r.count()
        for _ in 0..<pendingCount {
            let id = try r.id()
            let seq = try r.varint()
            guard seq <= state.seq else { throw ByteReader.Malformed(what: "pending erasure: seq after the snapshot") }
            state.pendingErasures[id] = seq
        }
        // The entries' indexes and the analytics are independent folds of the same entries: build them on two cores.
        let (entries, analytics) = SnapshotCodec.build(decoded)
        state.entries = entries
        state.analytics = analytics
        guard r.isAtEnd else { throw ByteReader.Malformed(what: "trailing bytes") }
        return state
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

    /// Builds the entries projection and the analytics from decoded entries, concurrently.
    static func build(_ decoded: [MoodEntry]) -> (EntriesState, AnalyticsState) {
        final class Results: @unchecked Sendable {
            var entries = EntriesState()
            var analytics = AnalyticsState()
        }
        let results = Results()
        DispatchQueue.concurrentPerform(iterations: 2) { part in
            if part == 0 {
                var entries = EntriesState()
                entries.reserveCapacity(decoded.count)
                entries.insertAll(decoded)
                results.entries = entries  // each part writes only its own field
            } else {
                results.analytics = AnalyticsState.recomputed(from: decoded)
            }
        }
        return (results.entries, results.analytics)
    }
}

extension OutboxState {
    init(records: [OutboxKey: OutboxRecord]) {
        self.init()
        self.restore(records)
    }
}
