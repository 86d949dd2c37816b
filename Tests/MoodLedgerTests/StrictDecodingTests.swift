import EventLog
import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// Crafted payloads behind valid checksums: every decoded value is range-checked and named, never trapped on or
/// silently replaced (`Specs/events.md`, strict decoding).
@Suite("Strict decoding of crafted events")
struct StrictDecodingTests {
    struct Payload {
        var bytes: [UInt8] = [1] + [UInt8](repeating: 0xC0, count: 16) + [UInt8](repeating: 0xE1, count: 16)
        mutating func u8(_ value: UInt8) { bytes.append(value) }
        mutating func varint(_ value: UInt64) {
            var v = value
            while v >= 0x80 { bytes.append(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
            bytes.append(UInt8(v))
        }
        mutating func signed(_ value: Int64) { varint(UInt64(bitPattern: (value << 1) ^ (value >> 63))) }
        mutating func string(_ utf8: [UInt8]) { varint(UInt64(utf8.count)); bytes.append(contentsOf: utf8) }
    }

    /// A `mood.created` v2 payload with the given fields (momentary, manual, no words).
    static func created(
        ms: Int64 = 1_700_000_000_000, offset: Int64 = 60, flags: UInt8 = 0, valence: Int64? = nil,
        score: UInt8? = nil, notes: [UInt8]? = nil, trailing: [UInt8] = [], version: UInt8 = 2
    ) -> [UInt8] {
        var p = Payload()
        p.bytes[0] = version
        p.signed(ms)
        p.signed(offset)
        p.u8(1)
        var f = flags
        if valence != nil { f |= 1 }
        if score != nil { f |= 2 }
        if notes != nil { f |= 4 }
        p.u8(f)
        if let valence { p.signed(valence) }
        if let score { p.u8(score) }
        p.u8(0)  // source manual
        p.varint(0); p.varint(0); p.varint(0)  // labels, associations, tags
        if let notes { p.string(notes) }
        return p.bytes + trailing
    }

    static func syncFailed(status: UInt64, retryable: UInt8) -> [UInt8] {
        var p = Payload()
        p.u8(0)
        p.varint(status)
        p.u8(retryable)
        p.string(Array("timeout".utf8))
        return p.bytes
    }

    /// A payload of `version` with the given body after the ids (`zeroID`: the all-zero entry id).
    static func body(_ version: UInt8, zeroID: Bool = false, _ build: (inout Payload) -> Void) -> [UInt8] {
        var p = Payload()
        p.bytes[0] = version
        if zeroID { for i in 17..<33 { p.bytes[i] = 0 } }
        build(&p)
        return p.bytes
    }

    static let cases: [(String, UInt16, [UInt8], MoodError.Code, String)] = [
        (
            "sync.failed v2 retry time after 9999", 9,
            body(2) {
                $0.u8(0); $0.varint(503); $0.u8(1); $0.string([0x78]); $0.varint(1 << 62)
            },
            .corruptEvent, "next_attempt_at"
        ),
        (
            "sync.succeeded v2 revision ≥ 2⁶³", 8,
            body(2) {
                $0.u8(0); $0.string([0x72]); $0.varint(1 << 63)
            }, .corruptEvent, "revision"
        ),
        (
            "remote.applied v2 unknown flag bit", 10,
            body(2) {
                $0.u8(0); $0.u8(0x0A)
            }, .corruptEvent, "flags"
        ),
        (
            "sync.pulled naming an entry", 11,
            body(1) {
                $0.u8(0); $0.u8(0); $0.varint(1); $0.varint(1); $0.varint(0)
            }, .corruptEvent, "entry_id"
        ),
        (
            "sync.pulled unknown flag", 11,
            body(1, zeroID: true) {
                $0.u8(0); $0.u8(2); $0.varint(1); $0.varint(1); $0.varint(0)
            }, .corruptEvent, "flags"
        ),
        (
            "remote.configured unknown dialect", 12,
            body(1, zeroID: true) {
                $0.u8(0); $0.u8(7); $0.string([0x68])
            }, .corruptEvent, "dialect"
        ),
        (
            "entry.erased unknown flag", 14,
            body(1) {
                $0.u8(2); $0.string([]); $0.string([])
            }, .corruptEvent, "flags"
        ),
        ("a redacted record with trailing bytes", 1, body(0xFF) { $0.u8(0) }, .corruptEvent, "payload"),
        (
            "a redacted sync record with an unknown destination", 9, body(0xFF) { $0.u8(9) }, .corruptEvent,
            "destination"
        ),
        ("logged_at far in the future", 1, created(ms: Int64.max / 2), .corruptEvent, "logged_at"),
        ("logged_at before 1900", 1, created(ms: -3_000_000_000_000), .corruptEvent, "logged_at"),
        ("UTC offset Int64.min", 1, created(offset: Int64.min), .corruptEvent, "utc_offset_minutes"),
        ("UTC offset 1441", 1, created(offset: 1441), .corruptEvent, "utc_offset_minutes"),
        ("valence grid 2⁶²", 1, created(valence: 1 << 62), .corruptEvent, "valence"),
        ("valence just past −1", 1, created(valence: -(1 << 40) - 1), .corruptEvent, "valence"),
        ("score 0", 1, created(score: 0), .corruptEvent, "score"),
        ("score 11", 1, created(score: 11), .corruptEvent, "score"),
        ("unknown entry flag", 1, created(flags: 0x20), .corruptEvent, "flags"),
        ("notes not UTF-8", 1, created(notes: [0x61, 0xFF, 0x62]), .corruptEvent, "notes"),
        ("trailing bytes", 1, created(trailing: [0]), .corruptEvent, "payload"),
        ("status ≥ 2⁶³", 9, syncFailed(status: 1 << 63, retryable: 1), .corruptEvent, "status"),
        ("retryable 2", 9, syncFailed(status: 500, retryable: 2), .corruptEvent, "retryable"),
        ("a newer schema version", 1, created(version: 9), .newerVersion, "version"),
        ("an unknown event type", 77, created(), .newerVersion, "type")
    ]

    @Test("Each crafted payload is refused naming its field", arguments: cases.indices)
    func refused(_ index: Int) {
        let (name, type, payload, code, field) = Self.cases[index]
        #expect(Comment(rawValue: name)) {
            _ = try payload.withUnsafeBytes { try EventCodec.decode(type: type, payload: $0) }
        } throws: { error in
            let error = error as! MoodError
            return error.code == code && error.field == field
        }
    }

    @Test("The well-formed baseline of the crafted payloads decodes")
    func baseline() throws {
        let (_, event) = try Self.created(valence: 1 << 40, score: 10, notes: Array("ok".utf8)).withUnsafeBytes {
            try EventCodec.decode(type: 1, payload: $0)
        }
        guard case .created(let entry) = event else { Issue.record("not a create"); return }
        #expect(entry.valence == 1 && entry.enteredScore == 10 && entry.notes == "ok")
    }

    @Test("Opening, verifying and reading a ledger with a crafted event fail with the seq and field; nothing traps")
    func ledgerRefuses() throws {
        let dir = TemporaryDirectory()
        let ledger = try Ledger.open(at: dir.path)
        _ = try ledger.log(MoodDraft(valence: 0.5))
        ledger.close()
        let log = try EventLog.open(directory: dir.path)
        try log.append(type: 1, payload: Self.created(offset: Int64.min))
        log.close()
        var options = Ledger.Options()
        options.useSnapshots = false
        #expect {
            _ = try Ledger.open(at: dir.path, options: options)
        } throws: { error in
            let error = error as! MoodError
            return error.code == .corruptEvent && error.field == "utc_offset_minutes" && error.rule.contains("seq 2")
        }
        let report = try Ledger.verify(at: dir.path)
        #expect(!report.ok)
        #expect(report.problems.contains { $0.seq == 2 && $0.problem.contains("utc_offset_minutes") })
    }
}

@Suite("A crafted log with a shared source id")
struct SharedSourceIDTests {
    @Test("Replay and snapshot + tail agree: the entry created first holds the (source, source id)")
    func firstWins() throws {
        let dir = TemporaryDirectory("shared-source")
        let log = try EventLog.open(directory: dir.path)
        var ids: [EntryID] = []
        // Ids in descending order, so that insertion by id (a snapshot load) and by time (replay) differ.
        for (i, high) in [UInt64(0x9000_0000_0000_4000), 0x5000_0000_0000_4000, 0x1000_0000_0000_4000].enumerated() {
            let id = EntryID(high: high, low: 0x8000_0000_0000_0001)
            ids.append(id)
            let entry = MoodEntry(
                id: id, loggedAt: LoggedAt(milliseconds: 1_740_000_000_000 + Int64(i) * 60_000),
                kind: .momentaryEmotion, valence: 0.1, enteredScore: nil, tags: [], notes: nil,
                source: .import, sourceID: "daylio:dup")
            try log.append([
                PendingRecord(
                    type: EventType.created.rawValue,
                    payload: EventCodec.encode(.created(entry), commandID: EntryID.random()),
                    recordedAt: 1_740_000_000_000_000 + Int64(i) * 1_000_000)
            ])
        }
        log.close()
        var options = Ledger.Options()
        options.useSnapshots = false
        let replayed = try Ledger.open(at: dir.path, options: options)
        #expect(replayed.state.entries.entry(source: .import, sourceID: "daylio:dup")?.id == ids[0], "created first")
        let replayedState = replayed.state
        replayed.close()
        var snapshotting = Ledger.Options()
        snapshotting.snapshotOnCloseMinimum = 1
        let writer = try Ledger.open(at: dir.path, options: snapshotting)
        try writer.delete(ids[0])  // the holder goes: the next created passes it on, in both paths
        _ = try writer.snapshot()
        let live = writer.state
        writer.close()
        let warm = try Ledger.open(at: dir.path)
        #expect(warm.eventLog.resumedFromCheckpoint)
        #expect(warm.state.entries == live.entries)
        #expect(warm.state.entries.entry(source: .import, sourceID: "daylio:dup")?.id == ids[1])
        warm.close()
        let cold = try Ledger.open(at: dir.path, options: options)
        #expect(cold.state.entries == live.entries, "full replay == snapshot + tail")
        cold.close()
        #expect(replayedState.entries.count == 3)
    }
}

extension SharedSourceIDTests {
    @Test("A pulled change to the entry that holds a shared source id keeps it (live == replay == snapshot + tail)")
    func upsertKeepsTheHoldersSourceID() throws {
        let dir = TemporaryDirectory("shared-source-upsert")
        let log = try EventLog.open(directory: dir.path)
        var entries: [MoodEntry] = []
        for i in 0..<2 {
            let entry = MoodEntry(
                id: EntryID(high: 0x1000_0000_0000_4000 + UInt64(i), low: 0x8000_0000_0000_0001),
                loggedAt: LoggedAt(milliseconds: 1_740_000_000_000 + Int64(i) * 60_000),
                kind: .momentaryEmotion, valence: 0.1, enteredScore: nil, tags: [], notes: nil,
                source: .import, sourceID: "daylio:dup")
            entries.append(entry)
            try log.append([
                PendingRecord(
                    type: EventType.created.rawValue,
                    payload: EventCodec.encode(.created(entry), commandID: EntryID.random()),
                    recordedAt: 1_740_000_000_000_000 + Int64(i) * 1_000_000)
            ])
        }
        log.close()
        let ledger = try Ledger.open(at: dir.path)
        var changed = entries[0]
        changed.valence = 0.5
        changed.sourceID = nil
        try ledger.applyRemote(
            RemoteChange(origin: .backend, remoteID: "r-0", entry: changed, entryID: entries[0].id, revision: 2))
        var pulledBack = entries[1]
        pulledBack.valence = -0.5
        try ledger.applyRemote(
            RemoteChange(origin: .backend, remoteID: "r-1", entry: pulledBack, entryID: entries[1].id, revision: 3))
        let live = ledger.state
        #expect(live.entries[entries[0].id]?.sourceID == "daylio:dup", "the first holder keeps its source id")
        #expect(live.entries[entries[1].id]?.sourceID == "daylio:dup", "an existing entry keeps its own")
        #expect(live.entries.entry(source: .import, sourceID: "daylio:dup")?.id == entries[0].id)
        _ = try ledger.snapshot()
        ledger.close()
        var cold = Ledger.Options()
        cold.useSnapshots = false
        let replayed = try Ledger.open(at: dir.path, options: cold)
        #expect(replayed.state.entries == live.entries, "full replay == live")
        replayed.close()
        let warm = try Ledger.open(at: dir.path)
        #expect(warm.state.entries == live.entries, "snapshot + tail == live")
        warm.close()
    }
}

/// `Specs/vectors/strict-decoding.json`: one payload per rule of *Strict decoding* in `Specs/events.md`, read by
/// this test, so the decoder and the page are one thing.
@Suite("Strict decoding vectors")
struct StrictDecodingVectorTests {
    @Test("Every vector decodes, or is refused naming its field, as the spec says")
    func vectors() throws {
        let text = try String(contentsOfFile: Repository.root + "/Specs/vectors/strict-decoding.json", encoding: .utf8)
        let vectors = try #require(JSONParser.parse(text)["vectors"]?.arrayValue)
        #expect(vectors.count >= 40)
        for vector in vectors {
            let name = vector["name"]?.stringValue ?? "?"
            let code = UInt16(try #require(vector["code"]?.intValue))
            let hex = Array(try #require(vector["hex"]?.stringValue))
            let bytes = stride(from: 0, to: hex.count, by: 2).map { UInt8(String(hex[$0...$0 + 1]), radix: 16)! }
            let expect = try #require(vector["expect"]?.stringValue)
            do {
                let decoded = try bytes.withUnsafeBytes { try EventCodec.decode(type: code, payload: $0) }
                #expect(expect == "ok", "\(name): decoded although the spec refuses it (\(expect))")
                // What decodes encodes back to the same bytes (redacted records too; one redacted in place as its
                // redaction padded to the record's length).
                let encoded = EventCodec.encode(decoded.event, commandID: decoded.commandID)
                #expect(
                    encoded == bytes || code == 1 && bytes[0] == 1
                        || bytes[0] == EventCodec.redactedInPlaceMarker
                            && EventCodec.redactedInPlace(encoded, length: bytes.count) == bytes,
                    "\(name): re-encodes differently")
            } catch {
                #expect(expect != "ok", "\(name): refused (\(error)) although the spec accepts it")
                #expect("\(error)".lowercased().contains(expect), "\(name): \(error) does not name \(expect)")
            }
        }
    }
}

@Suite("Words in Unicode NFC")
struct NormalFormTests {
    @Test("A custom word and a tag typed precomposed or decomposed are stored alike, in NFC, and counted as one word")
    func canonicallyEquivalent() throws {
        let dir = TemporaryDirectory("nfc")
        let ledger = try Ledger.open(at: dir.sub("l"))
        defer { ledger.close() }
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        let a = try ledger.log(MoodDraft(valence: 0.2, labels: [composed], tags: [decomposed])).entry!
        let b = try ledger.log(MoodDraft(valence: 0.4, labels: [decomposed], tags: [composed])).entry!
        #expect(a.labels.map(\.name) == b.labels.map(\.name))
        #expect(Array(a.labels[0].name.utf8) == Array(composed.utf8))
        #expect(Array(b.tags[0].utf8) == Array(composed.utf8) && Array(a.tags[0].utf8) == Array(composed.utf8))
        let analytics = ledger.read { $0.labelAnalytics() }
        #expect(analytics.unique == 1 && analytics.words.first?.count == 2)
    }
}
