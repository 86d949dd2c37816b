import Foundation
import TestSupport
import Testing

@testable import MoodInterchange
@testable import MoodLedger

@Suite("Exports written as they are made")
struct StreamingExportTests {
    @Test(
        "Every format, streamed to a file in 64 KiB pieces, is byte for byte the text export; pieces end between entries"
    )
    func streamedEqualsWhole() throws {
        var random = SeededRandom()
        let dir = TemporaryDirectory("stream-export")
        let ledger = try Ledger.open(at: dir.sub("l"))
        defer { ledger.close() }
        let words = ["calm", "happy", "my own word", "é accent", "stressed"]
        var drafts: [MoodDraft] = []
        for index in 0..<3_000 {
            let minute = Int64(index) * 47 * 60_000
            drafts.append(
                MoodDraft(
                    valence: Bool.random(using: &random)
                        ? Double(Int.random(in: -100...100, using: &random)) / 100 : nil,
                    score: nil, labels: [words.randomElement(using: &random)!],
                    notes: Bool.random(using: &random) ? "note \(index) — ünïcode ✓" : nil,
                    kind: index % 11 == 0 ? .dailyMood : .momentaryEmotion,
                    loggedAt: LoggedAt(milliseconds: 1_700_000_000_000 + minute, utcOffsetMinutes: 60)))
        }
        try ledger.log(contentsOf: drafts)
        let state = ledger.state
        for format in ExportFormat.allCases {
            let whole = Exporter.export(state, format: format)
            var pieces: [[UInt8]] = []
            Exporter.stream(state, format: format) { pieces.append($0) }
            #expect(pieces.count > 1 || format == .progress, "\(format): streamed in pieces")
            for piece in pieces.dropLast() {
                #expect(piece.count >= 64 << 10)
                #expect(String(validating: piece, as: UTF8.self) != nil, "a piece ends between characters")
            }
            #expect(pieces.flatMap { $0 } == Array(whole.utf8), "\(format)")
            let file = dir.sub("export.\(format.rawValue)")
            #expect(FileManager.default.createFile(atPath: file, contents: nil))
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            try Exporter.export(state, format: format, to: handle)
            try handle.close()
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data(whole.utf8), "\(format) to a file")
        }
        #expect(Exporter.export(LedgerState(), format: .json) == "{\n  \"entries\": [],\n  \"total\": 0\n}\n")
    }
}
