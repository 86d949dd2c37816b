import Platform

/// Where ``EventLog/appendStream(chunkBytes:_:)`` put a record: enough to read it back.
public struct StreamedRecord: Sendable, Hashable {
    /// Its sequence number.
    public var seq: UInt64
    /// The byte offset of its header.
    public var offset: Int64

    public init(seq: UInt64, offset: Int64) {
        self.seq = seq
        self.offset = offset
    }
}

/// Reads records at known places (``StreamedRecord``), each checked as a walk checks it: header and payload
/// checksums, and the sequence number expected there. Reads go through a window of the file that follows the
/// direction of travel, so a run of nearby records, forwards or backwards, costs one read per window.
///
/// Made by ``EventLog/fetcher()``; it reads the records acknowledged when it was made, and is meant for one thread
/// while the log is open.
public final class RecordFetcher {
    private let reader: ChunkReader
    private let maxPayload: Int

    init(io: any PlatformIO, fd: Int32, limit: Int64, maxPayload: Int, window: Int = 1 << 20) {
        reader = ChunkReader(io: io, fd: fd, limit: limit, chunkSize: window)
        self.maxPayload = maxPayload
    }

    /// Calls `body` with the record at `record`'s place.
    /// - Parameters:
    ///   - record: where the record is, and its sequence number.
    ///   - body: given the record (its payload view is valid only inside `body`).
    /// - Returns: what `body` returns.
    /// - Throws: ``EventLogError`` `corrupted` (offset and seq) when no sound record with that sequence number is
    ///   there; `io`; what `body` throws.
    public func payload<T>(of record: StreamedRecord, _ body: (RecordView) throws -> T) throws -> T {
        var scanner = RecordScanner(reader: reader, maxPayload: maxPayload, offset: record.offset, nextSeq: record.seq)
        switch try scanner.next() {
        case .record(let view): return try body(view)
        case .end, .torn: throw EventLogError(.corrupted, "no record here", offset: record.offset, seq: record.seq)
        case .damage(let problem): throw EventLogError(.corrupted, problem, offset: record.offset, seq: record.seq)
        }
    }
}

extension EventLog {
    /// A reader of records at known places, over the records acknowledged now.
    /// - Throws: ``EventLogError`` `notWritable` when the log is closed.
    public func fetcher() throws -> RecordFetcher {
        try state.withLock { state in
            if state.closed { throw EventLogError(.notWritable, "the log is closed") }
            return RecordFetcher(io: io, fd: state.fd, limit: state.end, maxPayload: maxPayload)
        }
    }
}
