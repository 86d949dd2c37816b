// libFuzzer harness: a whole snapshot file through the store, every row, day, aggregate and outbox record read.
// Checksums are recomputed first (when the last byte is odd) so that mutations reach the decoders behind them; when
// its bit 1 is set, the sections read row by row are checked where read (a stale piece checksum then lets a
// mutation through to the readers, flagged as damage).
import EventLog
import Foundation
import Platform

let snapshotDirectory = NSTemporaryDirectory() + "moodledger-fuzz-snapshot-\(getpid())"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSnapshot(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if size > 0, data[size - 1] & 1 == 1 { SnapshotWriter.reseal(&bytes) }
    let store = SnapshotStore(ledgerDirectory: snapshotDirectory, io: SystemIO())
    _ = try? FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
    let seq = SnapshotStore.claimedSeq(bytes)
    FileManager.default.createFile(atPath: store.path(for: seq), contents: Data(bytes))
    _ = store.loadAndReadAll(seq: seq, checkWhereReadFrom: size > 0 && data[size - 1] & 2 != 0 ? 0 : .max)
    try? FileManager.default.removeItem(atPath: store.path(for: seq))
    return 0
}
