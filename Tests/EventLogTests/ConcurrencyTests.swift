import EventLog
import Foundation
import TestSupport
import Testing

@Suite("Writers, readers and crashes", .serialized)
struct ConcurrencyTests {
    @Test("A second writer in the same process is refused with the holder's pid")
    func secondWriterInProcess() throws {
        let dir = TemporaryDirectory()
        let first = try EventLog.open(directory: dir.path)
        #expect { _ = try EventLog.open(directory: dir.path) } throws: { error in
            let error = error as! EventLogError
            return error.code == .locked && error.lockHolderPID == getpid() && error.description.contains("locked")
        }
        // Readers do not block the writer and are not blocked by it.
        var readOnly = EventLog.Configuration()
        readOnly.access = .readOnly
        try first.append(type: 1, payload: [1])
        let reader = try EventLog.open(directory: dir.path, configuration: readOnly)
        #expect(try reader.records().count == 1)
        try first.append(type: 1, payload: [2])
        #expect(reader.lastSeq == 1, "a reader sees the log as it was when it opened")
        reader.close()
        first.close()
        // Other tests spawn processes: between fork and exec a child briefly holds inherited descriptors.
        var patient = EventLog.Configuration()
        patient.lockWaitMilliseconds = 2000
        let again = try EventLog.open(directory: dir.path, configuration: patient)
        #expect(again.lastSeq == 2)
        again.close()
    }

    /// Starts the crash child on `dir`; returns the process and a reader of its stdout lines.
    func startChild(_ dir: String, batch: Int = 1) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Repository.executable("eventlog-crash-child"))
        process.arguments = [dir, String(batch)]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, pipe)
    }

    @Test("A second writer in another process is refused with that process's pid")
    func secondWriterAcrossProcesses() throws {
        let dir = TemporaryDirectory()
        let (child, pipe) = try startChild(dir.path)
        defer { kill(child.processIdentifier, SIGKILL); child.waitUntilGone() }
        // Wait until the child has opened the log (it prints "open N").
        var seen = ""
        while !seen.contains("open") {
            seen += String(decoding: pipe.fileHandleForReading.availableData, as: UTF8.self)
        }
        #expect { _ = try EventLog.open(directory: dir.path) } throws: { error in
            let error = error as! EventLogError
            return error.code == .locked && error.lockHolderPID == child.processIdentifier
        }
    }

    @Test("SIGKILL at random moments never loses an acknowledged append")
    func killNineRepeatedly() throws {
        var random = SeededRandom()
        let dir = TemporaryDirectory()
        var acknowledged: UInt64 = 0
        for round in 0..<12 {
            let (child, pipe) = try startChild(dir.path, batch: Int.random(in: 1...20, using: &random))
            let reader = pipe.fileHandleForReading
            let deadline = Date().addingTimeInterval(Double.random(in: 0.02...0.12, using: &random))
            var output = ""
            while Date() < deadline {
                output += String(decoding: reader.availableData, as: UTF8.self)
            }
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilGone()
            output += String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
            let lines = output.split(separator: "\n")
            let acked = lines.compactMap { UInt64($0) }.max() ?? acknowledged
            #expect(
                lines.first?.hasPrefix("open") == true, "round \(round): child did not start: \(output.prefix(200))")
            acknowledged = max(acknowledged, acked)
            let (log, _) = try readPayloads(dir.path)
            #expect(log.lastSeq >= acknowledged, "round \(round): acknowledged \(acknowledged), found \(log.lastSeq)")
            let records = try log.records()
            #expect(records.map(\.seq) == Array(1...max(1, log.lastSeq)).prefix(records.count).map { $0 })
            log.close()
        }
        #expect(acknowledged > 0)
    }
}
