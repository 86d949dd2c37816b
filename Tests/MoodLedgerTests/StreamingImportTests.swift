import EventLog
import Foundation
import TestSupport
import Testing

@testable import MoodInterchange
@testable import MoodLedger
@testable import MoodModel

/// Imports stream their rows into one batch: all or nothing across a crash, nothing left by a bad row.
@Suite("Streaming imports are one atomic batch")
struct StreamingImportTests {
    static func daylio(rows: Int, badAt bad: Int? = nil) -> [UInt8] {
        var text = "full_date,date,weekday,time,mood,activities,note_title,note\n"
        for i in 0..<rows {
            let day = 1 + i % 28
            let mood = i == bad ? "ecstatic?" : ["rad", "good", "meh", "bad", "awful"][i % 5]
            text +=
                "2025-03-\(day < 10 ? "0" : "")\(day),March \(day),x,\(10 + i % 12):\(10 + i % 50),\(mood),reading | work,,\"note \(i), with a comma\"\n"
        }
        return Array(text.utf8)
    }

    static func stream(_ bytes: [UInt8], chunk: Int = 97) throws -> ImportStream {
        var position = 0
        var options = ImportOptions()
        options.zone = LocalZone(identifier: "Europe/Berlin")
        return try ImportStream.open(format: .daylio, options: options) { buffer in
            // Small reads, so records and quotes straddle chunk boundaries.
            let count = min(chunk, buffer.count, bytes.count - position)
            for i in 0..<count { buffer[i] = bytes[position + i] }
            position += count
            return count
        }!
    }

    @Test("A streamed import equals the whole-file import, row for row")
    func sameAsWholeFile() throws {
        let bytes = Self.daylio(rows: 300)
        var stream = try Self.stream(bytes)
        var streamed: [ImportRow] = []
        while let row = try stream.next() { streamed.append(row) }
        var options = ImportOptions()
        options.zone = LocalZone(identifier: "Europe/Berlin")
        let whole = try Importer.plan(String(decoding: bytes, as: UTF8.self), format: .daylio, options: options)
        #expect(streamed == whole.rows)
    }

    @Test("Cut at every byte of a streamed import's batch, the ledger reopens with none or all of it")
    func crashAtomicity() throws {
        let dir = TemporaryDirectory("stream-import")
        let ledger = try Ledger.open(at: dir.path)
        _ = try ledger.log(MoodDraft(valence: 0.1, loggedAt: LoggedAt(milliseconds: 1_740_000_000_000)))
        let before = ledger.eventLog.endOffset
        var stream = try Self.stream(Self.daylio(rows: 20))
        let report = try ledger.importStream(&stream)
        #expect(report.created == 20)
        ledger.close()
        // A crash during the batch's write leaves no snapshot after it (the close wrote one, which would prove the
        // batch was acknowledged: a cut below it is then a loss, not a torn write).
        try? FileManager.default.removeItem(atPath: dir.sub("snapshots"))
        let path = dir.sub("events.log")
        let full = Bytes.read(path)
        var options = Ledger.Options()
        options.useSnapshots = false
        options.lockWaitMilliseconds = 2000
        for cut in Int(before)...full.count {
            Bytes.write(Array(full[0..<cut]), to: path)
            let reopened = try Ledger.open(at: dir.path, options: options)
            let count = reopened.state.entries.count
            #expect(count == (cut == full.count ? 21 : 1), "cut at \(cut): \(count) entries")
            reopened.close()
        }
    }

    @Test(
        "Read on a second thread in batches: the streamed import appends what the whole-file import appends, and an error on either side stops both with nothing appended"
    )
    func pipelined() throws {
        // Several batches, the refused row part way: batches the reader queued are left untaken (a semaphore released
        // below its first value would trap).
        let rows = 4 * RowPipeline.batchSize + 123
        let bytes = Self.daylio(rows: rows)
        var options = ImportOptions()
        options.zone = LocalZone(identifier: "Europe/Berlin")
        let streamedDir = TemporaryDirectory("stream-import-pipelined")
        let wholeDir = TemporaryDirectory("stream-import-whole")
        let streamed = try Ledger.open(at: streamedDir.path)
        defer { streamed.close() }
        let whole = try Ledger.open(at: wholeDir.path)
        defer { whole.close() }
        var stream = try Self.stream(bytes, chunk: 4096)
        let report = try streamed.importStream(&stream)
        let plan = try Importer.plan(String(decoding: bytes, as: UTF8.self), format: .daylio, options: options)
        let expected = try whole.importPlan(plan)
        #expect(report.created == expected.created && report.existing == expected.existing)
        let exported = { (ledger: Ledger) in
            ledger.state.entries.all.map {
                "\($0.loggedAt) \($0.valence.map(String.init(describing:)) ?? "-") \($0.associations) \($0.tags) "
                    + "\($0.notes ?? "-") \($0.sourceID ?? "-")"
            }
            .sorted()
        }
        #expect(exported(streamed) == exported(whole))

        // A row the ledger refuses (decided on this thread) while the reader is still reading ahead.
        let before = Bytes.read(streamedDir.sub("events.log"))
        var text = String(decoding: Self.daylio(rows: rows), as: UTF8.self)
        text += "1850-01-01,January 1,x,10:10,rad,,,\n"
        text += String(String(decoding: Self.daylio(rows: rows), as: UTF8.self).split(separator: "\n", maxSplits: 1)[1])
        var refused = try Self.stream(Array(text.utf8), chunk: 4096)
        #expect(throws: ImportError.self) { try streamed.importStream(&refused) }
        #expect(Bytes.read(streamedDir.sub("events.log")) == before)

        // A read that fails part way (on the reader's thread).
        var position = 0
        var failing = try ImportStream.open(format: .daylio, options: options) { buffer in
            guard position < bytes.count / 2 else { throw ImportError(line: 0, field: nil, problem: "disk went away") }
            let count = min(4096, buffer.count, bytes.count - position)
            for i in 0..<count { buffer[i] = bytes[position + i] }
            position += count
            return count
        }!
        #expect(throws: ImportError.self) { try streamed.importStream(&failing) }
        #expect(Bytes.read(streamedDir.sub("events.log")) == before)
    }

    @Test("Records read by the stream (unquoted ones split without the scalar walk) equal CSVReader's, seeded")
    func streamedRecordsMatchTheReader() throws {
        var random = SeededRandom()
        let pieces = ["a", "", " b ", "é😀", "x\"y", "\"q,1\"", "\"multi\nline\"", "\r", "\"\"", "tab\t", "1"]
        for _ in 0..<200 {
            var text = ""
            for _ in 0..<Int.random(in: 0...12, using: &random) {
                let fields = (0..<Int.random(in: 1...4, using: &random)).map { _ in
                    pieces.randomElement(using: &random)!
                }
                text += fields.joined(separator: ",") + (Bool.random(using: &random) ? "\n" : "\r\n")
            }
            if Bool.random(using: &random) { text += "\n" }  // a blank line
            let expected = Result { try CSVReader.records(text) }
            let bytes = Array(text.utf8)
            var position = 0
            var stream = CSVStream { buffer in
                let count = min(7, buffer.count, bytes.count - position)
                for i in 0..<count { buffer[i] = bytes[position + i] }
                position += count
                return count
            }
            let streamed = Result {
                var records: [CSVReader.Record] = []
                while let record = try stream.next() { records.append(record) }
                return records
            }
            switch (expected, streamed) {
            case (.success(let a), .success(let b)):
                #expect(a.map(\.fields) == b.map(\.fields), "\(text.debugDescription)")
                #expect(a.map(\.line) == b.map(\.line), "\(text.debugDescription)")
            case (.failure, .failure): break
            default: Issue.record("one side failed: \(text.debugDescription)")
            }
        }
    }

    @Test("A bad row late in the file imports nothing and leaves the log byte for byte as it was")
    func badRowAppendsNothing() throws {
        let dir = TemporaryDirectory("stream-import-bad")
        let ledger = try Ledger.open(at: dir.path)
        defer { ledger.close() }
        _ = try ledger.log(MoodDraft(valence: 0.1, loggedAt: LoggedAt(milliseconds: 1_740_000_000_000)))
        let before = Bytes.read(dir.sub("events.log"))
        var stream = try Self.stream(Self.daylio(rows: 5000, badAt: 4990), chunk: 1 << 16)
        #expect(throws: ImportError.self) { try ledger.importStream(&stream) }
        #expect(Bytes.read(dir.sub("events.log")) == before)
        #expect(ledger.state.entries.count == 1)
        _ = try ledger.log(MoodDraft(valence: 0.2, loggedAt: LoggedAt(milliseconds: 1_740_000_100_000)))
        #expect(ledger.state.entries.count == 2, "the ledger goes on")
    }
}
