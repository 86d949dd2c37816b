// Test helper for the crash tests: appends records to the log in the directory given as the first argument,
// forever, and writes each sequence number to stdout (unbuffered) only after append returned — acknowledged.
// The test kills it with SIGKILL at random moments and checks that every printed seq survived.
//
// With `--signals` instead: observes SIGINT and SIGTERM (`TerminationSignals.observe`), raises SIGTERM three times,
// each the moment the previous one was heard, prints `heard N` and exits 0 once all three were heard (1 if one was
// not within 5 s). A process of its own: another test's handlers cannot take the signals from it.
import EventLog
import Foundation
import Platform
import Synchronization

/// The `--signals` check (see above).
enum SignalCheck {
    static let heard = Atomic<Int>(0)

    static func run() -> Never {
        let observation = TerminationSignals.observe { heard.add(1, ordering: .sequentiallyConsistent) }
        for expected in 1...3 {
            raise(SIGTERM)
            let deadline = Date().addingTimeInterval(5)
            while heard.load(ordering: .sequentiallyConsistent) < expected, Date() < deadline { usleep(1_000) }
            FileHandle.standardOutput.write(Data("heard \(heard.load(ordering: .sequentiallyConsistent))\n".utf8))
            if heard.load(ordering: .sequentiallyConsistent) < expected { exit(1) }
        }
        observation.cancel()
        exit(0)
    }
}

if CommandLine.arguments.count > 1, CommandLine.arguments[1] == "--signals" { SignalCheck.run() }

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
