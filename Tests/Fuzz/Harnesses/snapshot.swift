// libFuzzer harness: a whole snapshot file through the store, every row, day, aggregate and outbox record read.
// Checksums are recomputed first (half of the time) so that mutations reach the decoders behind them.
import EventLog
import Foundation

let snapshotDirectory = NSTemporaryDirectory() + "moodledger-fuzz-snapshot-\(getpid())"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSnapshot(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if size > 0, data[size - 1] & 1 == 1 { SnapshotWriter.reseal(&bytes) }
    let store = SnapshotStore(ledgerDirectory: snapshotDirectory, io: SystemIO())
    _ = try? FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
    let seq = SnapshotStore.claimedSeq(bytes)
    FileManager.default.createFile(atPath: store.path(for: seq), contents: Data(bytes))
    _ = store.loadAndReadAll(seq: seq)
    try? FileManager.default.removeItem(atPath: store.path(for: seq))
    return 0
}
