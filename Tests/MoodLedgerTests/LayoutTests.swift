import EventLog
import Testing

@testable import MoodLedger
@testable import MoodModel

/// The in-memory sizes the design counts on, held as code: a field added to a type held by the million fails here,
/// where it is a decision to make, not later as a slower, larger replay.
@Suite("Memory layout")
struct LayoutTests {
    @Test("An entry is 72 bytes, an outbox record 84, a word stat 16, a snapshot row 48; a record header 32")
    func sizes() {
        #expect(MemoryLayout<MoodEntry>.size == 72 && MemoryLayout<MoodEntry>.stride == 72)
        #expect(MemoryLayout<OutboxRecord>.size == 84)
        #expect(MemoryLayout<WordStat>.size == 16)
        #expect(MemoryLayout<EntryID>.size == 16)
        #expect(SnapshotLayout.rowSize == 48)
        #expect(LogFormat.recordHeaderSize == 32 && LogFormat.fileHeaderSize == 48)
    }
}
