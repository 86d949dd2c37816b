/// The source-id index of the entries: which entry holds each (source, source id), kept as entries come and go.
extension EntriesState {
    /// The entry with this (source, source id), if any.
    public func entry(source: MoodSource, sourceID: String) -> MoodEntry? {
        holder(of: SourceKey(source: source, sourceID: sourceID)).flatMap { self[$0] }
    }

    /// The entry holding a source key: the one created first (then the smaller id) among the image's current rows
    /// and the changed entries.
    func holder(of key: SourceKey) -> EntryID? {
        var text = key.sourceID
        var best = text.withUTF8 { bySourceID.entry(key.source, UnsafeRawBufferPointer($0), in: changed) }.flatMap {
            self[$0]
        }
        if let image {
            for row in image.rows(source: key.source, sourceID: key.sourceID)
            where hidden.position(of: image.id(ofRow: row)) == nil {
                guard let entry = image.entry(atRow: row), entry.source == key.source, entry.sourceID == key.sourceID
                else { continue }
                if best.map({ Self.createdFirst(entry, $0) }) ?? true { best = entry }
            }
        }
        return best?.id
    }

    /// Indexes the source id of the changed entry at `position`, if it has one.
    /// - Parameter known: the source id's ``SourceIndex/hash(_:_:)``, if the caller has it (a replay's reading
    ///   thread computes it as it decodes the entry); computed here otherwise.
    mutating func indexSourceID(at position: Int, hash known: UInt64? = nil) {
        guard changed[position: position].hasSourceID else { return }
        // A key whose hash nobody holds needs no holder found (nearly every key): one insertion, the key read where
        // the entry is held. The long way copies the entry and hands the entries' table to the index from inside a
        // closure over `self`, which retains and releases the entry's extras and the table's buffers.
        let (source, id) = (changed[position: position].source, changed[position: position].id)
        let hash = known ?? changed[position: position].withSourceIDBytes { $0.map { SourceIndex.hash(source, $0) } }
        if let hash, bySourceID.setIfFree(hash: hash, to: id) { return }
        let entry = changed[position: position]
        entry.withSourceIDBytes { bytes in
            guard let bytes else { return }
            if let holder = bySourceID.entry(entry.source, bytes, in: changed).flatMap({ self[$0] }),
                holder.id != entry.id
            {
                sharedSourceKeys.insert(SourceKey(source: entry.source, bytes: bytes))
                if Self.createdFirst(entry, holder) { bySourceID.set(entry.source, bytes, to: entry.id, in: changed) }
            } else {
                bySourceID.set(entry.source, bytes, to: entry.id, in: changed)
            }
        }
    }

    /// Drops a removed entry from the source-id index (another holder of a shared key takes over).
    mutating func removeFromSourceIndex(_ entry: MoodEntry) {
        entry.withSourceIDBytes { bytes in
            guard let bytes, bySourceID.remove(entry.source, bytes, heldBy: entry.id), !sharedSourceKeys.isEmpty else {
                return
            }
            let key = SourceKey(source: entry.source, bytes: bytes)
            guard sharedSourceKeys.contains(key) else { return }
            let holders = changed.values.filter { $0.hasSourceKey(entry.source, bytes) }
            if let first = holders.min(by: Self.createdFirst) {
                bySourceID.set(entry.source, bytes, to: first.id, in: changed)
            }
            if holders.count <= 1 { sharedSourceKeys.remove(key) }
        }
    }

    /// The first-wins order of entries sharing a source key: created first, then the smaller id.
    static func createdFirst(_ a: MoodEntry, _ b: MoodEntry) -> Bool { (a.createdAt, a.id) < (b.createdAt, b.id) }
}
