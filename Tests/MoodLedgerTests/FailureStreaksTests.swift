import Foundation
import Platform
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// The failure streaks kept whole (`Specs/ledger.md`, *Failure streaks*): when each entry's attempts began, dated by
/// its batch's carrier; their bytes decoded strictly.
@Suite("Failure streaks")
struct FailureStreaksTests {
    static let a = EntryID(high: 0x0123_4567_89AB_4DEF, low: 0x8000_0000_0000_0001)
    static let b = EntryID(high: 0x0123_4567_89AB_4DEF, low: 0x8000_0000_0000_0002)

    static func recorded(_ event: MoodEvent, seq: UInt64, ms: Int64) -> RecordedEvent {
        RecordedEvent(seq: seq, recordedAt: ms * 1000, commandID: EntryID(high: 9, low: 9), event: event)
    }

    static func carrier(_ json: String) -> (type: UInt16, payload: [UInt8]) {
        (Attachment.Kind.carrier.recordType, Array(json.utf8))
    }

    @Test("A streak begins at the first attempt, is dated by its batch's carrier, and ends in step")
    func fold() throws {
        var streaks = FailureStreaks()
        streaks.apply(Self.recorded(.syncAttempted(Self.a, .backend, .create, key: "k"), seq: 1, ms: 1_000))
        #expect(streaks.streaks[Self.a] == Ledger.StreakStart(wallMilliseconds: 1_000), "before its carrier: no boot")
        let (type, payload) = Self.carrier(#"{"carrier":"t","boot":"boot-1","boot_ms":5000}"#)
        payload.withUnsafeBytes { streaks.attached(type: type, payload: $0) }
        streaks.endBatch(at: 2)
        let dated = Ledger.StreakStart(wallMilliseconds: 1_000, boot: BootClock(boot: "boot-1", milliseconds: 5_000))
        #expect(streaks.streaks[Self.a] == dated)
        // A later attempt keeps the streak's start; a later batch's carrier dates nothing already begun.
        streaks.apply(Self.recorded(.syncAttempted(Self.a, .backend, .create, key: "k"), seq: 3, ms: 9_000))
        streaks.apply(Self.recorded(.syncAttempted(Self.b, .backend, .create, key: "k"), seq: 4, ms: 9_000))
        let (_, other) = Self.carrier(#"{"carrier":"t","boot":"boot-2","boot_ms":1}"#)
        other.withUnsafeBytes { streaks.attached(type: type, payload: $0) }
        streaks.endBatch(at: 5)
        #expect(streaks.streaks[Self.a] == dated)
        #expect(streaks.streaks[Self.b]?.boot == BootClock(boot: "boot-2", milliseconds: 1))
        // In step again: a success ends a's streak; another server ends every streak.
        streaks.apply(Self.recorded(.syncSucceeded(Self.a, .backend, remoteID: "r", revision: 3), seq: 6, ms: 9_500))
        #expect(streaks.streaks[Self.a] == nil && streaks.streaks[Self.b] != nil)
        streaks.apply(
            Self.recorded(
                .remoteConfigured(
                    RemoteConfig(url: "http://127.0.0.1:1", dialect: .moodAPI, capabilities: [], source: .set)),
                seq: 7, ms: 9_600))
        #expect(streaks.streaks.isEmpty)
        // A carrier without a boot clock, or with one out of range, dates nothing.
        for json in [#"{"carrier":"t"}"#, #"{"boot":"","boot_ms":1}"#, #"{"boot":"x","boot_ms":-1}"#] {
            var fresh = FailureStreaks()
            fresh.apply(Self.recorded(.syncAttempted(Self.a, .backend, .create, key: "k"), seq: 1, ms: 1))
            Array(json.utf8).withUnsafeBytes { fresh.attached(type: type, payload: $0) }
            #expect(fresh.streaks[Self.a]?.boot == nil, "\(json)")
        }
    }

    @Test("Their bytes decode to them; ids out of order, a bad flag or boot, or trailing bytes are refused")
    func bytes() throws {
        var streaks = FailureStreaks()
        streaks.apply(Self.recorded(.syncAttempted(Self.b, .backend, .update, key: "k"), seq: 1, ms: 2_000))
        streaks.apply(Self.recorded(.syncAttempted(Self.a, .backend, .update, key: "k"), seq: 2, ms: -5))
        let (type, payload) = Self.carrier(#"{"boot":"b","boot_ms":7}"#)
        payload.withUnsafeBytes { streaks.attached(type: type, payload: $0) }
        streaks.endBatch(at: 3)
        streaks.apply(Self.recorded(.syncAttempted(Self.b, .backend, .update, key: "k"), seq: 4, ms: 3_000))
        let bytes = streaks.encoded()
        #expect(try bytes.withUnsafeBytes { try FailureStreaks(decoding: $0, seq: 4) } == streaks)
        func refused(_ bytes: [UInt8]) -> Bool {
            (try? bytes.withUnsafeBytes { try FailureStreaks(decoding: $0, seq: 4) }) == nil
        }
        var w = ByteWriter(capacity: 64)
        w.varint(2)
        w.id(Self.b)
        w.signed(1)
        w.u8(0)
        w.id(Self.a)
        w.signed(1)
        w.u8(0)
        #expect(refused(w.bytes), "ids descending")
        for flag: UInt8 in [2, 255] {
            var bad = ByteWriter(capacity: 32)
            bad.varint(1)
            bad.id(Self.a)
            bad.signed(1)
            bad.u8(flag)
            #expect(refused(bad.bytes), "flag \(flag)")
        }
        var long = ByteWriter(capacity: 128)
        long.varint(1)
        long.id(Self.a)
        long.signed(1)
        long.u8(1)
        long.string(String(repeating: "x", count: 65))
        long.varint(1)
        #expect(refused(long.bytes), "a boot of 65 bytes")
        var zero = ByteWriter(capacity: 32)
        zero.varint(1)
        zero.id(.none)
        zero.signed(1)
        zero.u8(0)
        #expect(refused(zero.bytes), "the zero id")
        #expect(refused(bytes + [0]), "trailing bytes")
        #expect(refused([0x05]), "a count past the bytes")
    }
}
