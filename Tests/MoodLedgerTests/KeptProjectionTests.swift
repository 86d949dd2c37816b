import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// The projections kept whole (`Specs/ledger.md`, *Where a projection goes*): each one's bytes decode to it, and the
/// snapshot's section is read only when it lists exactly the code's projections.
@Suite("Projections kept whole")
struct KeptProjectionTests {
    @Test("Each kept projection of a seeded workload decodes from its bytes to itself; the whole section too")
    func roundTrip() throws {
        let dir = TemporaryDirectory("ledger")
        let clock = ManualClock()
        var workload = Workload(random: SeededRandom(), clock: clock)
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock))
        defer { ledger.close() }
        // 600 steps, then on until a kept projection holds something (some seeds merge nothing and key nothing early).
        var steps = 0
        while steps < 600 || (ledger.state.conflicts.conflicts.isEmpty && ledger.state.requests.keptKeys.isEmpty),
            steps < 20_000
        {
            try workload.step(ledger)
            steps += 1
        }
        let state = ledger.state
        #expect(!state.conflicts.conflicts.isEmpty || !state.requests.keptKeys.isEmpty, "the workload kept something")
        let bytes = state.kept.encoded()
        let decoded = try bytes.withUnsafeBytes { try KeptProjections(decoding: $0, seq: state.seq) }
        #expect(decoded == state.kept)
        for type in KeptProjections.types {
            #expect(SnapshotCodec.schema.contains("/" + type.schema + "/"), "\(type.schema) is in the fingerprint")
        }
        // Covered seqs bound every seq the bytes hold: a snapshot claiming less is refused.
        if let first = state.conflicts.conflicts.first {
            #expect(throws: ByteReader.Malformed.self) {
                try bytes.withUnsafeBytes { try KeptProjections(decoding: $0, seq: first.seq - 1) }
            }
        }
    }

    @Test("A projections section that lists other projections, or in another order, is refused")
    func otherList() throws {
        var w = ByteWriter(capacity: 64)
        w.varint(UInt64(KeptProjections.types.count))
        for type in KeptProjections.types.reversed() {
            w.string(type.schema)
            w.bytes(type.init().encoded())
        }
        #expect(throws: ByteReader.Malformed.self) {
            try w.bytes.withUnsafeBytes { try KeptProjections(decoding: $0, seq: 10) }
        }
        var fewer = ByteWriter(capacity: 64)
        fewer.varint(1)
        fewer.string(KeptProjections.types[0].schema)
        fewer.bytes(KeptProjections.types[0].init().encoded())
        #expect(throws: ByteReader.Malformed.self) {
            try fewer.bytes.withUnsafeBytes { try KeptProjections(decoding: $0, seq: 10) }
        }
        let empty = KeptProjections().encoded()
        #expect(try empty.withUnsafeBytes { try KeptProjections(decoding: $0, seq: 0) } == KeptProjections())
    }
}
