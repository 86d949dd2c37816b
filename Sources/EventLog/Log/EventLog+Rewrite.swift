extension EventLog {
    /// What a rewrite did.
    public struct RewriteReport: Sendable, Equatable {
        /// Records whose payload was replaced.
        public var recordsRewritten: Int
        /// Bytes written: the new file's (``rewritePayloads(_:)``), or the journal's and the records'
        /// (``redactInPlace(maximumBytes:_:beforeWriting:)``).
        public var bytesWritten: Int64
    }

    /// Replaces the payloads of chosen records, keeping every record's seq, type, flags and recorded_at (so
    /// numbering and batches stay), with checksums recomputed — the one sanctioned exception to append-only, for
    /// erasure (`Specs/log-format.md`, *Rewriting*).
    ///
    /// Crash-safe: the new file is written beside the old one (`events.log.tmp-<hex>`, 0600), synced, renamed over
    /// it, and the directory synced; a crash leaves the old file or the new one. Readers that opened the old file
    /// keep reading it. Record offsets change, so snapshots keyed to the old file no longer match it.
    ///
    /// - Parameter transform: the new payload of a record, or `nil` to keep it byte for byte.
    /// - Returns: how many records changed and the new file's size.
    /// - Throws: ``EventLogError`` `notWritable` (read-only or closed), the failure that put the log in the failed
    ///   state, `io` (before the rename the old file is untouched and the log stays usable; after it, the log is
    ///   put in the failed state and must be reopened).
    public func rewritePayloads(_ transform: (RecordView) throws -> [UInt8]?) throws -> RewriteReport {
        try state.withLock { state in
            guard configuration.access == .readWrite, !state.closed else {
                throw EventLogError(.notWritable, "the log is closed or read-only")
            }
            if let failure = state.failure { throw failure }
            try checkWritable(state)
            try markDirty(&state)
            let reader = ChunkReader(io: io, fd: state.fd, limit: state.end)
            let header =
                try reader.bytes(at: 0, count: LogFormat.fileHeaderSize).map { Array($0) }
                ?? { throw EventLogError(.corrupted, "\(path): no header", offset: 0, seq: 0) }()
            let temp = path + ".tmp-" + io.randomBytes(6).map { String($0, radix: 16) }.joined()
            var rewritten = 0
            var written: Int64 = 0
            do {
                try wrapIO("cannot write \(temp)") {
                    let out = try io.open(temp, .createExclusive)
                    defer { io.close(out) }
                    var buffer = header
                    var scanner = RecordScanner(
                        reader: reader, maxPayload: maxPayload,
                        offset: Int64(LogFormat.fileHeaderSize), nextSeq: baseSeq + 1)
                    while true {
                        guard case .record(let view) = try scanner.next() else { break }
                        if let payload = try transform(view) {
                            buffer += LogFormat.encodeRecord(
                                seq: view.seq, type: view.type,
                                flags: view.continuesBatch ? LogFormat.continuesBatchFlag : 0,
                                recordedAt: view.recordedAt, payload: payload)
                            rewritten += 1
                        } else {
                            buffer.append(contentsOf: try reader.bytes(at: view.offset, count: view.size)!)
                        }
                        if buffer.count >= 1 << 20 {
                            try buffer.withUnsafeBytes { try io.write(out, $0, at: written) }
                            written += Int64(buffer.count)
                            buffer.removeAll(keepingCapacity: true)
                        }
                    }
                    guard scanner.offset == state.end else {
                        throw EventLogError(
                            .corrupted, "\(path): the log could not be read to its end for the rewrite",
                            offset: scanner.offset, seq: scanner.nextSeq)
                    }
                    try buffer.withUnsafeBytes { try io.write(out, $0, at: written) }
                    written += Int64(buffer.count)
                    try io.syncData(out)
                }
                try wrapIO("cannot rename \(temp)") { try io.rename(temp, path) }
            } catch {
                try? io.remove(temp)
                throw error
            }
            // From here the file on disk is the new one: any failure leaves the log failed until reopened.
            do {
                try wrapIO("cannot sync the directory of \(path)") { try io.syncDirectory(directory) }
                let fd = try wrapIO("cannot open \(path)") { try io.open(path, .readWrite) }
                io.close(state.fd)
                state.fd = fd
                // Offsets and checksums changed: rebuild the index and the last record's location.
                let newReader = ChunkReader(io: io, fd: fd, limit: written)
                var scanner = RecordScanner(
                    reader: newReader, maxPayload: maxPayload,
                    offset: Int64(LogFormat.fileHeaderSize), nextSeq: baseSeq + 1)
                var index = SparseIndex()
                var last: RecordLocation?
                while case .record(let view) = try scanner.next() {
                    index.note(view)
                    if !view.continuesBatch { last = view.location }
                }
                state.index = index
                state.lastRecord = last
                state.end = written
            } catch let error as EventLogError {
                state.failure = error
                throw error
            }
            return RewriteReport(recordsRewritten: rewritten, bytesWritten: written)
        }
    }
}
