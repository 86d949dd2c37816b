import Platform

/// Buffered positional reads over a file, bounded by a fixed end offset.
///
/// It never reads past `limit`, so bytes appended after the reader was made are not seen, and every length the
/// scanner asks for is checked against `limit` before any buffer is sized by it.
final class ChunkReader {
    private let io: any PlatformIO
    private let fd: Int32
    /// The end of the readable region (the file size when the reader was made).
    let limit: Int64
    private var buffer: UnsafeMutableRawBufferPointer
    private var bufferStart: Int64 = 0
    private var bufferCount = 0

    init(io: any PlatformIO, fd: Int32, limit: Int64, chunkSize: Int = 1 << 20) {
        self.io = io
        self.fd = fd
        self.limit = limit
        // A small file gets a buffer its size: opening many small logs allocates no chunk it never fills.
        buffer = .allocate(byteCount: Int(clamping: min(Int64(chunkSize), max(limit, 64))), alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// The bytes `offset..<offset+count`, or `nil` if they pass `limit`.
    /// The view is valid until the next call.
    /// - Parameter readAhead: fill the whole buffer from `offset` (the next reads are likely to follow); `false`
    ///   reads exactly `count` bytes.
    func bytes(at offset: Int64, count: Int, readAhead: Bool = true) throws -> UnsafeRawBufferPointer? {
        precondition(offset >= 0, "a read at a negative offset")
        precondition(count >= 0, "a read of a negative count")
        guard count <= limit - offset else { return nil }
        if offset < bufferStart || offset + Int64(count) > bufferStart + Int64(bufferCount) {
            if count > buffer.count {
                buffer.deallocate()
                buffer = .allocate(byteCount: max(count, buffer.count * 2), alignment: 16)
            }
            // Reading backwards (before the window), the window ends where the wanted bytes end: a walk from the
            // end towards the start reads each buffer's worth once, as a forward walk does.
            let from =
                readAhead && offset < bufferStart && bufferCount > 0
                ? max(0, offset + Int64(count) - Int64(buffer.count)) : offset
            let want = readAhead ? Int(min(Int64(buffer.count), limit - from)) : count
            let got = try io.read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: from)
            bufferStart = from
            bufferCount = got
            guard from + Int64(got) >= offset + Int64(count) else {
                throw EventLogError(.io, "file shrank while being read", offset: from + Int64(got))
            }
        }
        let start = Int(offset - bufferStart)
        return UnsafeRawBufferPointer(rebasing: buffer[start..<(start + count)])
    }

    /// Whether every byte from `offset` to `limit` is zero.
    func isZero(from offset: Int64) throws -> Bool {
        var position = offset
        while position < limit {
            let count = Int(min(Int64(1 << 16), limit - position))
            guard let chunk = try bytes(at: position, count: count) else { return false }
            if !chunk.isAllZero() { return false }
            position += Int64(count)
        }
        return true
    }
}
