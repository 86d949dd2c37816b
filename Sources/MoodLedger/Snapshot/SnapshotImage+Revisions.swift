/// The snapshot's revisions: each entry's revision, ids ascending, searched like the outbox index
/// (`Specs/ledger.md`, section 15).
extension SnapshotImage {
    /// How many entries have a revision.
    var revisionCount: Int { revisions.count / SnapshotLayout.revisionSize }

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

    /// The revision of `id`, if the snapshot holds one.
    func revision(of id: EntryID) -> UInt64? {
        Self.position(of: id, count: revisionCount, idAt: revisionID(at:)).map(revision(at:))
    }

    /// Calls `body` with every entry's revision, ids ascending (an id out of order, only in a crafted file, is
    /// skipped: the search could not find it).
    func forEachRevision(_ body: (EntryID, UInt64) -> Void) {
        var previous: EntryID?
        for position in 0..<revisionCount {
            let id = revisionID(at: position)
            if let previous, !(previous < id) { continue }
            previous = id
            body(id, revision(at: position))
        }
    }
}
