// Test helper for the crash tests: appends records to the log in the directory given as the first argument,
// forever, and writes each sequence number to stdout (unbuffered) only after append returned — acknowledged.
// The test kills it with SIGKILL at random moments and checks that every printed seq survived.
import EventLog
import Foundation

let directory = CommandLine.arguments[1]
let batch = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 1 : 1
do {
    let log = try EventLog.open(directory: directory)
    FileHandle.standardOutput.write(Data("open \(log.lastSeq)\n".utf8))
    var counter = 0
    while true {
        counter += 1
        let records = (0..<batch).map { i in
            PendingRecord(
                type: 1,
                payload: Array("record \(counter)-\(i) ".utf8)
                    + [UInt8](repeating: 0x5A, count: (counter * 37 + i) % 300))
        }
        let seqs = try log.append(records)
        FileHandle.standardOutput.write(Data("\(seqs.upperBound)\n".utf8))
    }
} catch {
    FileHandle.standardError.write(Data("eventlog-crash-child: \(error)\n".utf8))
    exit(74)
}
