import Platform

extension EventLog {
    /// The redo journal of an in-place redaction, beside `events.log` (`Specs/log-format.md`, *Redacting in place*).
    public static let redoFileName = LogFormat.logFileName + ".redo"

    /// The redo journal's magic.
    static let redoMagic: [UInt8] = Array("MLREDO\r\n".utf8)

    /// Bytes before the first patch: magic, the log's file id, the patch count, a reserved zero.
    static let redoHeaderSize = 32

    /// Bytes before each patch's record: its offset in the log (u64) and its length (u32).
    static let redoPatchHeaderSize = 12

    /// The largest redo journal an open reads back (a journal is written only below this; see ``redactInPlace``).
    static let redoLimit = 64 << 20

    /// Replaces the payloads of chosen records where they are, each by a payload of exactly the same length, keeping
    /// every record's seq, type, flags and recorded_at (so offsets, batches and the header checksums stay) — the
    /// erasure of a few records without copying the log (`Specs/log-format.md`, *Redacting in place*).
    ///
    /// Crash-safe through a redo journal: `beforeWriting` runs first (an erasure removes the snapshots that hold what
    /// is redacted), then the new records are written to `events.log.redo` (atomically: a temp file synced and
    /// renamed, the directory synced), then over the old ones, the log synced, and the journal removed. A crash
    /// before the journal's rename changes no record; after it, the next writable open (or a reader that can take the
    /// writer lock) writes the journal's records again — the same bytes — and removes it.
    ///
    /// - Parameters:
    ///   - maximumBytes: the most bytes of new records to write in place; past it nothing is written and the result
    ///     is `nil` (rewrite the file instead: ``rewritePayloads(_:)``). At most 64 MiB less the journal's framing.
    ///   - ranges: the only sequence numbers whose records can change (ascending, not overlapping), found elsewhere
    ///     (a ledger's index of an entry's records): only they are read. `nil`: every record is read.
    ///   - transform: the new payload of a record — exactly as long as its old one — or `nil` to keep it.
    ///   - beforeWriting: called with the lowest seq about to change, before the journal is written (callers remove
    ///     the caches that hold what is being redacted, so that no crash can leave them beside a finished journal);
    ///     what it throws stops the redaction before any journal or record is written.
    /// - Returns: how many records changed and the bytes written (journal and records); `nil` past `maximumBytes`.
    /// - Throws: ``EventLogError`` `invalidArgument` (a payload of another length; nothing written), `notWritable`,
    ///   the failure that put the log in the failed state, `io` (before the journal is durable nothing changed;
    ///   after it the log is put in the failed state, and its next open finishes the redaction).
    public func redactInPlace(
        maximumBytes: Int = 16 << 20, within ranges: [ClosedRange<UInt64>]? = nil,
        _ transform: (RecordView) throws -> [UInt8]?,
        beforeWriting: (_ firstSeq: UInt64) throws -> Void = { _ in }
    ) throws -> RewriteReport? {
        try state.withLock { state in
            guard configuration.access == .readWrite, !state.closed else {
                throw EventLogError(.notWritable, "the log is closed or read-only")
            }
            if let failure = state.failure { throw failure }
            try checkWritable(state)
            var patches: [(offset: Int64, seq: UInt64, bytes: [UInt8])] = []
            var total = 0
            let budget = min(maximumBytes, Self.redoLimit - Self.redoHeaderSize - 4)
            // The records to look at: the ranges given, read from the sparse index's positions (a complete index:
            // else, and without ranges, every record from the first). Should a position taken from a cache hold no
            // record, those positions are dropped and every record is read.
            var useRanges = ranges != nil
            rangesOrAll: while true {
                patches = []
                total = 0
                let segments = (useRanges && state.index.isComplete ? ranges : nil) ?? [0...UInt64.max]
                for range in segments {
                    let (start, chunkSize) = state.index.read(of: range, baseSeq: baseSeq)
                    var scanner = RecordScanner(
                        reader: ChunkReader(io: io, fd: state.fd, limit: state.end, chunkSize: chunkSize),
                        maxPayload: maxPayload, offset: start.offset, nextSeq: start.seq)
                    var first = true
                    while true {
                        let next = try scanner.next()
                        if first, start.offset != Int64(LogFormat.fileHeaderSize), state.index.isTaken(start) {
                            guard case .record = next else {
                                state.index.distrustTaken()
                                useRanges = false
                                continue rangesOrAll
                            }
                        }
                        first = false
                        guard case .record(let view) = next else { break }
                        if view.seq > range.upperBound { break }
                        guard view.seq >= range.lowerBound, Self.contains(ranges, view.seq),
                            let payload = try transform(view)
                        else { continue }
                        guard payload.count == view.payload.count else {
                            throw EventLogError(
                                .invalidArgument, "an in-place payload must keep its record's length", seq: view.seq)
                        }
                        let bytes = LogFormat.encodeRecord(
                            seq: view.seq, type: view.type,
                            flags: view.continuesBatch ? LogFormat.continuesBatchFlag : 0,
                            recordedAt: view.recordedAt, payload: payload)
                        assert(bytes.count == view.size, "an in-place record keeps its size")
                        total += Self.redoPatchHeaderSize + bytes.count
                        if total > budget { return nil }
                        patches.append((view.offset, view.seq, bytes))
                    }
                    guard scanner.offset == state.end || range.upperBound < scanner.nextSeq else {
                        throw EventLogError(
                            .corrupted, "\(path): the log could not be read to its end for the redaction",
                            offset: scanner.offset, seq: scanner.nextSeq)
                    }
                }
                break
            }
            guard let first = patches.first else { return RewriteReport(recordsRewritten: 0, bytesWritten: 0) }
            assert(zip(patches, patches.dropFirst()).allSatisfy { $0.offset < $1.offset }, "patches in file order")
            assert(
                patches.last.map { $0.offset + Int64($0.bytes.count) <= state.end } ?? true, "patches inside the log")
            try markDirty(&state)
            // A journal's temp file that a killed redaction left (the writer lock is ours: none is being written).
            for name in (try? io.contents(ofDirectory: directory)) ?? []
            where name.hasPrefix(Self.redoFileName + ".tmp-") {
                try? io.remove(directory + "/" + name)
            }
            // What must not outlive the old records goes first: once the journal exists, any open finishes it.
            try beforeWriting(first.seq)
            let journal = Self.encodeRedo(fileID: fileID, patches.map { ($0.offset, $0.bytes) })
            let journalPath = directory + "/" + Self.redoFileName
            try AtomicFile.write(journal, to: journalPath, io: io)
            // From here records change on disk: a failure leaves the log failed and the journal for the next open.
            state.redactions += 1
            do {
                try Self.writePatches(patches.map { ($0.offset, $0.bytes) }, fd: state.fd, io: io)
            } catch let error as Errno {
                throw fail(&state, EventLogError.io("an in-place redaction could not be written", error))
            }
            // The journal's records are durable in the log: a journal left by a failed removal is written again,
            // harmlessly, by the next open.
            try? io.remove(journalPath)
            try? io.syncDirectory(directory)
            if let last = state.lastRecord, let patch = patches.last(where: { $0.offset == last.offset }) {
                state.lastRecord?.crc = patch.bytes.withUnsafeBytes { $0.u32(0) }
            }
            return RewriteReport(recordsRewritten: patches.count, bytesWritten: Int64(journal.count + total))
        }
    }

    /// Whether `seq` is in one of `ranges` (ascending; `nil`: every seq is).
    static func contains(_ ranges: [ClosedRange<UInt64>]?, _ seq: UInt64) -> Bool {
        guard let ranges else { return true }
        var low = 0
        var high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            if ranges[mid].upperBound < seq { low = mid + 1 } else { high = mid }
        }
        return low < ranges.count && ranges[low].contains(seq)
    }

    /// Writes each patch's record at its offset, then syncs the log's data: a redaction's last step, and the whole of
    /// finishing one from its journal.
    /// - Throws: ``Errno``.
    private static func writePatches(_ patches: [(offset: Int64, bytes: [UInt8])], fd: Int32, io: any PlatformIO) throws
    {
        for patch in patches { try patch.bytes.withUnsafeBytes { try io.write(fd, $0, at: patch.offset) } }
        try io.syncData(fd)
    }

    /// The redo journal's bytes: header, then each patch `u64 offset · u32 length · the record`, then the masked
    /// CRC-32C of everything before it.
    static func encodeRedo(fileID: [UInt8], _ patches: [(offset: Int64, bytes: [UInt8])]) -> [UInt8] {
        var out = redoMagic + fileID
        out.appendLE(UInt32(patches.count))
        out.appendLE(UInt32(0))
        for patch in patches {
            out.appendLE(UInt64(patch.offset))
            out.appendLE(UInt32(patch.bytes.count))
            out += patch.bytes
        }
        out.appendLE(CRC32C.mask(CRC32C.checksum(out)))
        return out
    }

    /// Writes a redo journal left beside the log into it, syncs the log and removes the journal (a writer's open).
    /// Each patch must be a whole record with valid checksums whose header fields (length, type, flags, seq,
    /// recorded_at and header checksum) equal those of the record at its offset: a journal that fails any check
    /// changes nothing and is refused as damage.
    /// - Returns: the number of records written, or 0 when there is no journal.
    /// - Throws: ``EventLogError`` `corrupted` (naming the journal and the patch's offset), `io`.
    static func applyRedo(
        directory: String, fd: Int32, fileID: [UInt8], maxPayload: Int, io: any PlatformIO
    ) throws -> Int {
        let journalPath = directory + "/" + redoFileName
        guard
            let patches = try applicableRedo(
                directory: directory, fd: fd, fileID: fileID, maxPayload: maxPayload, io: io)
        else { return 0 }
        try wrapIO("cannot write the journal's records into the log") { try writePatches(patches, fd: fd, io: io) }
        try wrapIO("cannot remove \(journalPath)") {
            try io.remove(journalPath)
            try io.syncDirectory(directory)
        }
        return patches.count
    }

    /// The patches of the redo journal beside the log if it may be written into it, `nil` when there is none: the one
    /// decision that an open, `repair` and `verify` share. Applicable means that it decodes (``decodeRedo``) and that
    /// each patch's header fields (bytes 4..<32: header checksum, length, type, flags, seq, recorded_at) equal
    /// those of the record at its offset in the log.
    /// - Throws: ``EventLogError`` `corrupted` naming the journal (and the patch's offset) when it is not applicable;
    ///   `io`.
    static func applicableRedo(
        directory: String, fd: Int32, fileID: [UInt8], maxPayload: Int, io: any PlatformIO
    ) throws -> [(offset: Int64, bytes: [UInt8])]? {
        let journalPath = directory + "/" + redoFileName
        let journal: [UInt8]
        do {
            journal = try AtomicFile.read(journalPath, limit: redoLimit, io: io)
        } catch let error as EventLogError where error.code == .notFound {
            return nil
        }
        let size = try wrapIO("cannot stat the log") { try io.size(fd) }
        let patches = try decodeRedo(journal, fileID: fileID, maxPayload: maxPayload, logSize: size, path: journalPath)
        for patch in patches {
            var current = [UInt8](repeating: 0, count: LogFormat.recordHeaderSize)
            let read = try wrapIO("cannot read the log") {
                try current.withUnsafeMutableBytes { try io.read(fd, into: $0, at: patch.offset) }
            }
            guard read == current.count, current[4...] == patch.bytes[4..<LogFormat.recordHeaderSize] else {
                throw EventLogError(
                    .corrupted, "\(journalPath): a record it would write is not the record at its offset in the log",
                    offset: patch.offset)
            }
        }
        return patches
    }

    /// The lowest seq the redo journal beside the log would write, or `nil` when there is none or it cannot be read
    /// as a journal (the log's open then refuses it). A ledger's open asks before it reads a snapshot: a snapshot
    /// from that seq on may hold what the journal redacts, and is neither used nor kept.
    public static func unfinishedRedactionFirstSeq(directory: String, io: any PlatformIO) -> UInt64? {
        let journalPath = directory + "/" + redoFileName
        guard io.exists(journalPath), let journal = try? AtomicFile.read(journalPath, limit: redoLimit, io: io),
            journal.count >= redoHeaderSize + 4,
            // Its own file id and no bound from the log: only which records it names is asked here; the open
            // decides, against the log, whether it applies.
            let patches = try? decodeRedo(
                journal, fileID: Array(journal[8..<24]), maxPayload: Int(UInt32.max), logSize: .max, path: journalPath)
        else { return nil }
        return patches.map { $0.bytes.withUnsafeBytes { $0.u64(16) } }.min()
    }

    /// The patches of a redo journal, every length checked against the journal's own size and the log's before use.
    static func decodeRedo(
        _ journal: [UInt8], fileID: [UInt8], maxPayload: Int, logSize: Int64, path: String
    ) throws -> [(offset: Int64, bytes: [UInt8])] {
        func damaged(_ what: String) -> EventLogError { EventLogError(.corrupted, "\(path): \(what)") }
        guard journal.count >= redoHeaderSize + 4, Array(journal[0..<8]) == redoMagic else {
            throw damaged("not a redo journal")
        }
        return try journal.withUnsafeBytes { bytes -> [(offset: Int64, bytes: [UInt8])] in
            let end = bytes.count - 4
            guard bytes.u32(end) == CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<end])))
            else { throw damaged("checksum mismatch") }
            guard Array(bytes[8..<24]) == fileID else { throw damaged("written for another log file") }
            let count = Int(bytes.u32(24))
            guard bytes.u32(28) == 0,
                count <= (end - redoHeaderSize) / (redoPatchHeaderSize + LogFormat.recordHeaderSize)
            else {
                throw damaged("bad header")
            }
            var patches: [(offset: Int64, bytes: [UInt8])] = []
            var at = redoHeaderSize
            for _ in 0..<count {
                guard end - at >= redoPatchHeaderSize else { throw damaged("a patch runs past the end") }
                let offset = bytes.u64(at)
                let length = Int(bytes.u32(at + 8))
                at += redoPatchHeaderSize
                guard length >= LogFormat.recordHeaderSize, length - LogFormat.recordHeaderSize <= maxPayload,
                    length <= end - at, offset >= UInt64(LogFormat.fileHeaderSize),
                    offset <= UInt64(logSize), UInt64(length) <= UInt64(logSize) - offset
                else { throw damaged("a patch of \(length) bytes at \(offset) does not fit the log") }
                let record = UnsafeRawBufferPointer(rebasing: bytes[at..<(at + length)])
                guard Int(record.u32(8)) == length - LogFormat.recordHeaderSize,
                    LogFormat.checksums(
                        header: UnsafeRawBufferPointer(rebasing: record[8..<LogFormat.recordHeaderSize]),
                        payload: UnsafeRawBufferPointer(rebasing: record[LogFormat.recordHeaderSize...]))
                        == (record.u32(0), record.u32(4))
                else { throw damaged("the record of a patch at \(offset) fails its checksums") }
                patches.append((Int64(offset), Array(record)))
                at += length
            }
            guard at == end else { throw damaged("bytes after the last patch") }
            return patches
        }
    }
}

extension EventLog {
    /// A reader's open that finds a redo journal: the writer is redacting in place now, or a crash interrupted it.
    /// Takes the writer lock without waiting and writes the journal itself when it can (as a writer's open would),
    /// else waits up to the configuration's lock wait for the writer to finish.
    /// - Returns: whether there was a journal (the file may have changed: read it afresh).
    /// - Throws: ``EventLogError`` `locked` when the journal is still there after the wait; what applying throws.
    static func awaitRedo(
        directory: String, header: LogFormat.FileHeader, configuration: Configuration
    ) throws -> Bool {
        let io = configuration.io
        let journalPath = directory + "/" + redoFileName
        guard io.exists(journalPath) else { return false }
        if let lock = try? EventLogFiles.acquireLock(directory: directory, io: io) {
            defer { io.close(lock.fd) }
            let fd = try wrapIO("cannot open the log to finish a redaction") {
                try io.open(directory + "/" + LogFormat.logFileName, .readWrite)
            }
            defer { io.close(fd) }
            _ = try applyRedo(
                directory: directory, fd: fd, fileID: header.fileID, maxPayload: Int(header.maxPayload), io: io)
            return true
        }
        var waited = 0
        while io.exists(journalPath) {
            guard waited < max(configuration.lockWaitMilliseconds, 1000) else {
                throw EventLogError(
                    .locked, "\(directory): a writer is redacting records in place (\(redoFileName)); try again")
            }
            io.sleep(milliseconds: 5)
            waited += 5
        }
        return true
    }
}
