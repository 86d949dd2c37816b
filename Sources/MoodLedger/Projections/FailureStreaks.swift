import EventLogFormat
import MoodModel
import Platform

/// When each entry's current streak of sync attempts began: the first `sync.attempted` since the entry was last in
/// step (a success, a merge, a pulled version, a re-queue, a release by the user) or erased, dated by its record's time and,
/// when the batch's carrier recorded one, the boot clock (`Specs/sync.md`, *Parking and its release*). Another server
/// (`remote.configured`) or an erasure of every entry (`ledger.erased`) ends every streak. A projection kept whole
/// (`Specs/ledger.md`, *Where a projection goes*): the push reads how long an item's failures have lasted here.
package struct FailureStreaks: Projection {
    package static let schema = "streaks=1"

    package static let eventTypes: [EventType] = [
        .syncAttempted, .syncSucceeded, .syncMerged, .syncRequeued, .syncReleased, .remoteApplied, .entryErased,
        .remoteConfigured, .ledgerErased
    ]

    /// The batch's carrier: it dates the streaks its batch began by the boot clock.
    package static let attachmentTypes: [UInt16] = [Attachment.Kind.carrier.recordType]

    /// The longest boot identity kept (Linux's `boot_id` is 36 characters).
    static let bootLimit = 64

    /// Each entry's streak in progress.
    package private(set) var streaks: [EntryID: Ledger.StreakStart] = [:]
    /// The streaks the batch being folded began: its carrier, its last record, dates them.
    private var begun: [EntryID] = []

    package init() {}

    package mutating func apply(_ recorded: RecordedEvent) {
        switch recorded.event {
        case .syncAttempted(let id, _, _, _):
            guard streaks[id] == nil else { return }
            streaks[id] = Ledger.StreakStart(wallMilliseconds: recorded.recordedAt / 1000)
            begun.append(id)
        case .syncSucceeded(let id, _, _, _), .syncRequeued(let id, _, _), .syncReleased(let id, _),
            .entryErased(let id, _):
            // An erased entry's records are redacted: a replay reads no attempt of it, so no streak is kept.
            streaks[id] = nil
        case .syncMerged(let merge): streaks[merge.entryID] = nil
        case .remoteApplied(let change): streaks[change.entryID] = nil
        case .remoteConfigured, .ledgerErased:
            streaks.removeAll()
            begun.removeAll()
        default: break
        }
    }

    package mutating func attached(type: UInt16, payload: UnsafeRawBufferPointer) {
        guard !begun.isEmpty, let boot = Self.bootClock(inCarrier: payload) else { return }
        for id in begun { streaks[id]?.boot = boot }
    }

    package mutating func endBatch(at seq: UInt64) { begun.removeAll(keepingCapacity: true) }

    /// The boot clock a carrier recorded (`{"boot", "boot_ms"}`), if it did.
    static func bootClock(inCarrier payload: UnsafeRawBufferPointer) -> BootClock? {
        guard let json = try? JSONParser.parse(String(decoding: payload, as: UTF8.self)),
            let boot = json["boot"]?.stringValue, !boot.isEmpty, boot.utf8.count <= bootLimit,
            let milliseconds = json["boot_ms"]?.intValue, milliseconds >= 0
        else { return nil }
        return BootClock(boot: boot, milliseconds: Int64(milliseconds))
    }

    /// `varint k · k × (id · signed wall ms · u8 0 | 1 · [boot string · varint boot ms])`, by entry id.
    package func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: 16)
        w.varint(UInt64(streaks.count))
        for (id, start) in streaks.sorted(by: { $0.key < $1.key }) {
            w.id(id)
            w.signed(start.wallMilliseconds)
            if let boot = start.boot {
                w.u8(1)
                w.string(boot.boot)
                w.varint(UInt64(boot.milliseconds))
            } else {
                w.u8(0)
            }
        }
        return w.bytes
    }

    /// Decodes ``encoded()``'s bytes, every value checked: ids ascending and not zero, the flag 0 or 1, a boot of
    /// 1–64 bytes, nothing left over.
    package init(decoding bytes: UnsafeRawBufferPointer, seq: UInt64) throws(ByteReader.Malformed) {
        var r = ByteReader(bytes)
        var previous: EntryID?
        for _ in 0..<(try r.count()) {
            let id = try r.ascendingID(after: &previous, in: "streaks")
            var start = Ledger.StreakStart(wallMilliseconds: try r.signed())
            switch try r.u8() {
            case 0: break
            case 1:
                let boot = try r.string("boot")
                let milliseconds = try r.varint()
                guard !boot.isEmpty, boot.utf8.count <= Self.bootLimit, milliseconds <= UInt64(Int64.max) else {
                    throw ByteReader.Malformed(what: "a boot clock out of range")
                }
                start.boot = BootClock(boot: boot, milliseconds: Int64(milliseconds))
            default: throw ByteReader.Malformed(what: "a boot flag out of range")
            }
            streaks[id] = start
        }
        guard r.isAtEnd else { throw ByteReader.Malformed(what: "trailing bytes") }
    }

    /// Equal when the streaks are (the batch in progress is no part of what it answers).
    package static func == (a: FailureStreaks, b: FailureStreaks) -> Bool { a.streaks == b.streaks }
}
