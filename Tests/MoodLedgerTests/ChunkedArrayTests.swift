import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

@Suite("ChunkedArray")
struct ChunkedArrayTests {
    @Test("Agrees with an Array through seeded appends, removals from the end and writes, across chunk boundaries")
    func modelCheck() {
        var random = SeededRandom()
        var chunked = ChunkedArray<Int>()
        var model: [Int] = []
        var copies: [(ChunkedArray<Int>, [Int])] = []
        for step in 0..<3_000 {
            let roll = Int.random(in: 0..<10, using: &random)
            if roll < 6 || model.isEmpty {
                // Runs of appends and removals, so the count crosses chunk boundaries both ways.
                let run = Int.random(in: 1...3_000, using: &random)
                for value in 0..<run {
                    chunked.append(step &* 31 &+ value)
                    model.append(step &* 31 &+ value)
                }
            } else if roll < 9 {
                let run = Int.random(in: 1...min(model.count, 5_000), using: &random)
                for _ in 0..<run { #expect(chunked.removeLast() == model.removeLast()) }
            } else {
                let at = Int.random(in: 0..<model.count, using: &random)
                chunked[at] = -step
                model[at] = -step
            }
            if model.count > 200_000 {
                model.removeAll()
                chunked = ChunkedArray()
            }
            if step % 300 == 0 { copies.append((chunked, model)) }
            #expect(chunked.count == model.count)
            if step % 100 == 0 {
                #expect(chunked.elementsEqual(model))
                // The in-place walk (what a bulk rebuild of the analytics reads) visits the same elements in order.
                var walked: [Int] = []
                chunked.forEachInPlace { walked.append($0.pointee) }
                #expect(walked == model)
            }
        }
        #expect(chunked.elementsEqual(model))
        // A copy taken earlier never sees the later writes (copy-on-write per chunk).
        for (copy, expected) in copies { #expect(copy.elementsEqual(expected)) }
    }
}
