@testable import MoodLedger
import TestSupport
import Testing

@Suite("IDIndex")
struct IDIndexTests {
    @Test("Agrees with a Dictionary through seeded random inserts, updates and removals")
    func modelCheck() {
        var random = SeededRandom()
        var index = IDIndex()
        var model: [EntryID: Int] = [:]
        var ids: [EntryID] = []
        for step in 0..<60_000 {
            let roll = Int.random(in: 0..<10, using: &random)
            if roll < 5 || ids.isEmpty {
                // Clustered ids too: many share a high half, to exercise probe runs.
                let id = roll == 0 ? EntryID(high: 7, low: UInt64(step)) : EntryID.random(using: &random)
                index.set(id, step)
                model[id] = step
                ids.append(id)
            } else if roll < 7 {
                let id = ids.randomElement(using: &random)!
                index.set(id, -step & 0x7FFF_FFFF)
                model[id] = -step & 0x7FFF_FFFF
            } else {
                let position = Int.random(in: 0..<ids.count, using: &random)
                let id = ids.remove(at: position)
                #expect(index.remove(id) == model.removeValue(forKey: id))
            }
            if step % 5_000 == 0 {
                #expect(index.count == model.count)
                for (id, value) in model { #expect(index[id] == value) }
            }
        }
        for (id, value) in model { #expect(index[id] == value) }
        #expect(index[EntryID(high: 1, low: 2)] == nil)
    }
}
