import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

@Suite("IdentifiedTable")
struct IdentifiedTableTests {
    private struct Value: EntryKeyed, Equatable {
        var id: EntryID
        var payload: Int
    }

    @Test("Agrees with a Dictionary through seeded random inserts, replacements and removals; positions stay dense")
    func modelCheck() {
        var random = SeededRandom()
        var table = IdentifiedTable<Value>()
        var model: [EntryID: Int] = [:]
        var ids: [EntryID] = []
        for step in 0..<60_000 {
            let roll = Int.random(in: 0..<10, using: &random)
            if roll < 5 || ids.isEmpty {
                // Clustered ids too: many share a high half, to exercise probe runs.
                let id = roll == 0 ? EntryID(high: 7, low: UInt64(step)) : EntryID.random(using: &random)
                table.set(Value(id: id, payload: step))
                model[id] = step
                ids.append(id)
            } else if roll < 7 {
                let id = ids.randomElement(using: &random)!
                table.set(Value(id: id, payload: -step))
                model[id] = -step
            } else if roll < 8 {
                let id = ids.randomElement(using: &random)!
                let position = table.position(of: id)!
                table[position: position].payload = step * 3
                model[id] = step * 3
            } else {
                let position = Int.random(in: 0..<ids.count, using: &random)
                let id = ids.remove(at: position)
                #expect(table.remove(id)?.payload == model.removeValue(forKey: id))
                #expect(table.remove(id) == nil)
            }
            if step % 5_000 == 0 {
                #expect(table.count == model.count)
                for (id, payload) in model { #expect(table[id]?.payload == payload) }
                #expect(Set(table.values.map(\.id)) == Set(model.keys))
            }
        }
        for (id, payload) in model { #expect(table[id]?.payload == payload) }
        #expect(table[EntryID(high: 1, low: 2)] == nil)
        // Emptied, then filled again: the slots left behind by removals never answer.
        for id in ids { table.remove(id) }
        #expect(table.count == 0)
        for id in ids.prefix(100) { #expect(table[id] == nil) }
    }
}
