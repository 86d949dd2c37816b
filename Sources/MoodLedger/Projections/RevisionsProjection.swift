/// Each entry's revision — the last sequence number of the last batch whose events named it: what a server answers
/// with (`Specs/ledger.md`, *Revisions*; `Specs/server.md`).
///
/// A revision is kept where the entry is: beside an entry the entries' fold holds as a value
/// (``EntriesState/heldRevision(of:)``), in a snapshot's row for a row not changed since, and here for every other id
/// (removed entries, rows named by an event that left them as they were, ids only sync or redacted events named).
/// An id the entries hold answers from there: what is here for it is older. A batch's end is where its last record
/// is, which may be a record the folds skip: the ids the batch being folded named are *open*, and take the batch's
/// last seq when it closes (``close(at:entries:)``); a state cut inside a batch (time travel to a seq in it) gives its
/// open entries the state's seq, as the cut batch ends there.
package struct RevisionsState: Sendable {
    /// An id's revision.
    struct Revision: EntryKeyed {
        var id: EntryID
        var seq: UInt64
    }

    /// The snapshot the revisions of ids not named since are read through.
    private(set) var image: SnapshotImage?
    /// The revisions of ids named since the snapshot (all of them without one) that no held entry carries (those of
    /// held entries past 32 bits included).
    private var others = IdentifiedTable<Revision>()
    /// The ids named by the batch being folded (an id may be here more than once).
    private var open: [EntryID] = []

    init() {}

    /// The revisions a snapshot holds, read through it.
    init(image: SnapshotImage) { self.image = image }

    /// Folds one event: the id it names is open until its batch closes.
    @inline(__always)
    mutating func name(_ id: EntryID) {
        if id.high | id.low != 0 { open.append(id) }
    }

    /// Ends the batch being folded at `seq`, its last record: the ids it named take that revision.
    mutating func close(at seq: UInt64, entries: inout EntriesState) {
        for id in open { set(id, seq: seq, entries: &entries) }
        open.removeAll(keepingCapacity: true)
    }

    /// The fold of `ledger.erased`: every revision is forgotten but those of the entries it keeps (HealthKit's
    /// copies, when it keeps them) — what the erased entries were has nothing left to say — and the state no longer
    /// reads the snapshot's revisions.
    /// - Parameter kept: the kept entries with their revisions, which `entries` holds again.
    mutating func eraseAll(keeping kept: [(id: EntryID, revision: UInt64)], entries: inout EntriesState) {
        self = RevisionsState()
        for (id, revision) in kept { set(id, seq: revision, entries: &entries) }
    }

    /// Gives `id` the revision `seq` (beside its entry when the entries hold it).
    mutating func set(_ id: EntryID, seq: UInt64, entries: inout EntriesState) {
        if !entries.setHeldRevision(of: id, to: seq) { others.set(Revision(id: id, seq: seq)) }
    }

    // MARK: - Questions

    /// The revision of an entry's last change (0: the ledger never named it).
    /// - Parameter seq: the state's seq: the revision of an id named by a batch the state ends inside.
    func revision(of id: EntryID, at seq: UInt64, entries: EntriesState) -> UInt64 {
        if open.contains(id) { return seq }
        if let held = entries.heldRevision(of: id) { return held }
        if let position = others.position(of: id) { return others[position: position].seq }
        return image?.revision(of: id) ?? 0
    }

    /// Every id with its revision, in no particular order (an open one at `seq`).
    func forEach(at seq: UInt64, entries: EntriesState, _ body: (EntryID, UInt64) -> Void) {
        let opened = Set(open)
        func besideEntry(_ id: EntryID) -> Bool { entries.heldRevision(of: id) != nil }
        entries.forEachHeldRevision { id, revision in body(id, opened.contains(id) ? seq : revision) }
        others.values.forEachInPlace { revision in
            let id = revision.pointee.id
            if !besideEntry(id) { body(id, opened.contains(id) ? seq : revision.pointee.seq) }
        }
        for id in opened where !besideEntry(id) && others.position(of: id) == nil { body(id, seq) }
        image?.forEachRevision { id, revision in
            if !opened.contains(id), !besideEntry(id), others.position(of: id) == nil { body(id, revision) }
        }
    }

    /// The ids named by the batch being folded.
    var opened: Set<EntryID> { Set(open) }
}

/// Every id's revision as a state answers (``LedgerState/revisions``): what two states are compared by.
package struct RevisionTable: Equatable, Sendable {
    /// Each id's revision (an open one at the state's seq).
    package var revisions: [EntryID: UInt64] = [:]
    /// The ids named by the batch the state ends inside.
    package var open: Set<EntryID> = []
}
