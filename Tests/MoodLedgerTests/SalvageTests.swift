import EventLog
import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// `repair --salvage` always leaves a log that verifies: records whose framing is sound but whose event does not
/// decode are damage like any other, dropped with their batch and listed as lost.
@Suite("Salvage leaves a log that verifies")
struct SalvageTests {
    /// A ledger of three entries, then `payload` under `type` appended as a batch of its own (seq 4).
    static func ledger(with type: UInt16, payload: [UInt8], in dir: TemporaryDirectory, name: String) throws -> String {
        let path = dir.sub(name)
        var options = Ledger.Options()
        options.snapshotInterval = 0
        let ledger = try Ledger.open(at: path, options: options)
        try ledger.log(MoodDraft(valence: 0.1))
        try ledger.log(MoodDraft(valence: 0.2, labels: ["calm"]))
        try ledger.log(MoodDraft(valence: 0.3, notes: "kept"))
        ledger.close()
        let log = try EventLog.open(directory: path)
        _ = try log.append(type: type, payload: payload)
        log.close()
        return path
    }

    @Test(
        "Every codec corpus input as an event record: salvage drops what does not decode, lists its seq as lost, and verify passes"
    )
    func codecCorpus() throws {
        let inputs = FuzzCorpusTests.inputs("codec")
        #expect(!inputs.isEmpty)
        let dir = TemporaryDirectory("salvage-codec")
        var rejected = 0
        for (index, (name, bytes)) in inputs.enumerated() where bytes.count >= 2 {
            let type = (UInt16(bytes[0]) | UInt16(bytes[1]) << 8) & 0x7FFF
            guard type >= 1 else { continue }
            let path = try Self.ledger(with: type, payload: Array(bytes[2...]), in: dir, name: "l\(index)")
            let before = try Ledger.verify(at: path)
            let report = try Ledger.repair(at: path, mode: .salvage)
            let after = try Ledger.verify(at: path)
            #expect(after.ok, "\(name): \(after.problems)")
            if !before.ok {
                rejected += 1
                #expect(report.lostSeqs == [4...4], "\(name): \(report.lostSeqs)")
                #expect(report.keptRecords == before.records - 1, "\(name): counts records")
                #expect(report.backupPath != nil)
            }
            #expect(throws: Never.self, "\(name)") { try Ledger.open(at: path).close() }
        }
        #expect(rejected > 0, "some corpus inputs do not decode")
    }

    @Test(
        "Every log corpus input and crafted file: salvage then verify passes, or repair refuses with a clear error; counts are records"
    )
    func logCorpus() throws {
        let inputs = FuzzCorpusTests.inputs("log")
        #expect(!inputs.isEmpty)
        let dir = TemporaryDirectory("salvage-log")
        for (index, (name, bytes)) in inputs.enumerated() {
            let path = dir.sub("l\(index)")
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            Bytes.write(bytes, to: path + "/events.log")
            let before = try Ledger.verify(at: path)
            do {
                let report = try Ledger.repair(at: path, mode: .salvage)
                let after = try Ledger.verify(at: path)
                #expect(after.ok, "\(name): \(after.problems)")
                // Verify counts the salvaged file's records: those kept and one *lost* record for each range lost.
                #expect(
                    report.keptRecords + UInt64(report.lostSeqs.count) == after.records || report.backupPath == nil,
                    "\(name): kept \(report.keptRecords), lost \(report.lostSeqs), verify reads \(after.records)")
                #expect(
                    before.records <= UInt64(bytes.count / 32),
                    "\(name): \(before.records) records in \(bytes.count) bytes")
            } catch let error as EventLogError {
                #expect(!error.description.isEmpty, "\(name)")
            }
        }
    }
}
