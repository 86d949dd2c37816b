import EventLog
import Foundation
import TestSupport
import Testing

@testable import MoodLedger

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
