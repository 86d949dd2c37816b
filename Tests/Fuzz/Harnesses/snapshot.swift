// libFuzzer harness: a whole snapshot file through the store, every row, day and aggregate read.
import EventLog
import Foundation

let snapshotDirectory = NSTemporaryDirectory() + "moodledger-fuzz-snapshot-\(getpid())"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSnapshot(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let store = SnapshotStore(ledgerDirectory: snapshotDirectory, io: SystemIO())
    _ = try? FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
    FileManager.default.createFile(atPath: store.path(for: 7), contents: Data(bytes))
    _ = store.loadAndReadAll(seq: 7)
    return 0
}
