// libFuzzer harness: the log scanner, verify and repair (built with the EventLog sources by Tests/Fuzz/run.sh).
// The input is an events.log file. Whatever it holds: nothing traps, open either works or reports corruption,
// and after `repair --salvage` the log verifies and opens.
import Foundation

let fuzzDirectory = NSTemporaryDirectory() + "moodledger-fuzz-log-\(getpid())"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLog(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let io = SystemIO()
    _ = try? io.makeDirectory(fuzzDirectory)
    for name in (try? io.contents(ofDirectory: fuzzDirectory)) ?? [] { try? io.remove(fuzzDirectory + "/" + name) }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    FileManager.default.createFile(atPath: fuzzDirectory + "/events.log", contents: Data(bytes))
    _ = try? EventLog.verify(directory: fuzzDirectory)
    var readOnly = EventLog.Configuration()
    readOnly.access = .readOnly
    if let log = try? EventLog.open(directory: fuzzDirectory, configuration: readOnly) {
        _ = try? log.records()
        log.close()
    }
    if (try? EventLog.repair(directory: fuzzDirectory, mode: .salvage)) != nil {
        guard let report = try? EventLog.verify(directory: fuzzDirectory), report.ok else {
            fatalError("a salvaged log does not verify")
        }
        guard let log = try? EventLog.open(directory: fuzzDirectory) else { fatalError("a salvaged log does not open") }
        _ = try? log.records()
        log.close()
    }
    return 0
}
