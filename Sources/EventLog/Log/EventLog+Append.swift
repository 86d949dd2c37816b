import Platform

extension EventLog {
    /// Appends a batch of records with one write and (in `always` durability) one `fdatasync`.
    ///
    /// Returns only after every byte was written and, in `always` mode, synced. On any failure nothing is
    /// acknowledged, the log enters the failed state and refuses further appends until it is reopened.
    /// - Parameter records: one or more records; types `1...0xFFFE`, payloads at most 1 MiB.
    /// - Returns: the sequence numbers given to the records, in order.
    /// - Throws: ``EventLogError`` — `invalidArgument` (nothing written), `failedState`, `notWritable`, or `io`.
    @discardableResult
    public func append(_ records: [PendingRecord]) throws -> ClosedRange<UInt64> {
        guard !records.isEmpty else { throw EventLogError(.invalidArgument, "an append needs at least one record") }
        for record in records { try check(record) }
        return try state.withLock { state in
            try checkWritable(state)
            guard LogFormat.maximumSeq - state.nextSeq >= UInt64(records.count) else {
                throw EventLogError(.invalidArgument, "the log has reached its highest sequence number")
            }
            let now = io.nowMicroseconds()
            var buffer: [UInt8] = []
            buffer.reserveCapacity(records.reduce(0) { $0 + LogFormat.recordHeaderSize + $1.payload.count })
            var seq = state.nextSeq
            var time = state.lastRecordedAt
            var locations: [(RecordLocation, Int64)] = []
            locations.reserveCapacity(records.count)
            for (position, record) in records.enumerated() {
                time = max(time, record.recordedAt ?? now)
                let start = buffer.count
                // Every record but the batch's last says "continues": a crash that keeps only part of the batch
                // leaves a batch without its last record, which recovery trims whole.
                let flags = position == records.count - 1 ? 0 : LogFormat.continuesBatchFlag
                let crc = record.payload.withUnsafeBytes {
                    LogFormat.appendRecord(
                        to: &buffer, seq: seq, type: record.type, flags: flags, recordedAt: time,
                        payload: $0)
                }
                locations.append(
                    (
                        RecordLocation(
                            seq: seq, offset: state.end + Int64(start),
                            size: buffer.count - start, crc: crc), time
                    ))
                seq += 1
            }
            // The batch is exactly its records' frames, numbered on from the last sequence number.
            assert(seq - state.nextSeq == UInt64(records.count), "one seq a record")
            assert(locations.count == records.count, "one location a record")
            assert(locations.last.map { $0.0.offset + Int64($0.0.size) == state.end + Int64(buffer.count) } ?? true)
            try writeAndSync(buffer, state: &state)
            for (location, time) in locations {
                state.index.note(seq: location.seq, offset: location.offset, recordedAt: time)
            }
            let first = state.nextSeq
            state.end += Int64(buffer.count)
            state.nextSeq = seq
            state.lastRecordedAt = time
            state.lastRecord = locations.last!.0
            if configuration.durability == .always { state.durableSeq = seq - 1 }
            assert(state.durableSeq <= state.nextSeq - 1, "nothing is durable that was not written")
            return first...(seq - 1)
        }
    }

    /// Appends one record (a batch of one).
    /// - Parameters:
    ///   - type: the record type, `1...0xFFFE`.
    ///   - payload: at most 1 MiB.
    /// - Returns: the record's sequence number.
    /// - Throws: as ``append(_:)``.
    @discardableResult
    public func append(type: UInt16, payload: [UInt8]) throws -> UInt64 {
        try append([PendingRecord(type: type, payload: payload)]).lowerBound
    }

    /// Makes every written record durable (for `batched` durability; harmless otherwise).
    /// - Returns: the highest durable sequence number.
    /// - Throws: ``EventLogError``; a failed sync puts the log in the failed state and is never retried.
    @discardableResult
    ///
    /// The `fdatasync` runs without the log's lock, so appends made meanwhile go ahead (they form the next group of a
    /// group commit); what this call reports durable is what was written when it began.
    public func sync() throws -> UInt64 {
        let (fd, target) = try state.withLock { state -> (Int32, UInt64) in
            try checkWritable(state, writing: false)
            return (state.fd, state.nextSeq - 1)
        }
        if durableSeq >= target { return durableSeq }
        do {
            try io.syncData(fd)
        } catch let error as Errno {
            throw state.withLock { state in
                fail(&state, EventLogError.io("fdatasync failed; the log refuses appends until reopened", error))
            }
        }
        return try state.withLock { state in
            // A write that failed while the sync ran put the log in the failed state: nothing more is durable.
            try checkWritable(state, writing: false)
            state.durableSeq = max(state.durableSeq, target)
            return state.durableSeq
        }
    }

    func checkWritable(_ state: State, writing: Bool = true) throws {
        if state.closed { throw EventLogError(.notWritable, "the log is closed") }
        if configuration.access == .readOnly { throw EventLogError(.notWritable, "the log was opened read-only") }
        if writing, !state.lockHeld {
            throw EventLogError(.notWritable, "a write needs the writer lock: beginWrite() first")
        }
        if let failure = state.failure {
            throw EventLogError(.failedState, "an earlier write or sync failed (\(failure)); reopen the log to recover")
        }
    }

    private func writeAndSync(_ buffer: [UInt8], state: inout State) throws {
        try markDirty(&state)
        do {
            try buffer.withUnsafeBytes { try io.write(state.fd, $0, at: state.end) }
        } catch let error as Errno {
            throw fail(&state, EventLogError.io("write failed; nothing was acknowledged", error, offset: state.end))
        }
        guard configuration.durability == .always else { return }
        do {
            try io.syncData(state.fd)
        } catch let error as Errno {
            // Never retry: after a failed fdatasync the kernel may have dropped the dirty pages (fsyncgate).
            throw fail(&state, EventLogError.io("fdatasync failed; nothing was acknowledged", error, offset: state.end))
        }
    }

    /// Enters the failed state, cutting unacknowledged bytes off the file as a best effort.
    func fail(_ state: inout State, _ error: EventLogError) -> EventLogError {
        state.failure = error
        try? io.truncate(state.fd, to: state.end)
        return error
    }

    /// Refuses a record no log may hold: a reserved type, a payload above the maximum, a time outside years 1…9999.
    /// - Throws: ``EventLogError`` `invalidArgument`.
    func check(_ record: PendingRecord) throws {
        guard record.type != 0, record.type != LogFormat.lostRecordType else {
            throw EventLogError(.invalidArgument, "record type \(record.type) is reserved")
        }
        guard record.payload.count <= maxPayload else {
            throw EventLogError(
                .invalidArgument, "payload of \(record.payload.count) bytes exceeds the maximum \(maxPayload)")
        }
        if let time = record.recordedAt, !LogFormat.recordedAtRange.contains(time) {
            throw EventLogError(.invalidArgument, "recorded_at \(time) is outside years 1…9999")
        }
    }
}
