import EventLog
import Foundation
import MoodLedger
import TestSupport
import Testing

/// `verify` tells an unfinished write (never acknowledged, trimmed by the next writer) from damage.
@Suite("verify and unfinished writes")
struct VerifyUnfinishedTests {
    static func ledger() -> CLIHarness {
        let cli = CLIHarness()
        cli.run(["init"])
        cli.run(["log", "--score", "6"])
        cli.run(["log", "--score", "7"])
        return cli
    }

    /// A batch's first record (flagged "continues") whose last record was never written, as a writer leaves it
    /// between its write and its `fdatasync`, or while it is still appending.
    static func unfinishedBatch(after cli: CLIHarness) -> [UInt8] {
        LogFormat.encodeRecord(
            seq: 3, type: 1, flags: LogFormat.continuesBatchFlag, recordedAt: 4_102_444_800_000_000,
            payload: Array(repeating: 7, count: 40))
    }

    @Test(
        "A batch without its last record, or a record cut short, at the end: exit 0, reported as an unfinished write; real damage: exit 1"
    )
    func unfinished() throws {
        for tail in [Self.unfinishedBatch(after: Self.ledger()), [UInt8](repeating: 0x5A, count: 11)] {
            let cli = Self.ledger()
            let log = cli.ledger + "/events.log"
            let intact = Bytes.read(log)
            Bytes.write(intact + tail, to: log)
            let human = cli.run(["verify"])
            #expect(human.code == 0, "\(human.out)")
            #expect(
                human.out.contains(
                    "an unfinished write of \(tail.count) bytes, never acknowledged; the next writer trims it"))
            #expect(!human.out.contains("repair"))
            let json = try JSONParser.parse(cli.run(["verify", "--json"]).out)
            #expect(json["ok"] == .bool(true) && json["records"] == .int(2))
            #expect(json["unfinished_write"]?["offset"] == .int(Int64(intact.count)))
            // Nothing acknowledged was in it: the next writer trims it and goes on.
            #expect(cli.run(["log", "--score", "8"]).code == 0)
            #expect(cli.run(["verify", "--json"]).out.contains("\"unfinished_write\": null"))
        }
        // A flipped byte inside an acknowledged record is damage.
        let cli = Self.ledger()
        var bytes = Bytes.read(cli.ledger + "/events.log")
        bytes[LogFormat.fileHeaderSize + 40] ^= 0xFF
        Bytes.write(bytes, to: cli.ledger + "/events.log")
        let damaged = cli.run(["verify"])
        #expect(damaged.code == 1 && damaged.out.contains("repair"))
    }
}
