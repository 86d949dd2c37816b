import EventLog

/// A snapshot file's header fields (`Specs/snapshots.md`).
struct SnapshotHeader: Equatable {
    static let magic: [UInt8] = Array("MLSNAP\r\n".utf8)
    static let size = 80
    static let version: UInt16 = 1

    var fingerprint: UInt32
    /// The last record the snapshot covers.
    var location: RecordLocation
    /// The recorded-at of that record.
    var recordedAt: Int64
    /// The log file's id: a snapshot of another log is never used.
    var fileID: [UInt8]
    var payloadLength: UInt64
    var payloadCRC: UInt32

    func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: SnapshotHeader.size)
        w.bytes.append(contentsOf: SnapshotHeader.magic)
        w.fixed(UInt64(SnapshotHeader.version), 2)
        w.fixed(0, 2)
        w.fixed(UInt64(fingerprint), 4)
        w.fixed(location.seq, 8)
        w.fixed(UInt64(bitPattern: location.offset), 8)
        w.fixed(UInt64(location.size), 4)
        w.fixed(UInt64(location.crc), 4)
        w.bytes.append(contentsOf: fileID)
        w.fixed(UInt64(bitPattern: recordedAt), 8)
        w.fixed(payloadLength, 8)
        w.fixed(UInt64(payloadCRC), 4)
        let crc = CRC32C.mask(CRC32C.checksum(w.bytes))
        w.fixed(UInt64(crc), 4)
        return w.bytes
    }

    static func decode(_ bytes: ArraySlice<UInt8>) -> SnapshotHeader? {
        guard bytes.count >= size else { return nil }
        let b = Array(bytes.prefix(size))
        func int(_ at: Int, _ width: Int) -> UInt64 {
            (0..<width).reduce(UInt64(0)) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) }
        }
        guard Array(b[0..<8]) == magic, int(8, 2) == UInt64(version), int(10, 2) == 0,
              UInt32(int(76, 4)) == CRC32C.mask(CRC32C.checksum(Array(b[0..<76]))) else { return nil }
        return SnapshotHeader(
            fingerprint: UInt32(int(12, 4)),
            location: RecordLocation(seq: int(16, 8), offset: Int64(bitPattern: int(24, 8)), size: Int(int(32, 4)),
                                     crc: UInt32(int(36, 4))),
            recordedAt: Int64(bitPattern: int(56, 8)), fileID: Array(b[40..<56]), payloadLength: int(64, 8),
            payloadCRC: UInt32(int(72, 4)))
    }
}

extension ByteWriter {
    /// A fixed-width little-endian integer.
    mutating func fixed(_ value: UInt64, _ width: Int) {
        for i in 0..<width { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
    }
}

/// The snapshot files of a ledger: `snapshots/snapshot-<seq, 20 digits>.bin`. A cache, never a source of truth.
struct SnapshotStore: Sendable {
    let directory: String
    let io: any PlatformIO

    init(ledgerDirectory: String, io: any PlatformIO) {
        directory = ledgerDirectory + "/snapshots"
        self.io = io
    }

    func path(for seq: UInt64) -> String {
        let digits = String(seq)
        return directory + "/snapshot-" + String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".bin"
    }

    /// The covered sequence numbers of the snapshot files present, newest first.
    func list() -> [UInt64] {
        guard let names = try? io.contents(ofDirectory: directory) else { return [] }
        return names.compactMap { name -> UInt64? in
            guard name.hasPrefix("snapshot-"), name.hasSuffix(".bin") else { return nil }
            return UInt64(name.dropFirst("snapshot-".count).dropLast(".bin".count))
        }.sorted(by: >)
    }

    /// Writes a snapshot of `state` covering `location` atomically.
    func write(_ state: LedgerState, location: RecordLocation, fileID: [UInt8]) throws {
        try AtomicFile.makeDirectory(directory, io: io)
        let payload = SnapshotCodec.encode(state)
        let header = SnapshotHeader(fingerprint: SnapshotCodec.fingerprint, location: location,
                                    recordedAt: state.recordedAt, fileID: fileID, payloadLength: UInt64(payload.count),
                                    payloadCRC: CRC32C.mask(CRC32C.checksum(payload)))
        try AtomicFile.write(header.encoded() + payload, to: path(for: location.seq), io: io)
    }

    /// Reads and checks one snapshot file: header, checksums, fingerprint and (when given) the log's identity.
    /// - Returns: the header and state, or the reason it cannot be used.
    func load(seq: UInt64, fileID: [UInt8]?) -> Result<(SnapshotHeader, LedgerState), SnapshotProblem> {
        let file = path(for: seq)
        guard let bytes = try? AtomicFile.read(file, io: io) else { return .failure(.init("cannot read \(file)")) }
        guard let header = SnapshotHeader.decode(bytes[...]) else {
            return .failure(.init("\(file): damaged header"))
        }
        guard header.fingerprint == SnapshotCodec.fingerprint else {
            return .failure(.init("\(file): written by other projection code (fingerprint mismatch)"))
        }
        guard fileID == nil || header.fileID == fileID else { return .failure(.init("\(file): belongs to another log file")) }
        guard header.location.seq == seq, UInt64(bytes.count - SnapshotHeader.size) == header.payloadLength else {
            return .failure(.init("\(file): truncated or renamed"))
        }
        let payload = Array(bytes[SnapshotHeader.size...])
        guard CRC32C.mask(CRC32C.checksum(payload)) == header.payloadCRC else {
            return .failure(.init("\(file): payload checksum mismatch"))
        }
        do {
            let state = try SnapshotCodec.decode(payload)
            guard state.seq == seq else { return .failure(.init("\(file): covers another seq")) }
            return .success((header, state))
        } catch {
            return .failure(.init("\(file): malformed payload (\(error.what))"))
        }
    }

    /// Keeps the `keep` newest snapshots and, among older ones, the oldest of each `sparseInterval` bucket of seqs
    /// (so the sparse ones sit near bucket starts and stay put as the ledger grows).
    func prune(keep: Int, sparseInterval: UInt64) {
        // Temp files a crash left between write and rename are never valid snapshots.
        for name in (try? io.contents(ofDirectory: directory)) ?? [] where name.contains(".tmp-") {
            try? io.remove(directory + "/" + name)
        }
        let newestFirst = list()
        let newest = Set(newestFirst.prefix(keep))
        var buckets = Set<UInt64>()
        for seq in newestFirst.reversed() {
            let firstOfBucket = sparseInterval > 0 && buckets.insert(seq / sparseInterval).inserted
            if !newest.contains(seq) && !firstOfBucket { try? io.remove(path(for: seq)) }
        }
    }

    /// Removes every snapshot file.
    func removeAll() throws {
        for seq in list() { try io.remove(path(for: seq)) }
    }
}

/// Why a snapshot was skipped.
struct SnapshotProblem: Error {
    var text: String
    init(_ text: String) { self.text = text }
}
