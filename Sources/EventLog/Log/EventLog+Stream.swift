import Platform

extension EventLog {
    /// Appends one batch of records produced one at a time, without holding them all in memory: records are
    /// written in chunks as they come (every one but the last with the *continues* flag), then the batch is synced
    /// once. All or nothing, across a crash too: until the last record is written and synced the batch is an
    /// unfinished batch that recovery trims whole; if `produce` throws, what was written is cut off again.
    ///
    /// The log's lock is held while `produce` runs: other appends wait.
    /// - Parameters:
    ///   - chunkBytes: how much to buffer before a write (default 1 MiB).
    ///   - produce: calls `emit` once per record, in order (it answers where the record goes); what it throws aborts
    ///     the batch. `payload` reads back the payload of a record this batch emitted, from the buffer or the file.
    /// - Returns: the sequence numbers given, or `nil` if `produce` emitted nothing.
    /// - Throws: what `produce` throws (nothing appended), ``EventLogError`` `invalidArgument`, `failedState`,
    ///   `notWritable`, or `io` (then the log is in the failed state, as for ``append(_:)``).
    ///
    /// Long because the log's lock is held throughout and every failure must undo the same locals (what was written,
    /// where, the records' locations) before the log may go on: one function keeps that cleanup in one place.
    @discardableResult
    public func appendStream(
        chunkBytes: Int = 1 << 20,
        _ produce: (
            _ emit: (PendingRecord) throws -> StreamedRecord, _ payload: (StreamedRecord) throws -> [UInt8]
        ) throws -> Void
    ) throws -> ClosedRange<UInt64>? {
        try state.withLock { state in
            try checkWritable(state)
            try markDirty(&state)
            let now = io.nowMicroseconds()
            let start = (end: state.end, seq: state.nextSeq, time: state.lastRecordedAt)
            var buffer: [UInt8] = []
            buffer.reserveCapacity(min(chunkBytes, 1 << 20) + LogFormat.recordHeaderSize + maxPayload)
            var written: Int64 = 0
            var seq = state.nextSeq
            var time = state.lastRecordedAt
            var pending: PendingRecord?
            var notes: [(seq: UInt64, offset: Int64, time: Int64)] = []
            var last: RecordLocation?

            func encode(_ record: PendingRecord, continues: Bool) {
                time = max(time, record.recordedAt ?? now)
                let offset = start.end + written + Int64(buffer.count)
                let before = buffer.count
                let crc = record.payload.withUnsafeBytes {
                    LogFormat.appendRecord(
                        to: &buffer, seq: seq, type: record.type,
                        flags: continues ? LogFormat.continuesBatchFlag : 0, recordedAt: time, payload: $0)
                }
                if (seq - 1) % LogFormat.indexInterval == 0 { notes.append((seq, offset, time)) }
                last = RecordLocation(seq: seq, offset: offset, size: buffer.count - before, crc: crc)
                seq += 1
            }
            func flush() throws {
                guard !buffer.isEmpty else { return }
                do {
                    try buffer.withUnsafeBytes { try io.write(state.fd, $0, at: start.end + written) }
                } catch let error as Errno {
                    throw fail(
                        &state,
                        EventLogError.io(
                            "write failed; nothing of the batch was acknowledged", error,
                            offset: start.end + written))
                }
                written += Int64(buffer.count)
                buffer.removeAll(keepingCapacity: true)
            }

            func payload(of record: StreamedRecord) throws -> [UInt8] {
                if record.seq == seq, let pending { return pending.payload }  // emitted, not yet encoded
                let flushed = start.end + written
                precondition(record.seq < seq, "a record this batch emitted (its seq)")
                precondition(record.offset >= start.end, "a record this batch emitted (its offset)")
                if record.offset >= flushed {
                    return buffer.withUnsafeBytes { bytes in
                        let at = Int(record.offset - flushed)
                        let length = Int(bytes.u32(at + 8))
                        let body = at + LogFormat.recordHeaderSize
                        return Array(bytes[body..<(body + length)])
                    }
                }
                let fetcher = RecordFetcher(
                    io: io, fd: state.fd, limit: flushed, maxPayload: maxPayload, window: 1 << 14)
                return try fetcher.payload(of: record) { Array($0.payload) }
            }

            do {
                try produce(
                    { record in
                        try check(record)
                        guard seq < LogFormat.maximumSeq - 1 else {
                            throw EventLogError(.invalidArgument, "the log has reached its highest sequence number")
                        }
                        if let previous = pending { encode(previous, continues: true) }
                        pending = record
                        let position = StreamedRecord(seq: seq, offset: start.end + written + Int64(buffer.count))
                        if buffer.count >= chunkBytes { try flush() }
                        return position
                    }, payload)
                guard let final = pending else { return nil }
                encode(final, continues: false)
                try flush()
            } catch {
                // Nothing of the batch was acknowledged: cut it off (a crash before this leaves an unfinished
                // batch, which recovery trims). A failed cut leaves the log failed, to be recovered on reopen.
                if state.failure == nil, written > 0 {
                    do { try io.truncate(state.fd, to: start.end) } catch let truncation as Errno {
                        state.failure = EventLogError.io(
                            "cannot cut an aborted batch off", truncation, offset: start.end)
                    }
                }
                throw error
            }
            if configuration.durability == .always {
                do {
                    try io.syncData(state.fd)
                } catch let error as Errno {
                    throw fail(
                        &state, EventLogError.io("fdatasync failed; nothing was acknowledged", error, offset: start.end)
                    )
                }
            }
            for note in notes { state.index.note(seq: note.seq, offset: note.offset, recordedAt: note.time) }
            state.end = start.end + written
            state.nextSeq = seq
            state.lastRecordedAt = time
            state.lastRecord = last
            if configuration.durability == .always { state.durableSeq = seq - 1 }
            return start.seq...(seq - 1)
        }
    }
}
