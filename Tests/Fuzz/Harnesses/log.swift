// libFuzzer harness: the log scanner, verify and repair (built with the EventLog sources by Tests/Fuzz/run.sh).
// The input is an events.log file. Whatever it holds: nothing traps, open either works or reports corruption (and
// hands a visitor exactly the log's records, plus a torn batch's),
// and after `repair --salvage` the log verifies and opens.
import Foundation
import Platform

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
    // The open's scan hands its records to a visitor: up to the log's last seq exactly the records a read gives;
    // past it only the records of a torn batch.
    var visited: [(seq: UInt64, payload: [UInt8])] = []
    if let log = try? EventLog.open(
        directory: fuzzDirectory, configuration: readOnly, visiting: { visited.append(($0.seq, Array($0.payload))) })
    {
        let records = (try? log.records()) ?? []
        let kept = visited.prefix { $0.seq <= log.lastSeq }
        guard kept.count == records.count,
            zip(kept, records).allSatisfy({ $0.seq == $1.seq && $0.payload == $1.payload })
        else {
            fatalError("the records an open visited differ from the log's")
        }
        guard kept.count == visited.count || log.recoveryNotice != nil else {
            fatalError("an open visited records past the end of a log without a torn tail")
        }
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
