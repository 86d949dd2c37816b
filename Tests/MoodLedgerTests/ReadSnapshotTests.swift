import EventLog
import Foundation
import TestSupport
import Testing

@testable import MoodInterchange
@testable import MoodLedger
@testable import MoodModel

/// A read that replayed a long way leaves a snapshot, when no writer holds the ledger.
@Suite("Snapshots left by reads")
struct ReadSnapshotTests {
    /// A ledger of `count` events and no snapshot.
    static func ledger(_ dir: TemporaryDirectory, count: Int) throws -> String {
        var options = Ledger.Options()
        options.snapshotInterval = 0
        let ledger = try Ledger.open(at: dir.sub("l"), options: options)
        var plan = ImportPlan(format: .moodAPI)
        for i in 0..<count {
            plan.rows.append(
                ImportRow(
                    line: i + 1,
                    draft: MoodDraft(
                        valence: Double(i % 200 - 100) / 100, source: .import,
                        sourceID: "r\(i)", suggestLabels: false)))
        }
        _ = try ledger.importPlan(plan)
        ledger.close()
        #expect(ledger.snapshotFiles.isEmpty)
        return dir.sub("l")
    }

    static var readOnly: Ledger.Options {
        var options = Ledger.Options()
        options.readOnly = true
        options.snapshotAfterReadMinimum = 1_000
        return options
    }

    @Test("A read-only open that replayed cold leaves a snapshot the next open reads from, with the same answers")
    func leavesSnapshot() throws {
        let dir = TemporaryDirectory("read-snapshot")
        let path = try Self.ledger(dir, count: 1_500)
        let first = try Ledger.open(at: path, options: Self.readOnly)
        let answer = first.read { try? $0.list(EntryQuery()) }
        first.close()
        #expect(first.snapshotFiles.count == 1)
        let second = try Ledger.open(at: path, options: Self.readOnly)
        defer { second.close() }
        #expect(second.state.entries.image != nil, "the second open reads through the snapshot")
        #expect(second.read { try? $0.list(EntryQuery()) } == answer)
    }

    @Test("With a writer holding the ledger, a read leaves nothing and is not held up")
    func writerHolds() throws {
        let dir = TemporaryDirectory("read-snapshot-locked")
        let path = try Self.ledger(dir, count: 1_500)
        var writing = Ledger.Options()
        writing.snapshotOnCloseMinimum = .max
        writing.keepsWriterLock = true
        let writer = try Ledger.open(at: path, options: writing)
        let reader = try Ledger.open(at: path, options: Self.readOnly)
        reader.close()
        #expect(reader.snapshotFiles.isEmpty)
        writer.close()
    }
}
