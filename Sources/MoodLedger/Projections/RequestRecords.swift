/// What a server stores beside its changes (`Specs/server.md`): the last replacement note of each entry
/// (`edit.replaced`; it holds while the entry's revision is the note's batch, ``LedgerState/replacementNote(of:)``)
/// and the recent requests' idempotency keys (`request.keyed`), each dated by its batch's last seq.
/// `Specs/ledger.md`, *Revisions*.
package struct RequestRecords: Projection {
    package static let schema = "requests=2"
    package static let eventTypes: [EventType] = [.editReplaced, .requestKeyed, .entryErased, .ledgerErased]
    /// How long a request key answers for its request: 24 hours from its recording.
    package static let keyWindowMilliseconds: Int64 = 24 * 3600 * 1000
    /// Most request keys kept; past it the oldest go first. Above what a server's default write budget lets a user
    /// make in a day (a burst of 10,000 and 100 an hour), so at the defaults every key lives its 24 hours.
    package static let keysKept = 20_000

    /// What a change said it replaced: another device's revision of the entry and the fields in conflict.
    package struct Note: Sendable, Equatable {
        /// The revision of the change that carried the note (its batch's last seq).
        package var seq: UInt64
        /// The revision whose values it replaced.
        package var revision: UInt64
        package var fields: MergeFields
    }

    /// A request key as kept: the key, when it was recorded and the revision its first answer was made at.
    package struct Kept: Sendable, Equatable {
        package var request: RequestKey
        /// When it was recorded (ms since 1970).
        package var at: Int64
        /// Its batch's last seq: the revision the first answer was made at.
        package var seq: UInt64
    }

    /// The last replacement note of each entry that had one (current while the entry's revision is its seq).
    package private(set) var notes: [EntryID: Note] = [:]
    /// The kept keys by scoped key, and their order of recording (oldest first from `keysHead`).
    private var keys: [String: Kept] = [:]
    private var keyOrder: [String] = []
    private var keysHead = 0
    /// The batch being folded: its notes and keys.
    private var openNotes: [(id: EntryID, revision: UInt64, fields: MergeFields)] = []
    private var openKeys: [(key: RequestKey, at: Int64)] = []

    package init() {}

    package mutating func apply(_ recorded: RecordedEvent) {
        switch recorded.event {
        case .editReplaced(let id, let revision, let fields): openNotes.append((id, revision, fields))
        case .requestKeyed(let key): openKeys.append((key, recorded.recordedAt / 1000))
        case .entryErased(let id, _):
            // An erased entry's notes go with it: the erasure redacts the `edit.replaced` records that named it, so a
            // replay of the rewritten log never folds them (its request keys name no entry, and stay).
            notes[id] = nil
            openNotes.removeAll { $0.id == id }
        case .ledgerErased:
            // An erasure of every entry forgets every note and key with the revisions (`ledger.md`, *Revisions*).
            self = RequestRecords()
            return
        default: break
        }
    }

    package mutating func endBatch(at seq: UInt64) {
        for note in openNotes { notes[note.id] = Note(seq: seq, revision: note.revision, fields: note.fields) }
        for (key, at) in openKeys { keep(Kept(request: key, at: at, seq: seq)) }
        openNotes.removeAll(keepingCapacity: true)
        openKeys.removeAll(keepingCapacity: true)
    }

    /// Keeps a key, forgetting those recorded more than ``keyWindowMilliseconds`` before it and the oldest past
    /// ``keysKept``: what is kept is a function of the log, bounded whatever its length.
    private mutating func keep(_ kept: Kept) {
        if keys.updateValue(kept, forKey: kept.request.key) == nil { keyOrder.append(kept.request.key) }
        let oldest = kept.at - Self.keyWindowMilliseconds
        while keysHead < keyOrder.count {
            let key = keyOrder[keysHead]
            guard let known = keys[key] else {
                keysHead += 1
                continue
            }
            guard known.at < oldest || keys.count > Self.keysKept else { break }
            keys.removeValue(forKey: key)
            keysHead += 1
        }
        if keysHead > 1024, keysHead * 2 > keyOrder.count {
            keyOrder.removeFirst(keysHead)
            keysHead = 0
        }
    }

    // MARK: - Questions

    /// The last replacement note of an entry (current only while the entry's revision is its seq).
    /// - Parameter seq: the state's seq: the revision of a note carried by a batch the state ends inside.
    package func note(of id: EntryID, at seq: UInt64) -> Note? {
        if let open = openNotes.last(where: { $0.id == id }) {
            return Note(seq: seq, revision: open.revision, fields: open.fields)
        }
        return notes[id]
    }

    /// A key recorded within ``keyWindowMilliseconds`` of `now`, if kept.
    package func key(_ key: String, now: Int64) -> Kept? {
        if let found = keys[key], found.at >= now - Self.keyWindowMilliseconds { return found }
        return nil
    }

    /// The keys kept, oldest first.
    package var keptKeys: [Kept] { keyOrder[keysHead...].compactMap { keys[$0] } }

    /// How many keys are recorded within ``keyWindowMilliseconds`` of `now`.
    package func keyCount(now: Int64) -> Int { keys.values.count { $0.at >= now - Self.keyWindowMilliseconds } }

    package static func == (a: RequestRecords, b: RequestRecords) -> Bool {
        a.notes == b.notes && a.keptKeys == b.keptKeys && a.openNotes.map(\.id) == b.openNotes.map(\.id)
            && a.openKeys.map(\.key) == b.openKeys.map(\.key)
    }

    // MARK: - Snapshot

    /// `varint n · n × (id · varint seq · varint revision · u8 fields)`, ids ascending (each entry's last note), then `varint k · k × (key
    /// string · fingerprint string · varint status · id (zeros: none) · varint seq · signed at ms)`, oldest first.
    package func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: 64)
        let notes = notes.sorted { $0.key < $1.key }
        w.varint(UInt64(notes.count))
        for (id, note) in notes {
            w.id(id)
            w.varint(note.seq)
            w.varint(note.revision)
            w.u8(note.fields.rawValue)
        }
        let keys = keptKeys
        w.varint(UInt64(keys.count))
        for kept in keys {
            EventCodec.writeRequestKey(kept.request, to: &w)
            w.varint(kept.seq)
            w.signed(kept.at)
        }
        return w.bytes
    }

    /// Decodes ``encoded()``'s bytes, every value checked: seqs within the covered `seq`, the rules of
    /// `edit.replaced` and `request.keyed` (`Specs/events.md`), no id or key twice, nothing left over.
    package init(decoding bytes: UnsafeRawBufferPointer, seq: UInt64) throws(ByteReader.Malformed) {
        var r = ByteReader(bytes)
        var previous: EntryID?
        for _ in 0..<(try r.count()) {
            let id = try r.ascendingID(after: &previous, in: "notes")
            let at = try r.varint()
            let revision = try EventCodec.readRevision(from: &r)
            let fields = MergeFields(rawValue: try r.u8())
            guard at >= 1, at <= seq, revision >= 1, !fields.isEmpty else {
                throw ByteReader.Malformed(what: "notes: a seq, revision or field set out of range")
            }
            notes[id] = Note(seq: at, revision: revision, fields: fields)
        }
        for _ in 0..<(try r.count()) {
            let request = try EventCodec.readRequestKey(from: &r)
            let at = try r.varint()
            let time = try r.signed()
            guard at >= 1, at <= seq, keys[request.key] == nil, keyOrder.count < Self.keysKept else {
                throw ByteReader.Malformed(what: "keys: a seq out of range, a key repeated or past the bound")
            }
            keys[request.key] = Kept(request: request, at: time, seq: at)
            keyOrder.append(request.key)
        }
        guard r.isAtEnd else { throw ByteReader.Malformed(what: "trailing bytes") }
    }
}
