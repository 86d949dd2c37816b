/// Each entry's revision — the last sequence number of the last batch whose events named it: what a server answers
/// with (`Specs/ledger.md`, *Revisions*; `Specs/server.md`).
///
/// A batch's end is where its last record is, which may be a record the folds skip: the fold keeps the entries named
/// by the batch being folded *open*, and the ledger closes them at the batch's end (``close(at:)``); a state cut
/// inside a batch (time travel to a seq in it) gives its open entries the state's seq, as the cut batch ends there.
package struct RevisionsState: Sendable {
    /// An entry's revision.
    struct Revision: EntryKeyed {
        var id: EntryID
        var seq: UInt64
    }

    /// The snapshot the revisions of entries not named since are read through.
    private(set) var image: SnapshotImage?
    /// The revisions of entries named since the snapshot (all of them without one). An entry named by the batch being
    /// folded is here already, at the seq of the event that named it, and takes the batch's last seq when it closes:
    /// the table is looked up once per event, where a replay prefetches it, not again at the batch's end. Revisions
    /// are never removed, so positions stay.
    private var own = IdentifiedTable<Revision>()
    /// Positions in ``own`` of the entries named by the batch being folded: given its last seq at ``close(at:)``.
    private var open: [Int] = []

    init() {}

    /// The revisions a snapshot holds, read through it.
    init(image: SnapshotImage) { self.image = image }

    /// Folds one event: an entry it names is open until its batch closes.
    @inline(__always)
    mutating func apply(entryID id: EntryID) {
        if id.high | id.low != 0 { open.append(own.set(Revision(id: id, seq: 0))) }
    }

    /// Ends the batch being folded at `seq`, its last record: its entries take that revision.
    mutating func close(at seq: UInt64) {
        for position in open { own[position: position].seq = seq }
        open.removeAll(keepingCapacity: true)
    }

    /// The fold of `ledger.erased`: every revision is forgotten but those of the entries it keeps (HealthKit's
    /// copies, when it keeps them) — what the erased entries were has nothing left to say — and the state no longer
    /// reads the snapshot's revisions.
    mutating func eraseAll(keeping kept: [EntryID], at seq: UInt64) {
        let revisions = kept.map { Revision(id: $0, seq: revision(of: $0, at: seq)) }
        self = RevisionsState()
        for revision in revisions { own.set(revision) }
    }

    /// Gives `id` the revision `seq`, its batch closed (an import's held entry joining the state).
    mutating func set(_ id: EntryID, seq: UInt64) { own.set(Revision(id: id, seq: seq)) }

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

}

extension RevisionsState: Equatable {
    /// Equal when they answer alike: the same revisions (open entries compared as open).
    package static func == (a: RevisionsState, b: RevisionsState) -> Bool {
        func all(_ state: RevisionsState) -> [EntryID: UInt64] {
            var result: [EntryID: UInt64] = [:]
            state.forEach(at: .max) { result[$0] = $1 }
            return result
        }
        func opened(_ state: RevisionsState) -> Set<EntryID> { Set(state.open.map { state.own[position: $0].id }) }
        return opened(a) == opened(b) && all(a) == all(b)
    }
}
