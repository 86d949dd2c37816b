import Foundation
import MoodLedger
import TestSupport
import Testing

/// A snapshot is a durable statement that the log once held every seq through its own: a log cut, zeroed or flipped
/// below it has lost acknowledged events, and the tools say exactly which (the built binary, as a user runs it).
@Suite("Evidence of loss: snapshots prove what the log held")
struct EvidenceOfLossTests {
    /// A ledger of `count` entries with a snapshot at its end; each record's offset and size.
    static func ledger(
        _ dir: TemporaryDirectory, count: Int
    ) throws -> (path: String, records: [(offset: Int, size: Int)]) {
        let path = dir.sub("l.ledger")
        #expect(try Tool.run(["init", "--ledger", path]).code == 0)
        for index in 0..<count {
            #expect(
                try Tool.run(["log", "--valence", "0.\(index % 9 + 1)", "--label", "calm", "--ledger", path]).code == 0)
        }
        #expect(try Tool.run(["snapshot", "--ledger", path]).code == 0)
        let lines = try Tool.run(["events", "--json", "--ledger", path]).out.split(separator: "\n")
        let records = try lines.map { line -> (offset: Int, size: Int) in
            let json = try JSONParser.parse(String(line))
            return (json["offset"]?.intValue ?? 0, json["size"]?.intValue ?? 0)
        }
        return (path, records)
    }

    static func lost(_ path: String) throws -> [[Int]] {
        let repair = try Tool.run(["repair", "--salvage", "--json", "--ledger", path])
        let json = try JSONParser.parse(repair.out)
        return (json["lost_seqs"]?.arrayValue ?? []).map { item in
            item.arrayValue.map { $0.compactMap(\.intValue) } ?? [item.intValue ?? 0, item.intValue ?? 0]
        }
    }

    @Test(
        "A cut at a seeded record boundary below the snapshot: verify fails naming the range, writes refused, repair records exactly it, no seq reused"
    )
    func cutAtBoundary() throws {
        var random = SeededRandom()
        let dir = TemporaryDirectory("evidence-cut")
        let (path, records) = try Self.ledger(dir, count: 24)
        let keep = Int.random(in: 1..<(records.count - 1), using: &random)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path + "/events.log"))
        try handle.truncate(atOffset: UInt64(records[keep].offset))
        try handle.close()
        let verify = try Tool.run(["verify", "--ledger", path])
        #expect(verify.code == 1, "seed \(random.seed): \(verify.out)")
        #expect(verify.out.contains("seqs \(keep + 1)…\(records.count)"), "seed \(random.seed): \(verify.out)")
        let read = try Tool.run(["list", "--ledger", path])
        #expect(read.code == 0 && read.err.contains("MISSING") && read.err.contains("\(keep + 1)…\(records.count)"))
        #expect(try Tool.run(["log", "--valence", "0.5", "--label", "calm", "--ledger", path]).code != 0)
        #expect(try Tool.run(["rebuild", "--ledger", path]).code != 0, "the evidence is not deleted")
        #expect(try Self.lost(path) == [[keep + 1, records.count]], "seed \(random.seed)")
        #expect(try Tool.run(["verify", "--ledger", path]).code == 0)
        let logged = try Tool.run(["log", "--valence", "0.5", "--label", "calm", "--json", "--ledger", path])
        #expect(logged.code == 0)
        let last =
            try Tool.run(["events", "--json", "--ledger", path]).out.split(separator: "\n").last.map(String.init) ?? ""
        #expect(
            try JSONParser.parse(last)["seq"]?.intValue == records.count + 1, "a seq the snapshot saw is never reused")
    }

    @Test("A zeroed range at the end below the snapshot: every destroyed seq is reported lost")
    func zeroedTail() throws {
        var random = SeededRandom()
        let dir = TemporaryDirectory("evidence-zero")
        let (path, records) = try Self.ledger(dir, count: 30)
        let from = Int.random(in: 2..<(records.count - 2), using: &random)
        let start = records[from].offset + Int.random(in: 0..<records[from].size, using: &random)
        let log = path + "/events.log"
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: log)))
        // The first record destroyed is the first whose zeroed part held a byte that was not zero already (a
        // payload may end in zeros: zeroing them changes nothing).
        let destroyed =
            (from..<records.count).first { index in
                let record = records[index]
                return bytes[max(start, record.offset)..<(record.offset + record.size)].contains { $0 != 0 }
            } ?? records.count
        for index in start..<bytes.count { bytes[index] = 0 }
        try Data(bytes).write(to: URL(fileURLWithPath: log))
        #expect(try Tool.run(["verify", "--ledger", path]).code == 1)
        #expect(
            try Self.lost(path) == [[destroyed + 1, records.count]], "seed \(random.seed), zeroed from byte \(start)")
    }

    @Test("A flipped byte inside a record below the snapshot: exactly its seq is lost, the rest kept")
    func flip() throws {
        var random = SeededRandom()
        let dir = TemporaryDirectory("evidence-flip")
        let (path, records) = try Self.ledger(dir, count: 20)
        let victim = Int.random(in: 1..<(records.count - 1), using: &random)
        let log = path + "/events.log"
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: log)))
        bytes[records[victim].offset + records[victim].size - 1] ^= 0x5A
        try Data(bytes).write(to: URL(fileURLWithPath: log))
        #expect(try Self.lost(path) == [[victim + 1, victim + 1]], "seed \(random.seed)")
        #expect(try Tool.run(["verify", "--ledger", path]).code == 0)
    }
}
