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
