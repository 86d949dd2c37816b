import TestSupport
import Testing

@testable import MoodInterchange
@testable import MoodLedger
@testable import MoodModel

@Suite("OccurrenceCounter")
struct OccurrenceCounterTests {
    @Test("Counts as a dictionary of counts does, through seeded keys (minutes, repeats, the empty marker) and growth")
    func modelCheck() {
        var random = SeededRandom()
        var counter = OccurrenceCounter()
        var model: [Int64: Int] = [:]
        for _ in 0..<200_000 {
            let key: Int64 =
                switch Int.random(in: 0..<100, using: &random) {
                case 0: .min
                case 1..<30: Int64.random(in: 0..<500, using: &random) * 60_000
                default: Int64.random(in: -9_000_000_000_000...9_000_000_000_000, using: &random) / 60_000 * 60_000
                }
            let before = model[key, default: 0]
            model[key] = before + 1
            #expect(counter.count(key) == before)
        }
    }
}
