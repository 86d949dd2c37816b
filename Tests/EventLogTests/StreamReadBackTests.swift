import EventLog
import Foundation
import TestSupport
import Testing

/// A streamed batch says where each record goes, reads its own records back while it writes (from what is not
/// written yet and from the file), and a fetcher reads them afterwards, forwards or backwards, checked.
@Suite("Reading a stream's records back")
struct StreamReadBackTests {
    static func payload(_ i: Int) -> [UInt8] {
        Array("record \(i) ".utf8) + [UInt8](repeating: UInt8(i % 251), count: i % 97)
    }

    @Test(
        "Each emitted record's place, read back during the batch (pending, buffered, written) and after it through a fetcher in both directions; a wrong seq is damage"
    )
    func readBack() throws {
        let dir = TemporaryDirectory()
        let log = try EventLog.open(directory: dir.path)
        defer { log.close() }
        _ = try log.append([PendingRecord(type: 1, payload: [1, 2, 3])])
        var random = SeededRandom(test: "stream-read-back")
        var places: [StreamedRecord] = []
        let count = 3000
        let seqs = try log.appendStream(chunkBytes: 4096) { emit, payload in
            for i in 0..<count {
                places.append(try emit(PendingRecord(type: 2, payload: Self.payload(i))))
                // The record just emitted, one still in the buffer, and one long written.
                let back = Int.random(in: 0...min(i, 3), using: &random)
                for j in [i, i - back, Int.random(in: 0...i, using: &random)] {
                    #expect(try payload(places[j]) == Self.payload(j), "record \(j) read back at \(i)")
                }
            }
        }
        #expect(seqs == 2...UInt64(count + 1))
        #expect(places.map(\.seq) == Array(2...UInt64(count + 1)))
        let records = try log.records(from: 2)
        #expect(records.map(\.offset) == places.map(\.offset))

        let fetcher = try log.fetcher()
        for order in [Array(0..<count), Array((0..<count).reversed()), (0..<count).shuffled(using: &random)] {
            for i in order {
                let read = try fetcher.payload(of: places[i]) { Array($0.payload) }
                #expect(read == Self.payload(i))
            }
        }
        var wrong = places[10]
        wrong.seq += 1
        #expect(throws: EventLogError.self) { try fetcher.payload(of: wrong) { _ in () } }
    }
}
