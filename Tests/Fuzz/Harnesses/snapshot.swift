// libFuzzer harness: the snapshot decoder, both the payload codec and a whole snapshot file through the store.
import EventLog
import Foundation

let snapshotDirectory = NSTemporaryDirectory() + "moodledger-fuzz-snapshot-\(getpid())"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSnapshot(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let state = try? SnapshotCodec.decode(bytes) {
        // What decodes re-encodes to a snapshot that decodes to the same state.
        guard let again = try? SnapshotCodec.decode(SnapshotCodec.encode(state)), again == state else {
            fatalError("snapshot decode ∘ encode is not the identity")
        }
    }
    let store = SnapshotStore(ledgerDirectory: snapshotDirectory, io: SystemIO())
    _ = try? FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
    FileManager.default.createFile(atPath: store.path(for: 7), contents: Data(bytes))
    _ = store.load(seq: 7, fileID: nil)
    return 0
}
