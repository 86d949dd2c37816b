/// The open conflicts as a projection kept whole (`Specs/ledger.md`, *Where a projection goes*).
extension ConflictsFold: Projection {
    package static let schema = "conflicts=2"

    package static let eventTypes: [EventType] = [
        .syncMerged, .remoteApplied, .conflictResolved, .deleted, .entryErased, .ledgerErased
    ]

    /// `varint k · k × (id · u8 field · varint seq · signed at ms · u8 winner · u8 versions · the versions present)`,
    /// by entry id then field; `versions` has bit 0 base, 1 here, 2 server, 3 result, each present version an entry
    /// body with tags (`events.md`), in that order.
    package func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: 16)
        let conflicts = conflicts
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

    /// Decodes ``encoded()``'s bytes, every value checked: one field named (a bit of `conflict.resolved`'s),
    /// seqs within the covered `seq`, ascending (entry id, field) pairs, versions decoded strictly, nothing left over.
    package init(decoding bytes: UnsafeRawBufferPointer, seq: UInt64) throws(ByteReader.Malformed) {
        var r = ByteReader(bytes)
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
        self.init(conflicts)
    }
}
