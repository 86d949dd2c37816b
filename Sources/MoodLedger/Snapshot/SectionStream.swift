import EventLog

/// A snapshot section written to the file as it grows: once a MiB has gathered, its whole 1 KiB pieces go to the
/// sink and leave memory, their checksums (the section's, and each piece's for the pieces section) taken on the way.
struct SectionStream {
    /// Where the section starts in the file.
    let offset: Int
    /// The bytes not yet written.
    var w: ByteWriter
    /// How many bytes were written.
    private(set) var written = 0
    /// The running CRC-32C of what was written.
    private var crc: UInt32 = 0xFFFF_FFFF
    /// The masked CRC-32C of each 1 KiB piece written.
    private(set) var pieceCRCs: [UInt32] = []

    /// - Parameters:
    ///   - offset: where the section starts in the file.
    ///   - streams: whether it will be written as it grows (room for a MiB and a bit is taken at once).
    init(offset: Int, streams: Bool = false) {
        self.offset = offset
        w = ByteWriter(capacity: streams ? 1 << 20 + 64 * 1024 : 0)
    }

    /// The section's length so far (what the next byte's offset in it will be).
    var length: Int { written + w.bytes.count }

    /// The masked CRC-32C of the section, once all of it was written.
    var checksum: UInt32 { CRC32C.mask(CRC32C.finish(crc)) }

    /// Writes the whole pieces gathered, once a MiB has (`all`: everything, the end of the section).
    mutating func spill(to sink: SnapshotWriter.Sink, all: Bool = false) throws {
        guard all || w.bytes.count >= 1 << 20 else { return }
        let count = all ? w.bytes.count : w.bytes.count / SnapshotLayout.pieceSize * SnapshotLayout.pieceSize
        guard count > 0 else { return }
        try w.bytes.withUnsafeBytes { bytes in
            let part = UnsafeRawBufferPointer(rebasing: bytes[0..<count])
            crc = CRC32C.extend(crc, part)
            var start = 0
            while start < count {
                let end = min(count, start + SnapshotLayout.pieceSize)
                pieceCRCs.append(CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: part[start..<end]))))
                start = end
            }
            try sink(offset + written, part)
        }
        written += count
        if all { w = ByteWriter(capacity: 0) } else { w.bytes.removeSubrange(0..<count) }
    }
}
