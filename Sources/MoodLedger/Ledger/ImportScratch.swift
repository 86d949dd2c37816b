import EventLog

/// What an import decides against and folds into (`Specs/imports-exports.md`, *Memory*): the ledger's state with
/// every event of the import applied — except that an entry the import creates is held here compactly (its id,
/// instant, zone offset, kind, source-key hash and where its record is in the log: 48 bytes) until a later row of
/// the import touches it, and read back from the log when it is asked for. The analytics, the outbox and the
/// numbering fold every event as it comes, so only the entries differ from the plain fold, and the two together
/// answer every question the plain fold's entries would (the tests hold them equal).
///
/// At the end the held entries either join the state (read back in the order they were created) or go straight
/// into a snapshot, read back day by day with their bodies copied as recorded (``days(from:)``), so that a large
/// import never holds its entries as values.
///
/// A class, not a value: the import's decisions read it once per row, and a copy of a value this size would cost
/// a retain of each of its tables.
final class ImportScratch {
    /// An entry the import created and nothing touched since.
    struct Held {
        var id: EntryID
        /// Its `logged_at` instant (ms).
        var milliseconds: Int64
        /// Where its record is in the log.
        var offset: Int64
        /// ``SnapshotImage/sourceHash(_:_:)`` of its source key (0 without a source id).
        var sourceHash: UInt64
        /// Its record's seq, less the first seq of the import.
        var seqDelta: UInt32
        /// Its `logged_at` zone offset (minutes).
        var utcOffsetMinutes: Int16
        /// 1: a daily mood · 2: has a source id · 4: moved into the state.
        var flags: UInt8

        var day: LocalDate {
            LoggedAt(milliseconds: milliseconds, utcOffsetMinutes: Int(utcOffsetMinutes)).localDate
        }
    }

    /// Reads the `entry.created` record at a place back into its entry.
    typealias Fetch = (StreamedRecord) throws -> MoodEntry

    /// The state with every event applied but the held creations (their analytics and outbox records included).
    private(set) var state: LedgerState
    /// Reads a held entry back while the import writes its records.
    var fetch: Fetch?
    /// The held entries, in the order created (moved ones stay, flagged).
    private var held = ChunkedArray<Held>()
    /// Position + 1 of each held entry, at its id's hash (linear probing; 0 empty).
    private var idSlots = [UInt32](repeating: 0, count: 16)
    /// Position + 1 of each held entry with a source id, at its source key's hash.
    private var sourceSlots = [UInt32](repeating: 0, count: 16)
    /// The held daily moods of each day, by position.
    private var moods: [Int32: [UInt32]] = [:]
    /// Held entries not moved.
    private(set) var heldCount = 0
    /// The seq of the import's first record.
    private let firstSeq: UInt64
    /// Whether creations are held (a dry run writes no records to read back: it folds everything).
    private let holds: Bool

    /// - Parameters:
    ///   - state: the ledger's state before the import.
    ///   - holds: whether creations are held (their records are written as they come).
    init(_ state: LedgerState, holds: Bool) {
        self.state = state
        self.holds = holds
        firstSeq = state.seq + 1
    }

    var readsDamagedSnapshot: Bool { state.readsDamagedSnapshot }

    /// The last seq applied (read here: reading ``state`` from outside copies it).
    var seq: UInt64 { state.seq }

    /// The source key a row was last looked up by, and its hash: the creation that usually follows holds it.
    private var lastKey: (source: MoodSource, sourceID: String, hash: UInt64)?

    /// ``SnapshotImage/sourceHash(_:_:)``, once per row.
    private func sourceHash(_ source: MoodSource, _ sourceID: String) -> UInt64 {
        if let lastKey, lastKey.source == source, lastKey.sourceID == sourceID { return lastKey.hash }
        let hash = SnapshotImage.sourceHash(source, sourceID)
        lastKey = (source, sourceID, hash)
        return hash
    }

    // MARK: - Lookups

    /// The entry holding a source key: the state's or a held one (the one created first, then the smaller id, should
    /// both hold it — as ``EntriesState`` decides).
    func entry(source: MoodSource, sourceID: String) throws -> MoodEntry? {
        var best = state.entries.entry(source: source, sourceID: sourceID)
        guard heldCount > 0 else { return best }
        let hash = sourceHash(source, sourceID)
        var slot = Int(truncatingIfNeeded: hash) & (sourceSlots.count - 1)
        while sourceSlots[slot] != 0 {
            let position = Int(sourceSlots[slot] - 1)
            let candidate = held[position]
            if candidate.sourceHash == hash, candidate.flags & 4 == 0 {
                let entry = try read(position)
                if entry.source == source, entry.sourceID == sourceID {
                    if best.map({ EntriesState.createdFirst(entry, $0) }) ?? true { best = entry }
                    break
                }
            }
            slot = (slot + 1) & (sourceSlots.count - 1)
        }
        return best
    }

    /// The revision of an entry: a held one was named by its creation alone, so its revision is the import's batch's
    /// last seq (the state's, once the batch ended); others, the state's.
    func revision(of id: EntryID) -> UInt64 { position(of: id) != nil ? state.seq : state.revision(of: id) }

    /// Whether an entry with this id is current.
    func contains(_ id: EntryID) -> Bool { state.entries.contains(id) || position(of: id) != nil }

    /// The day's daily mood: the earliest logged (then the smallest id) of the state's and the held ones.
    func dailyMood(on day: LocalDate) throws -> MoodEntry? {
        var best = state.entries.dailyMood(on: day)
        for position in moods[day.daysSinceEpoch] ?? [] where held[Int(position)].flags & 4 == 0 {
            let entry = try read(Int(position))
            if best.map({ MoodEntry.loggedEarlier(entry, $0) }) ?? true { best = entry }
        }
        return best
    }

    // MARK: - The fold

    /// Applies one event of the import, written at `record` (nil: not written, a dry run).
    func apply(_ recorded: RecordedEvent, at record: StreamedRecord?) throws {
        let id = recorded.event.entryID
        if case .created(var entry) = recorded.event, holds, let record, !state.entries.contains(id),
            hold(entry, at: record)
        {
            entry.createdAt = recorded.recordedAtMilliseconds
            entry.updatedAt = recorded.recordedAtMilliseconds
            state.applyCreation(recorded, of: entry)
            return
        }
        if let position = position(of: id) {
            // A later row touches a held entry: from now on the state holds it, and folds what comes as usual.
            let entry = try read(position)
            held[position].flags |= 4
            heldCount -= 1
            state.entries.insert(entry)
        }
        state.apply(recorded, analytics: true)  // the batch ends with the import (``endBatch()``)
    }

    /// Ends the import's batch: its last record was the last event applied.
    func endBatch() { state.endBatch() }

    /// Holds a created entry unless one with its id is held already (then the fold ignores the creation).
    /// - Returns: whether it is held now.
    private func hold(_ entry: MoodEntry, at record: StreamedRecord) -> Bool {
        if (held.count + 1) * 10 > idSlots.count * 7 { grow() }
        // One probe finds a held entry with this id or the slot for it.
        let mask = idSlots.count - 1
        var slot = Int(truncatingIfNeeded: UInt64(bitPattern: Int64(entry.id.slotHash))) & mask
        while idSlots[slot] != 0 {
            if held[Int(idSlots[slot] - 1)].id == entry.id { return false }
            slot = (slot + 1) & mask
        }
        let position = UInt32(held.count)
        idSlots[slot] = position + 1
        let sourceHash = entry.sourceID.map { self.sourceHash(entry.source, $0) }
        held.append(
            Held(
                id: entry.id, milliseconds: entry.loggedAt.milliseconds, offset: record.offset,
                sourceHash: sourceHash ?? 0, seqDelta: UInt32(record.seq - firstSeq),
                utcOffsetMinutes: Int16(entry.loggedAt.utcOffsetMinutes),
                flags: (entry.kind == .dailyMood ? 1 : 0) | (sourceHash == nil ? 0 : 2)))
        if let sourceHash { Self.insert(position, at: sourceHash, into: &sourceSlots) }
        if entry.kind == .dailyMood { moods[entry.localDate.daysSinceEpoch, default: []].append(position) }
        heldCount += 1
        return true
    }

    /// Doubles both slot tables and places every held entry again.
    private func grow() {
        idSlots = [UInt32](repeating: 0, count: idSlots.count * 2)
        sourceSlots = [UInt32](repeating: 0, count: sourceSlots.count * 2)
        for position in 0..<held.count {
            let entry = held[position]
            Self.insert(UInt32(position), at: UInt64(bitPattern: Int64(entry.id.slotHash)), into: &idSlots)
            if entry.flags & 2 != 0 { Self.insert(UInt32(position), at: entry.sourceHash, into: &sourceSlots) }
        }
    }

    /// Places a position at a hash's home slot, or the next free one.
    private static func insert(_ position: UInt32, at hash: UInt64, into slots: inout [UInt32]) {
        var slot = Int(truncatingIfNeeded: hash) & (slots.count - 1)
        while slots[slot] != 0 { slot = (slot + 1) & (slots.count - 1) }
        slots[slot] = position + 1
    }

    /// The position of the held entry with this id, if it is held and not moved.
    private func position(of id: EntryID) -> Int? {
        guard heldCount > 0, !idSlots.isEmpty else { return nil }
        var slot = Int(truncatingIfNeeded: UInt64(bitPattern: Int64(id.slotHash))) & (idSlots.count - 1)
        while idSlots[slot] != 0 {
            let position = Int(idSlots[slot] - 1)
            if held[position].id == id { return held[position].flags & 4 == 0 ? position : nil }
            slot = (slot + 1) & (idSlots.count - 1)
        }
        return nil
    }

    /// Reads a held entry back from the log.
    private func read(_ position: Int, with fetch: Fetch? = nil) throws -> MoodEntry {
        guard let fetch = fetch ?? self.fetch else {
            preconditionFailure("a held entry is read only while the import's records can be")
        }
        let entry = try fetch(record(of: held[position]))
        guard entry.id == held[position].id else {
            throw EventLogError(.corrupted, "the import's record holds another entry", offset: held[position].offset)
        }
        return entry
    }

    private func record(of entry: Held) -> StreamedRecord {
        StreamedRecord(seq: firstSeq + UInt64(entry.seqDelta), offset: entry.offset)
    }

    // MARK: - The end

    /// How many entries the state and the held ones are together.
    var entryCount: Int { state.entries.count + heldCount }

    /// Lets the lookup tables go (the end reads the held entries in order, never by id or key); with `keepingIDs`,
    /// the ids' table stays for ``contains(_:)`` (a snapshot asks which ids are entries), until ``dropIDs()``.
    func dropLookups(keepingIDs: Bool = false) {
        if !keepingIDs { idSlots = [] }
        sourceSlots = []
        moods = [:]
    }

    /// Lets the ids' table go too.
    func dropIDs() {
        idSlots = []
    }

    /// The state with the held entries in it, read back in the order they were created.
    /// - Parameter fetcher: reads the import's records.
    func materialized(from fetcher: RecordFetcher) throws -> LedgerState {
        let fetch = Self.fetch(from: fetcher)
        var result = state
        for position in 0..<held.count where held[position].flags & 4 == 0 {
            let entry = try read(position, with: fetch)
            result.entries.insert(entry)
            result.noteRevision(of: entry.id, seq: state.seq)
        }
        return result
    }

    /// Every day with entries, ascending, with where its entries are: the state's days as they are; days only held
    /// entries have, their bodies copied from their records as recorded; days with both, the held entries read back
    /// and merged into the state's — what a snapshot of the whole state is written from without holding its entries.
    /// - Parameter fetcher: reads the import's records.
    func days(from fetcher: RecordFetcher) -> SnapshotWriter.Days {
        { [self] body in
            var order: [(day: Int32, position: UInt32)] = []
            order.reserveCapacity(heldCount)
            for position in 0..<held.count where held[position].flags & 4 == 0 {
                order.append((held[position].day.daysSinceEpoch, UInt32(position)))
            }
            order.sort { a, b in
                guard a.day == b.day else { return a.day < b.day }
                let x = held[Int(a.position)]
                let y = held[Int(b.position)]
                return (x.milliseconds, x.id) < (y.milliseconds, y.id)
            }
            let fetch = Self.fetch(from: fetcher)
            var next = 0
            /// The held entries of `day`, as recorded.
            func encoded(_ day: Int32) throws -> EncodedDay {
                var result = EncodedDay()
                while next < order.count, order[next].day == day {
                    let entry = held[Int(order[next].position)]
                    try fetcher.payload(of: record(of: entry)) { view in
                        let body = try Self.body(of: view, id: entry.id)
                        let recordedAt = view.recordedAt.floorDivided(by: 1000)
                        result.rows.append(
                            EncodedDay.Row(
                                id: entry.id, loggedAt: entry.milliseconds, createdAt: recordedAt,
                                updatedAt: recordedAt, bodyStart: result.bodies.count, bodyCount: body.count,
                                sourceHash: entry.flags & 2 != 0 ? entry.sourceHash : nil,
                                isDailyMood: entry.flags & 1 != 0))
                        result.bodies.append(contentsOf: body)
                    }
                    next += 1
                }
                return result
            }
            /// `own` (the state's entries of the day) and the held ones read back, in the day's order.
            func merged(_ day: Int32, _ own: [MoodEntry]) throws -> EntriesState.DaySource {
                var entries = own
                while next < order.count, order[next].day == day {
                    entries.append(try read(Int(order[next].position), with: fetch))
                    next += 1
                }
                entries.sort(by: MoodEntry.loggedEarlier)
                let mood = entries.lazy.filter { $0.kind == .dailyMood }.min(by: MoodEntry.loggedEarlier)
                return .entries(entries, dailyMood: mood?.id)
            }
            /// The days only held entries have, before `day` (nil: all that are left).
            func heldDays(before day: Int32?) throws {
                while next < order.count, day.map({ order[next].day < $0 }) ?? true {
                    let heldDay = order[next].day
                    try body(LocalDate(daysSinceEpoch: heldDay), .encoded(try encoded(heldDay)))
                }
            }
            try state.entries.forEachDaySource { date, source in
                try heldDays(before: date.daysSinceEpoch)
                guard next < order.count, order[next].day == date.daysSinceEpoch else { return try body(date, source) }
                switch source {
                case .image(let image, let day):
                    try body(date, try merged(date.daysSinceEpoch, day.rows.compactMap(image.entry(atRow:))))
                case .entries(let list, _):
                    try body(date, try merged(date.daysSinceEpoch, list))
                case .encoded:
                    preconditionFailure("a state's own days are never encoded")
                }
            }
            try heldDays(before: nil)
        }
    }

    /// The entry body of an `entry.created` record this import wrote (current version, the entry's id): the
    /// snapshot arena's encoding.
    private static func body(of view: RecordView, id: EntryID) throws -> UnsafeRawBufferPointer {
        let payload = view.payload
        do throws(ByteReader.Malformed) {
            var reader = ByteReader(payload)
            guard view.type == EventType.created.rawValue, try reader.u8() == EventType.created.currentVersion
            else { throw ByteReader.Malformed(what: "not a current entry.created record") }
            _ = try reader.id()
            guard try reader.id() == id else { throw ByteReader.Malformed(what: "another entry's record") }
            return UnsafeRawBufferPointer(rebasing: payload[reader.position...])
        } catch {
            throw EventLogError(.corrupted, "the import's record: \(error.what)", offset: view.offset, seq: view.seq)
        }
    }

    /// Reads entries back through a fetcher.
    private static func fetch(from fetcher: RecordFetcher) -> Fetch {
        { record in
            try fetcher.payload(of: record) { try entry(createdBy: $0.payload, recordedAt: $0.recordedAt) }
        }
    }

    /// An entry from the payload of its `entry.created` record, as the fold makes it (created and updated when the
    /// record was recorded).
    static func entry(createdBy payload: UnsafeRawBufferPointer, recordedAt: Int64) throws -> MoodEntry {
        guard case .created(var entry) = try EventCodec.decode(type: EventType.created.rawValue, payload: payload).event
        else { throw MoodError(code: .corruptEvent, field: "type", rule: "not the entry.created record expected") }
        let milliseconds = recordedAt.floorDivided(by: 1000)
        entry.createdAt = milliseconds
        entry.updatedAt = milliseconds
        return entry
    }
}
