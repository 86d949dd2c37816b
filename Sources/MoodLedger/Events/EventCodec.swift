/// The compact binary encoding of events in log records (`Specs/events.md`), with upcasting of old versions.
///
/// Payload: `version u8 · command id (16) · entry id (16) · body`. The record type is the ``EventType`` code.
public enum EventCodec {
    /// Encodes an event into a record payload.
    /// - Parameters:
    ///   - event: the event.
    ///   - commandID: the command that appends it.
    /// - Returns: the payload bytes (the record type is `event.type.rawValue`).
    public static func encode(_ event: MoodEvent, commandID: EntryID) -> [UInt8] {
        var w = ByteWriter()
        w.u8(event.type.currentVersion)
        w.id(commandID)
        w.id(event.entryID)
        switch event {
        case .created(let entry):
            writeEntryBody(entry, to: &w, withTags: true)
        case .updated(_, let update):
            var mask: UInt8 = 0
            if update.loggedAt != nil { mask |= 0x01 }
            if update.kind != nil { mask |= 0x02 }
            if case .set? = update.valence { mask |= 0x04 }
            if case .clear? = update.valence { mask |= 0x08 }
            if case .set? = update.enteredScore { mask |= 0x10 }
            if case .clear? = update.enteredScore { mask |= 0x20 }
            if case .set? = update.notes { mask |= 0x40 }
            if case .clear? = update.notes { mask |= 0x80 }
            w.u8(mask)
            if let loggedAt = update.loggedAt { writeLoggedAt(loggedAt, to: &w) }
            if let kind = update.kind { w.u8(UInt8(kind.rawValue)) }
            if case .set(let valence)? = update.valence { w.signed(Valence.fixed(valence)) }
            if case .set(let score)? = update.enteredScore { w.u8(UInt8(score)) }
            if case .set(let notes)? = update.notes { w.string(notes) }
        case .labelsEdited(_, let labels): writeWords(labels, to: &w)
        case .associationsEdited(_, let associations): writeWords(associations, to: &w)
        case .tagsEdited(_, let tags): writeStrings(tags, to: &w)
        case .deleted: break
        case .syncAttempted(_, let destination, let operation):
            w.u8(destination.code)
            w.u8(operation.code)
        case .syncSucceeded(_, let destination, let remoteID):
            w.u8(destination.code)
            w.string(remoteID)
        case .syncFailed(_, let destination, let failure):
            w.u8(destination.code)
            w.varint(UInt64(max(0, failure.status ?? 0)))
            w.u8(failure.retryable ? 1 : 0)
            w.string(failure.error)
        case .remoteApplied(let change):
            w.u8(change.origin.code)
            w.u8((change.remoteID != nil ? 1 : 0) | (change.entry == nil ? 2 : 0))
            if let remoteID = change.remoteID { w.string(remoteID) }
            if let entry = change.entry { writeEntryBody(entry, to: &w, withTags: true) }
        }
        return w.bytes
    }

    /// Decodes a record payload into an event, upcasting older schema versions.
    /// - Parameters:
    ///   - type: the record type.
    ///   - payload: the record payload.
    /// - Returns: the command id and the event.
    /// - Throws: ``MoodError`` `corrupt_event` for an unknown type or version, or malformed bytes.
    public static func decode(type: UInt16, payload: UnsafeRawBufferPointer) throws(MoodError)
        -> (commandID: EntryID, event: MoodEvent) {
        guard let eventType = EventType(rawValue: type) else {
            throw MoodError(code: .corruptEvent, field: nil, rule: "unknown event type \(type)")
        }
        var r = ByteReader(payload)
        do throws(ByteReader.Malformed) {
            let version = try r.u8()
            guard version >= 1, version <= eventType.currentVersion else {
                throw ByteReader.Malformed(what: "unsupported \(eventType.name) schema version \(version)")
            }
            let commandID = try r.id()
            let id = try r.id()
            let event: MoodEvent
            switch eventType {
            case .created:
                // Version 1 had no tags; upcast with an empty tag list.
                event = .created(try readEntryBody(id: id, from: &r, withTags: version >= 2))
            case .updated:
                let mask = try r.u8()
                var update = MoodUpdate()
                if mask & 0x01 != 0 { update.loggedAt = try readLoggedAt(from: &r) }
                if mask & 0x02 != 0 { update.kind = try readKind(from: &r) }
                if mask & 0x04 != 0 { update.valence = .set(Valence.value(try r.signed())) }
                if mask & 0x08 != 0 { update.valence = .clear }
                if mask & 0x10 != 0 { update.enteredScore = .set(Int(try r.u8())) }
                if mask & 0x20 != 0 { update.enteredScore = .clear }
                if mask & 0x40 != 0 { update.notes = .set(try r.string()) }
                if mask & 0x80 != 0 { update.notes = .clear }
                event = .updated(id, update)
            case .labelsEdited: event = .labelsEdited(id, try readWords(from: &r))
            case .associationsEdited: event = .associationsEdited(id, try readWords(from: &r))
            case .tagsEdited: event = .tagsEdited(id, try readStrings(from: &r))
            case .deleted: event = .deleted(id)
            case .syncAttempted:
                let destination = try readDestination(from: &r)
                guard let operation = SyncOperation(code: try r.u8()) else {
                    throw ByteReader.Malformed(what: "unknown sync operation")
                }
                event = .syncAttempted(id, destination, operation)
            case .syncSucceeded:
                event = .syncSucceeded(id, try readDestination(from: &r), remoteID: try r.string())
            case .syncFailed:
                let destination = try readDestination(from: &r)
                let status = Int(try r.varint())
                let retryable = try r.u8() != 0
                event = .syncFailed(id, destination, SyncFailure(status: status == 0 ? nil : status,
                                                                 error: try r.string(), retryable: retryable))
            case .remoteApplied:
                let origin = try readDestination(from: &r)
                let flags = try r.u8()
                let remoteID = flags & 1 != 0 ? try r.string() : nil
                let entry = flags & 2 != 0 ? nil : try readEntryBody(id: id, from: &r, withTags: true)
                event = .remoteApplied(RemoteChange(origin: origin, remoteID: remoteID, entry: entry, entryID: id))
            }
            guard r.isAtEnd else { throw ByteReader.Malformed(what: "trailing bytes") }
            return (commandID, event)
        } catch {
            throw MoodError(code: .corruptEvent, field: nil, rule: "malformed \(eventType.name) payload: \(error.what)")
        }
    }

    // MARK: - Parts

    static func writeEntryBody(_ entry: MoodEntry, to w: inout ByteWriter, withTags: Bool) {
        writeLoggedAt(entry.loggedAt, to: &w)
        w.u8(UInt8(entry.kind.rawValue))
        var flags: UInt8 = 0
        if entry.valence != nil { flags |= 1 }
        if entry.enteredScore != nil { flags |= 2 }
        if entry.notes != nil { flags |= 4 }
        if entry.sourceID != nil { flags |= 8 }
        w.u8(flags)
        if let valence = entry.valence { w.signed(Valence.fixed(valence)) }
        if let score = entry.enteredScore { w.u8(UInt8(score)) }
        w.u8(entry.source.code)
        writeWords(entry.labelList, to: &w)
        writeWords(entry.associationList, to: &w)
        if withTags { writeStrings(entry.tags, to: &w) }
        if let notes = entry.notes { w.string(notes) }
        if let sourceID = entry.sourceID { w.string(sourceID) }
    }

    static func readEntryBody(id: EntryID, from r: inout ByteReader, withTags: Bool) throws(ByteReader.Malformed)
        -> MoodEntry {
        let loggedAt = try readLoggedAt(from: &r)
        let kind = try readKind(from: &r)
        let flags = try r.u8()
        guard flags & ~0x0F == 0 else { throw ByteReader.Malformed(what: "unknown entry flags") }
        let valence = flags & 1 != 0 ? Valence.value(try r.signed()) : nil
        let score = flags & 2 != 0 ? Int(try r.u8()) : nil
        guard let source = MoodSource(code: try r.u8()) else { throw ByteReader.Malformed(what: "unknown source") }
        let labels: WordList<LabelDomain> = try readWordList(from: &r)
        let associations: WordList<AssociationDomain> = try readWordList(from: &r)
        let tags = withTags ? try readStrings(from: &r) : []
        let notes = flags & 4 != 0 ? try r.string() : nil
        let sourceID = flags & 8 != 0 ? try r.string() : nil
        var entry = MoodEntry(id: id, loggedAt: loggedAt, kind: kind, valence: valence, enteredScore: score, tags: tags,
                              notes: notes, source: source, sourceID: sourceID)
        entry.labelList = labels
        entry.associationList = associations
        return entry
    }

    static func writeLoggedAt(_ loggedAt: LoggedAt, to w: inout ByteWriter) {
        w.signed(loggedAt.milliseconds)
        w.signed(Int64(loggedAt.utcOffsetMinutes))
    }

    static func readLoggedAt(from r: inout ByteReader) throws(ByteReader.Malformed) -> LoggedAt {
        let ms = try r.signed()
        let offset = try r.signed()
        guard abs(offset) <= 24 * 60 else { throw ByteReader.Malformed(what: "bad UTC offset") }
        return LoggedAt(milliseconds: ms, utcOffsetMinutes: Int(offset))
    }

    static func readKind(from r: inout ByteReader) throws(ByteReader.Malformed) -> MoodKind {
        guard let kind = MoodKind(rawValue: Int(try r.u8())) else { throw ByteReader.Malformed(what: "unknown kind") }
        return kind
    }

    static func readDestination(from r: inout ByteReader) throws(ByteReader.Malformed) -> SyncDestination {
        guard let destination = SyncDestination(code: try r.u8()) else {
            throw ByteReader.Malformed(what: "unknown destination")
        }
        return destination
    }

    static func writeWords<D>(_ words: [VocabularyWord<D>], to w: inout ByteWriter) {
        w.varint(UInt64(words.count))
        for word in words { writeWord(word, to: &w) }
    }

    @inline(__always)
    static func writeWord<D>(_ word: VocabularyWord<D>, to w: inout ByteWriter) {
        switch word.storage {
        case .apple(let raw): w.u8(raw)
        case .custom(let text):
            w.u8(0)
            w.string(text)
        }
    }

    static func writeWords<D>(_ words: WordList<D>, to w: inout ByteWriter) {
        w.varint(UInt64(words.count))
        words.forEach { writeWord($0, to: &w) }
    }

    /// Reads a word list; all-canonical short lists go straight into the packed form.
    static func readWordList<D>(from r: inout ByteReader) throws(ByteReader.Malformed) -> WordList<D> {
        let start = r.position
        let count = try r.count()
        if count <= 8, r.buffer.count - r.position >= count {
            let raws = UnsafeRawBufferPointer(rebasing: r.buffer[r.position..<(r.position + count)])
            if raws.allSatisfy({ $0 != 0 && Int($0) <= D.canonicalNames.count }), let list = WordList<D>(rawValues: raws) {
                r.position += count
                return list
            }
        }
        r.position = start
        return WordList(try readWords(from: &r))
    }

    static func readWords<D>(from r: inout ByteReader) throws(ByteReader.Malformed) -> [VocabularyWord<D>] {
        let count = try r.count()
        var words: [VocabularyWord<D>] = []
        words.reserveCapacity(count)
        for _ in 0..<count {
            let raw = try r.u8()
            if raw == 0 {
                words.append(VocabularyWord(custom: try r.string()))
            } else {
                guard let word = VocabularyWord<D>(appleRawValue: Int(raw)) else {
                    throw ByteReader.Malformed(what: "unknown \(D.fieldName) raw value \(raw)")
                }
                words.append(word)
            }
        }
        return words
    }

    static func writeStrings(_ strings: [String], to w: inout ByteWriter) {
        w.varint(UInt64(strings.count))
        for string in strings { w.string(string) }
    }

    static func readStrings(from r: inout ByteReader) throws(ByteReader.Malformed) -> [String] {
        let count = try r.count()
        var strings: [String] = []
        strings.reserveCapacity(count)
        for _ in 0..<count { strings.append(try r.string()) }
        return strings
    }
}
