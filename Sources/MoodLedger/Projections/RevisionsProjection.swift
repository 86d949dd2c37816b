/// Each entry's revision — the last sequence number of the last batch whose events named it — with what a server
/// stores beside its changes: the replacement note of an entry's current revision (`edit.replaced`) and the recent
/// requests' idempotency keys (`request.keyed`). `Specs/ledger.md`, *Revisions*; `Specs/server.md` reads it.
///
/// A batch's end is where its last record is, which may be a record the folds skip: the fold keeps the entries named
/// by the batch being folded *open*, and the ledger closes them at the batch's end (``close(at:)``); a state cut
/// inside a batch (time travel to a seq in it) gives its open entries the state's seq, as the cut batch ends there.
package struct RevisionsState: Sendable {
    /// How long a request key answers for its request: 24 hours from its recording.
    package static let keyWindowMilliseconds: Int64 = 24 * 3600 * 1000
    /// Most request keys kept; past it the oldest go first. Above what a server's default write budget lets a user
    /// make in a day (a burst of 10,000 and 100 an hour), so at the defaults every key lives its 24 hours.
    package static let keysKept = 20_000

    /// An entry's revision.
    struct Revision: EntryKeyed {
        var id: EntryID
        var seq: UInt64
    }

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

    /// The snapshot the revisions of entries not named since are read through.
    private(set) var image: SnapshotImage?
    /// The revisions of entries named since the snapshot (all of them without one). An entry named by the batch being
    /// folded is here already, at the seq of the event that named it, and takes the batch's last seq when it closes:
    /// the table is looked up once per event, where a replay prefetches it, not again at the batch's end. Revisions
    /// are never removed, so positions stay.
    private var own = IdentifiedTable<Revision>()
    /// Positions in ``own`` of the entries named by the batch being folded, and the notes and keys it carries: given
    /// its last seq at ``close(at:)``.
    private var open: [Int] = []
    private var openNotes: [(id: EntryID, revision: UInt64, fields: MergeFields)] = []
    private var openKeys: [(key: RequestKey, at: Int64)] = []
    /// Replacement notes of entries whose current revision carries one.
    package private(set) var notes: [EntryID: Note] = [:]
    /// The kept keys by scoped key, and their order of recording (oldest first from `keysHead`).
    private var keys: [String: Kept] = [:]
    private var keyOrder: [String] = []
    private var keysHead = 0

    init() {}

    /// The revisions a snapshot holds, read through it; its notes and keys, decoded on open.
    init(image: SnapshotImage) {
        self.image = image
        notes = image.replacementNotes
        for kept in image.requestKeys {
            keys[kept.request.key] = kept
            keyOrder.append(kept.request.key)
        }
    }

    /// Folds one event: an entry it names is open until its batch closes.
    @inline(__always)
    mutating func apply(_ event: MoodEvent, entryID id: EntryID, recordedAt: Int64) {
        if id.high | id.low != 0 { open.append(own.set(Revision(id: id, seq: 0))) }
        switch event {
        case .editReplaced(let id, let revision, let fields): openNotes.append((id, revision, fields))
        case .requestKeyed(let key): openKeys.append((key, recordedAt / 1000))
        default: break
        }
    }

    /// Ends the batch being folded at `seq`, its last record: its entries, notes and keys take that revision.
    mutating func close(at seq: UInt64) {
        guard !open.isEmpty || !openKeys.isEmpty else { return }
        for position in open {
            own[position: position].seq = seq
            // A change without a note makes the entry plain again.
            if !notes.isEmpty { notes.removeValue(forKey: own[position: position].id) }
        }
        for note in openNotes { notes[note.id] = Note(seq: seq, revision: note.revision, fields: note.fields) }
        for (key, at) in openKeys { keep(Kept(request: key, at: at, seq: seq)) }
        open.removeAll(keepingCapacity: true)
        openNotes.removeAll(keepingCapacity: true)
        openKeys.removeAll(keepingCapacity: true)
    }

    /// The fold of `ledger.erased`: every revision is forgotten but those of the entries it keeps (HealthKit's
    /// copies, when it keeps them), and the notes and keys with them — what the erased entries were has nothing
    /// left to say, and the state no longer reads the snapshot's revisions.
    mutating func eraseAll(keeping kept: [EntryID], at seq: UInt64) {
        let revisions = kept.map { Revision(id: $0, seq: revision(of: $0, at: seq)) }
        let openKeys = openKeys
        self = RevisionsState()
        for revision in revisions { own.set(revision) }
        self.openKeys = openKeys  // a key of the erasure's own batch (none is written today) still closes with it
    }

    /// Gives `id` the revision `seq`, its batch closed (an import's held entry joining the state).
    mutating func set(_ id: EntryID, seq: UInt64) { own.set(Revision(id: id, seq: seq)) }

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

    /// The revision of an entry's last change (0: the ledger never named it).
    /// - Parameter seq: the state's seq: the revision of an entry named by a batch the state ends inside.
    func revision(of id: EntryID, at seq: UInt64) -> UInt64 {
        if let position = own.position(of: id) { return open.contains(position) ? seq : own[position: position].seq }
        return image?.revision(of: id) ?? 0
    }

    /// Every entry with its revision, in no particular order (an open entry at `seq`).
    func forEach(at seq: UInt64, _ body: (EntryID, UInt64) -> Void) {
        let opened = Set(open)
        for (position, revision) in own.values.enumerated() {
            body(revision.id, opened.contains(position) ? seq : revision.seq)
        }
        image?.forEachRevision { id, revision in
            if own.position(of: id) == nil { body(id, revision) }
        }
    }

    /// Starts loading what folding an event of `id` looks up (its slot, then its value), a few events ahead.
    @inline(__always)
    func prefetch(_ id: EntryID) { own.prefetch(id) }

    @inline(__always)
    func prefetchValue(_ id: EntryID) { own.prefetchValue(id) }

    /// The replacement note of an entry's current revision, if its last change carried one.
    func note(of id: EntryID, at seq: UInt64) -> Note? {
        if let open = openNotes.last(where: { $0.id == id }) {
            return Note(seq: seq, revision: open.revision, fields: open.fields)
        }
        if let position = own.position(of: id), open.contains(position) { return nil }
        return notes[id]
    }

    /// A key recorded within ``keyWindowMilliseconds`` of `now`, if kept.
    package func key(_ key: String, now: Int64) -> Kept? {
        if let found = keys[key], found.at >= now - Self.keyWindowMilliseconds { return found }
        return nil
    }

    /// The keys kept, oldest first (for a snapshot).
    package var keptKeys: [Kept] { keyOrder[keysHead...].compactMap { keys[$0] } }

    /// How many keys are recorded within ``keyWindowMilliseconds`` of `now`.
    package func keyCount(now: Int64) -> Int { keys.values.count { $0.at >= now - Self.keyWindowMilliseconds } }
}

extension RevisionsState: Equatable {
    /// Equal when they answer alike: the same revisions (open entries compared as open), notes and keys.
    package static func == (a: RevisionsState, b: RevisionsState) -> Bool {
        func all(_ state: RevisionsState) -> [EntryID: UInt64] {
            var result: [EntryID: UInt64] = [:]
            state.forEach(at: .max) { result[$0] = $1 }
            return result
        }
        func opened(_ state: RevisionsState) -> Set<EntryID> { Set(state.open.map { state.own[position: $0].id }) }
        return a.notes == b.notes && a.keptKeys == b.keptKeys && a.openNotes.map(\.id) == b.openNotes.map(\.id)
            && a.openKeys.map(\.key) == b.openKeys.map(\.key) && opened(a) == opened(b) && all(a) == all(b)
    }
}
