/// The snapshot's revisions: a row's beside it (section 15), and those of the entries that are no row in a list of ids
/// ascending, searched like the outbox index (section 16, `Specs/ledger.md`).
extension SnapshotImage {
    /// How many entries that are no row have a revision.
    var revisionCount: Int { revisions.count / SnapshotLayout.revisionSize }

    /// The revision of a row's entry.
    @inline(__always)
    func revision(ofRow row: Int) -> UInt64 {
        check(.rowRevisions, row * 8, 8)
        return rowRevisions.le(row * 8)
    }

    @inline(__always)
    private func revisionID(at position: Int) -> EntryID {
        check(.revisions, position * SnapshotLayout.revisionSize, 16)
        return revisions.entryID(position * SnapshotLayout.revisionSize)
    }

    @inline(__always)
    private func revision(at position: Int) -> UInt64 {
        check(.revisions, position * SnapshotLayout.revisionSize + 16, 8)
        return revisions.le(position * SnapshotLayout.revisionSize + 16)
    }

    /// The revision of `id`, if the snapshot holds one: beside its row, or in the list of the others.
    func revision(of id: EntryID) -> UInt64? {
        if let row = row(of: id) { return revision(ofRow: row) }
        return Self.position(of: id, count: revisionCount, idAt: revisionID(at:)).map(revision(at:))
    }

    /// Calls `body` with every entry's revision: the rows', then the others' ids ascending (an id out of order, only
    /// in a crafted file, is skipped: the search could not find it).
    func forEachRevision(_ body: (EntryID, UInt64) -> Void) {
        for row in 0..<rowCount { body(id(ofRow: row), revision(ofRow: row)) }
        var previous: EntryID?
        for position in 0..<revisionCount {
            let id = revisionID(at: position)
            if let previous, !(previous < id) { continue }
            previous = id
            body(id, revision(at: position))
        }
    }
}
