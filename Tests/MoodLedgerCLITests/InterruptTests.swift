import Foundation
import TestSupport
import Testing

/// SIGINT or SIGTERM during a long import: the unfinished batch is cut off, the command says so and exits 130 or
/// 143, the lock is released and the log is byte for byte what it was.
@Suite("Interrupted writing commands", .serialized)
struct InterruptTests {
    /// A Daylio export of `rows` rows, one every seven minutes from 2001 on.
    static func daylio(rows: Int, to path: String) throws {
        var text = "full_date,date,weekday,time,mood,activities,note\n"
        let moods = ["rad", "good", "meh", "bad", "awful"]
        let start = Date(timeIntervalSince1970: 978_307_200)
        let formatter = DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        for row in 0..<rows {
            let minute = row * 7
            let day = formatter.string(from: start.addingTimeInterval(Double(minute / 1440) * 86_400))
            text +=
                "\(day),x,y,\((minute % 1440) / 60):\(String(format: "%02d", minute % 60)),\(moods[row % 5]),walk,row \(row)\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    @Test(
        "Ctrl-C and SIGTERM during a streaming import: nothing kept, said so, 130 / 143, lock released",
        arguments: [SIGINT, SIGTERM])
    func interruptedImport(signal: Int32) throws {
        let dir = TemporaryDirectory("interrupt")
        let ledger = dir.sub("mood.ledger")
        let csv = dir.sub("big.csv")
        try Self.daylio(rows: 200_000, to: csv)
        let made = try Tool.run(["init", "--ledger", ledger])
        #expect(made.code == 0, "\(made.err)")
        #expect(try Tool.run(["log", "--score", "6", "--ledger", ledger]).code == 0)
        let before = Bytes.read(ledger + "/events.log")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Repository.executable("moodledger"))
        process.arguments = ["import", csv, "--format", "daylio", "--utc-offset", "+00:00", "--ledger", ledger]
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        usleep(1_500_000)
        kill(process.processIdentifier, signal)
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit, "ended by the signal itself: \(message)")
        #expect(process.terminationStatus == 128 + signal, "\(message)")
        #expect(message.contains("interrupted: nothing of this import was kept"), "\(message)")
        let unchanged = Bytes.read(ledger + "/events.log") == before
        #expect(unchanged, "the log changed")
        #expect(
            try Tool.run(["log", "--score", "7", "--wait", "0", "--ledger", ledger]).code == 0, "the lock was released")
        #expect(try Tool.run(["verify", "--ledger", ledger]).code == 0)
    }
}
