/// The constants and codecs of `Specs/log-format.md`, version 1.
public enum LogFormat {
    /// `EVTLOG\r\n`.
    public static let magic: [UInt8] = [0x45, 0x56, 0x54, 0x4C, 0x4F, 0x47, 0x0D, 0x0A]
    /// The format version this code writes and reads.
    public static let version: UInt16 = 1
    /// Size of the file header in bytes.
    public static let fileHeaderSize = 48
    /// Size of a record header in bytes.
    public static let recordHeaderSize = 32
    /// The largest payload a record may carry (1 MiB).
    public static let maximumPayloadSize = 1 << 20
    /// Bit of a record type meaning "a reader that does not know this type may skip it".
    public static let safeToIgnoreBit: UInt16 = 0x8000
    /// The engine's own type: a sequence number whose record `repair --salvage` could not save.
    public static let lostRecordType: UInt16 = 0xFFFF
    /// Name of the log file inside a log directory.
    public static let logFileName = "events.log"
    /// Name of the lock file inside a log directory.
    public static let lockFileName = "LOCK"
    /// How many records lie between two entries of the sparse index.
    public static let indexInterval: UInt64 = 1024
    /// Record flag: another record of the same batch follows (set on every record of a batch but its last).
    public static let continuesBatchFlag: UInt16 = 0x0001
    /// Every record flag this version knows; a record with any other bit set is corrupt.
    public static let knownRecordFlags: UInt16 = continuesBatchFlag
    /// The highest sequence number (and base_seq) a file may hold: 2⁶³ − 1, so that every seq fits a signed
    /// 64-bit integer and `seq + 1` never overflows.
    public static let maximumSeq = UInt64(Int64.max)
    /// The recorded_at values a record may carry: 0001-01-01T00:00:00Z through 9999-12-31T23:59:59.999999Z.
    public static let recordedAtRange: ClosedRange<Int64> = -62_135_596_800_000_000...253_402_300_799_999_999

    /// The fields of a file header.
    public struct FileHeader: Sendable, Equatable {
        /// 16 random bytes naming this file.
        public var fileID: [UInt8]
        /// Sequence number of the first record minus one.
        public var baseSeq: UInt64
        /// Largest payload allowed in this file.
        public var maxPayload: UInt32

        /// Creates header fields.
        public init(fileID: [UInt8], baseSeq: UInt64, maxPayload: UInt32) {
            self.fileID = fileID
            self.baseSeq = baseSeq
            self.maxPayload = maxPayload
        }

        /// Encodes the 48 header bytes, checksum included.
        public func encoded() -> [UInt8] {
            var bytes = LogFormat.magic
            bytes.reserveCapacity(LogFormat.fileHeaderSize)
            bytes.appendLE(LogFormat.version)
            bytes.appendLE(UInt16(LogFormat.fileHeaderSize))
            bytes.appendLE(maxPayload)
            bytes.append(contentsOf: fileID)
            bytes.appendLE(baseSeq)
            bytes.appendLE(UInt32(0))
            bytes.appendLE(CRC32C.mask(CRC32C.checksum(bytes)))
            return bytes
        }

        /// Decodes and checks a header.
        /// - Parameter bytes: at least the first 48 bytes of the file.
        /// - Returns: the header, or a description of what is wrong with it.
        package static func decode(_ bytes: UnsafeRawBufferPointer) -> Result<FileHeader, HeaderProblem> {
            guard bytes.count >= fileHeaderSize else {
                return .failure(HeaderProblem("file is \(bytes.count) bytes, shorter than its 48-byte header"))
            }
            guard Array(bytes[0..<8]) == magic else {
                return .failure(HeaderProblem("bad magic: not an EventLog file"))
            }
            let stored = bytes.u32(44)
            let computed = CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<44])))
            guard stored == computed else { return .failure(HeaderProblem("file header checksum mismatch")) }
            guard bytes.u16(8) == version else {
                return .failure(HeaderProblem("unsupported format version \(bytes.u16(8))"))
            }
            guard bytes.u16(10) == UInt16(fileHeaderSize) else { return .failure(HeaderProblem("bad header size")) }
            let maxPayload = bytes.u32(12)
            guard maxPayload > 0, maxPayload <= 64 << 20 else {
                return .failure(HeaderProblem("bad max_payload \(maxPayload)"))
            }
            guard bytes.u32(40) == 0 else { return .failure(HeaderProblem("reserved header field is not zero")) }
            let baseSeq = bytes.u64(32)
            guard baseSeq < maximumSeq else {
                return .failure(HeaderProblem("base_seq \(baseSeq) is not below the maximum seq \(maximumSeq)"))
            }
            return .success(FileHeader(fileID: Array(bytes[16..<32]), baseSeq: baseSeq, maxPayload: maxPayload))
        }
    }

    /// Why a file header was refused.
    package struct HeaderProblem: Error {
        package var text: String
        package init(_ text: String) { self.text = text }
    }

    /// One encoded record, header and payload, checksums included (for tools and tests that craft files).
    /// - Parameters:
    ///   - seq: the sequence number.
    ///   - type: the record type.
    ///   - flags: the record flags (``continuesBatchFlag``).
    ///   - recordedAt: microseconds since 1970.
    ///   - payload: the payload bytes.
    /// - Returns: `32 + payload.count` bytes.
    public static func encodeRecord(
        seq: UInt64, type: UInt16, flags: UInt16 = 0, recordedAt: Int64,
        payload: [UInt8]
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        payload.withUnsafeBytes {
            _ = appendRecord(to: &bytes, seq: seq, type: type, flags: flags, recordedAt: recordedAt, payload: $0)
        }
        return bytes
    }

    /// Appends one encoded record (header and payload) to `buffer`.
    /// - Returns: the record's masked `crc` field (snapshots remember it to recognise the record).
    @discardableResult
    package static func appendRecord(
        to buffer: inout [UInt8], seq: UInt64, type: UInt16, flags: UInt16 = 0,
        recordedAt: Int64, payload: UnsafeRawBufferPointer
    ) -> UInt32 {
        // The 32-byte header is built on the stack, checksummed there with the payload, and appended in one go.
        var header: (UInt32, UInt32, UInt32, UInt16, UInt16, UInt64, UInt64) =
            (
                0, 0, UInt32(payload.count).littleEndian, type.littleEndian, flags.littleEndian, seq.littleEndian,
                UInt64(bitPattern: recordedAt).littleEndian
            )
        assert(MemoryLayout.size(ofValue: header) == recordHeaderSize)
        return withUnsafeMutableBytes(of: &header) { bytes in
            let (crc, headerCRC) = checksums(
                header: UnsafeRawBufferPointer(rebasing: bytes[8..<recordHeaderSize]),
                payload: payload)
            bytes.storeBytes(of: crc.littleEndian, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: headerCRC.littleEndian, toByteOffset: 4, as: UInt32.self)
            buffer.append(contentsOf: UnsafeRawBufferPointer(bytes))
            buffer.append(contentsOf: payload)
            return crc
        }
    }

    /// The masked (crc, header_crc) of a record's header fields (bytes 8..<32) and payload.
    @inlinable @inline(__always)
    package static func checksums(header: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) -> (UInt32, UInt32) {
        let headerState = CRC32C.extend(0xFFFF_FFFF, header)
        let headerCRC = CRC32C.mask(CRC32C.finish(headerState))
        let crc = CRC32C.mask(CRC32C.finish(CRC32C.extend(headerState, payload)))
        return (crc, headerCRC)
    }
}
