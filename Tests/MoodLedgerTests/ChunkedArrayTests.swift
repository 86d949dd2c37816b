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

    @Test("Names the chunk appends fill next once the current one is half full, and the next element lands there")
    func newestChunkAhead() throws {
        var chunked = ChunkedArray<Int>()
        for value in 0..<(4_096 + 2_047) { chunked.append(value) }
        let filling = chunked.newestChunkStorage
        chunked.append(0)  // half of the second chunk: the third is set aside
        let ahead = try #require(chunked.newestChunkStorage)
        #expect(ahead.address != filling?.address && ahead.bytes >= 4_096 * MemoryLayout<Int>.stride)
        for value in 0..<2_049 { chunked.append(value) }  // the second chunk full, then one more
        var last: UInt = 0
        chunked.forEachInPlace { last = UInt(bitPattern: $0) }
        #expect(last == ahead.address, "the first element of the third chunk")
        #expect(chunked.count == 8_193 && chunked[8_192] == 2_048)
    }
}
