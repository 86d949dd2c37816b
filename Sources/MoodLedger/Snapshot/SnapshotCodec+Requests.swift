/// The snapshot's requests section (`Specs/ledger.md`, section 16): the replacement notes, then the request keys.
extension SnapshotCodec {
    /// `varint n · n × (id · varint seq · varint revision · u8 fields)`, ids ascending, then `varint k · k × (key
    /// string · fingerprint string · varint status · id (zeros: none) · varint seq · signed at ms)`, oldest first.
    static func encodeRequests(_ revisions: RevisionsState) -> [UInt8] {
        var w = ByteWriter(capacity: 64)
        let notes = revisions.notes.sorted { $0.key < $1.key }
        w.varint(UInt64(notes.count))
        for (id, note) in notes {
            w.id(id)
            w.varint(note.seq)
            w.varint(note.revision)
            w.u8(note.fields.rawValue)
        }
        let keys = revisions.keptKeys
        w.varint(UInt64(keys.count))
        for kept in keys {
            w.string(kept.request.key)
            w.string(kept.request.fingerprint)
            w.varint(UInt64(kept.request.status))
            w.id(kept.request.entryID ?? .none)
            w.varint(kept.seq)
            w.signed(kept.at)
        }
        return w.bytes
    }

    /// Decodes ``encodeRequests(_:)``'s bytes, every value checked: seqs within the covered `seq`, the rules of
    /// `edit.replaced` and `request.keyed` (`Specs/events.md`), no id or key twice, nothing left over.
    static func decodeRequests(
        _ buffer: UnsafeRawBufferPointer, seq: UInt64
    ) throws(ByteReader.Malformed) -> (notes: [EntryID: RevisionsState.Note], keys: [RevisionsState.Kept]) {
        var r = ByteReader(buffer)
        var notes: [EntryID: RevisionsState.Note] = [:]
        var previous: EntryID?
        for _ in 0..<(try r.count()) {
            let id = try r.id()
            guard id != .none, previous.map({ $0 < id }) ?? true else {
                throw ByteReader.Malformed(what: "notes: ids not ascending")
            }
            previous = id
            let at = try r.varint()
            let revision = try r.varint()
            let fields = MergeFields(rawValue: try r.u8())
            guard at >= 1, at <= seq, revision >= 1, revision <= UInt64(Int64.max), !fields.isEmpty else {
                throw ByteReader.Malformed(what: "notes: a seq, revision or field set out of range")
            }
            notes[id] = RevisionsState.Note(seq: at, revision: revision, fields: fields)
        }
        var keys: [RevisionsState.Kept] = []
        var seen = Set<String>()
        for _ in 0..<(try r.count()) {
            let key = try r.string("key")
            let fingerprint = try r.string("fingerprint")
            let status = try r.varint()
            let id = try r.id()
            let at = try r.varint()
            let time = try r.signed()
            guard !key.isEmpty, key.utf8.count <= RequestKey.maximumKeyBytes, !fingerprint.isEmpty,
                fingerprint.utf8.count <= RequestKey.maximumFingerprintBytes, (200...299).contains(status),
                at >= 1, at <= seq, seen.insert(key).inserted, keys.count < RevisionsState.keysKept
            else { throw ByteReader.Malformed(what: "keys: a key out of range, repeated or past the bound") }
            let request = RequestKey(
                key: key, fingerprint: fingerprint, status: Int(status), entryID: id == .none ? nil : id)
            keys.append(RevisionsState.Kept(request: request, at: time, seq: at))
        }
        guard r.isAtEnd else { throw ByteReader.Malformed(what: "trailing bytes") }
        return (notes, keys)
    }
}

/// The snapshot's conflicts section (`Specs/ledger.md`, section 18).
extension SnapshotCodec {
    /// `varint k · k × (id · u8 field · varint seq · signed at ms · u8 winner · u8 versions · the versions present)`,
    /// by entry id then field; `versions` has bit 0 base, 1 here, 2 server, 3 result, each present version an entry
    /// body with tags (`events.md`), in that order.
    static func encodeConflicts(_ fold: ConflictsFold) -> [UInt8] {
        var w = ByteWriter(capacity: 16)
        let conflicts = fold.conflicts
        w.varint(UInt64(conflicts.count))
        for conflict in conflicts {
            w.id(conflict.entryID)
            w.u8(conflict.field.rawValue)
            w.varint(conflict.seq)
            w.signed(conflict.at)
            w.u8(conflict.winner.rawValue)
            let versions = [conflict.base, conflict.here, conflict.server, conflict.result]
            w.u8(versions.enumerated().reduce(0) { $0 | ($1.element == nil ? 0 : 1 << UInt8($1.offset)) })
            for version in versions {
                if let version { EventCodec.writeEntryBody(version, to: &w, withTags: true) }
            }
        }
        return w.bytes
    }

    /// Decodes ``encodeConflicts(_:)``'s bytes, every value checked: one field named (a bit of `conflict.resolved`'s),
    /// seqs within the covered `seq`, ascending (entry id, field) pairs, versions decoded strictly, nothing left over.
    static func decodeConflicts(
        _ buffer: UnsafeRawBufferPointer, seq: UInt64
    ) throws(ByteReader.Malformed)
        -> [OpenConflict]
    {
        var r = ByteReader(buffer)
        var conflicts: [OpenConflict] = []
        for _ in 0..<(try r.count()) {
            let id = try r.id()
            let field = MergeFields(rawValue: try r.u8())
            let at = try r.varint()
            let time = try r.signed()
            guard let winner = ConflictChoice(rawValue: try r.u8()) else {
                throw ByteReader.Malformed(what: "a winner out of range")
            }
            let present = try r.u8()
            guard id != .none, field.rawValue.nonzeroBitCount == 1, at >= 1, at <= seq, present & ~0x0F == 0 else {
                throw ByteReader.Malformed(what: "an id, field, seq or version set out of range")
            }
            if let last = conflicts.last,
                !((last.entryID, last.field.rawValue) < (id, field.rawValue))
            {
                throw ByteReader.Malformed(what: "conflicts not ascending")
            }
            var versions: [MoodEntry?] = []
            for bit in 0..<4 {
                versions.append(
                    present & (1 << bit) == 0 ? nil : try EventCodec.readEntryBody(id: id, from: &r, withTags: true))
            }
            conflicts.append(
                OpenConflict(
                    entryID: id, field: field, seq: at, at: time, base: versions[0], here: versions[1],
                    server: versions[2], result: versions[3], winner: winner))
        }
        guard r.isAtEnd else { throw ByteReader.Malformed(what: "trailing bytes") }
        return conflicts
    }
}
