import EventLogFormat

/// The compact binary encoding of events in log records (`Specs/events.md`), with upcasting of old versions.
///
/// Payload: `version u8 · command id (16) · entry id (16) · body`. The record type is the ``EventType`` code.
package enum EventCodec {
    /// Encodes an event into a record payload.
    /// - Parameters:
    ///   - event: the event.
    ///   - commandID: the command that appends it.
    /// - Returns: the payload bytes (the record type is `event.type.rawValue`).
    package static func encode(_ event: MoodEvent, commandID: EntryID) -> [UInt8] {
        var w = ByteWriter()
        if case .redacted(let id, let redaction) = event {
            w.u8(redactedMarker)
            w.id(commandID)
            w.id(id)
            if let destination = redaction.destination { w.u8(destination.code) }
            return w.bytes
        }
        w.u8(event.type.currentVersion)
        w.id(commandID)
        w.id(event.entryID)
        writeBody(event, to: &w)
        #if DEBUG
            checkPairing(event, commandID: commandID, payload: w.bytes)
        #endif
        return w.bytes
    }

    /// Debug builds: every payload written decodes back to the event and command it was written from, so a body's
    /// writer and reader (side by side in `EventCodec+Bodies.swift`) cannot drift apart unnoticed.
    private static func checkPairing(_ event: MoodEvent, commandID: EntryID, payload: [UInt8]) {
        let decoded = payload.withUnsafeBytes { try? decode(type: event.type.rawValue, payload: $0) }
        precondition(decoded != nil, "\(event.type.name): the payload just written does not decode")
        precondition(decoded?.commandID == commandID, "\(event.type.name): the command id does not read back")
        precondition(decoded?.event == event, "\(event.type.name): the event does not read back as written")
    }

    /// Decodes a record payload into an event, upcasting older schema versions.
    /// - Parameters:
    ///   - type: the record type.
    ///   - payload: the record payload.
    /// - Returns: the command id and the event.
    /// - Throws: ``MoodError`` `corrupt_event` for an unknown type or version, or malformed bytes.
    package static func decode(
        type: UInt16, payload: UnsafeRawBufferPointer
    ) throws(MoodError)
        -> (commandID: EntryID, event: MoodEvent)
    {
        guard let eventType = EventType(rawValue: type) else {
            throw MoodError(
                code: .newerVersion, field: "type",
                rule: "event type \(type) is unknown: written by a newer version of MoodLedger")
        }
        var r = ByteReader(payload)
        do throws(ByteReader.Malformed) {
            let version = try r.u8()
            if version == redactedMarker || version == redactedInPlaceMarker {
                return try readRedaction(eventType, inPlace: version == redactedInPlaceMarker, from: &r)
            }
            guard version >= 1 else { throw ByteReader.Malformed(what: "version: 0 is not a schema version") }
            guard version <= eventType.currentVersion else { throw ByteReader.Malformed(what: newerVersionText) }
            let commandID = try r.id()
            let id = try r.id()
            let event = try readBody(eventType, version: version, id: id, from: &r)
            guard r.isAtEnd else { throw ByteReader.Malformed(what: "payload: trailing bytes") }
            return (commandID, event)
        } catch {
            if error.what == newerVersionText {
                throw MoodError(
                    code: .newerVersion, field: "version",
                    rule: "\(eventType.name) schema version "
                        + "\(payload[0]) is newer than this reader's \(eventType.currentVersion): written by a newer "
                        + "version of MoodLedger")
            }
            let field = error.what.split(separator: ":").first.map(String.init)
            throw MoodError(
                code: .corruptEvent, field: field, rule: "malformed \(eventType.name) payload: \(error.what)")
        }
    }

    private static let newerVersionText = "version: newer than this reader"

    /// A redacted record (`Specs/events.md`, *Redacted records*): the marker, the command id and the entry id (and a
    /// sync event's destination), nothing else — then, redacted in place, zero bytes up to the record's old length.
    private static func readRedaction(
        _ type: EventType, inPlace: Bool, from r: inout ByteReader
    ) throws(ByteReader.Malformed) -> (commandID: EntryID, event: MoodEvent) {
        let commandID = try r.id()
        let id = try r.id()
        if type.namesNoEntry, id != .none { throw ByteReader.Malformed(what: "entry_id: must be all zero") }
        var redaction = Redaction(type: type)
        if [.syncAttempted, .syncSucceeded, .syncFailed, .syncRequeued, .syncReleased].contains(type) {
            redaction.destination = try readDestination(from: &r)
        }
        if inPlace {
            while !r.isAtEnd {
                guard try r.u8() == 0 else {
                    throw ByteReader.Malformed(what: "padding: a redaction in place is padded with zero bytes")
                }
            }
        }
        guard r.isAtEnd else { throw ByteReader.Malformed(what: "payload: trailing bytes after a redaction") }
        return (commandID, .redacted(id, redaction))
    }

    /// The version byte of a redacted payload (`Specs/erasure.md`).
    package static let redactedMarker: UInt8 = 0xFF

    /// The version byte of a payload redacted in place: as ``redactedMarker``'s, then zero bytes that keep the
    /// record's length (`Specs/events.md`, *Redacted records*).
    package static let redactedInPlaceMarker: UInt8 = 0xFE

    /// A redacted payload padded with zeros to `length` bytes, for a redaction in place; `nil` when `length` is
    /// shorter than the redaction itself.
    /// - Parameter redacted: a payload ``encode(_:commandID:)`` made of a `.redacted` event.
    package static func redactedInPlace(_ redacted: [UInt8], length: Int) -> [UInt8]? {
        guard redacted.first == redactedMarker, length >= redacted.count else { return nil }
        var padded = redacted
        padded[0] = redactedInPlaceMarker
        padded += repeatElement(0, count: length - redacted.count)
        return padded
    }

    /// Where every payload, redacted ones included, holds its entry id: after the version byte and the 16-byte
    /// command id (`Specs/events.md`, *Envelope*).
    static let entryIDOffset = 17

    /// The entry id a payload names, read without decoding the rest: `nil` for a payload too short to hold one
    /// (a safe-to-ignore record's may be anything).
    /// - Parameter payload: an event record's payload.
    package static func entryID(inPayload payload: UnsafeRawBufferPointer) -> EntryID? {
        guard payload.count >= entryIDOffset + 16 else { return nil }
        return payload.entryID(entryIDOffset)
    }

    /// Whether a payload is a redacted record's (`Specs/erasure.md`).
    /// - Parameter payload: an event record's payload.
    package static func isRedacted(_ payload: UnsafeRawBufferPointer) -> Bool {
        payload.first == redactedMarker || payload.first == redactedInPlaceMarker
    }

    // MARK: - Parts

    package static func writeEntryBody(_ entry: MoodEntry, to w: inout ByteWriter, withTags: Bool) {
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
        entry.withNotesBytes { if let notes = $0 { w.string(utf8: notes) } }
        entry.withSourceIDBytes { if let sourceID = $0 { w.string(utf8: sourceID) } }
    }

    package static func readEntryBody(
        id: EntryID, from r: inout ByteReader, withTags: Bool
    ) throws(ByteReader.Malformed)
        -> MoodEntry
    {
        let loggedAt = try readLoggedAt(from: &r)
        let kind = try readKind(from: &r)
        let flags = try r.u8()
        guard flags & ~0x0F == 0 else { throw ByteReader.Malformed(what: "flags: unknown entry flag bits") }
        let grid = flags & 1 != 0 ? try readGrid(from: &r) : nil
        let score: UInt8 = flags & 2 != 0 ? UInt8(try readScore(from: &r)) : 0
        guard let source = MoodSource(code: try r.u8()) else {
            throw ByteReader.Malformed(what: "source: unknown code")
        }
        let labels: WordList<LabelDomain> = try readWordList(from: &r)
        let associations: WordList<AssociationDomain> = try readWordList(from: &r)
        let tags = withTags ? try readStrings(from: &r) : []
        let notes = flags & 4 != 0 ? try r.utf8("notes") : nil
        let sourceID = flags & 8 != 0 ? try r.utf8("source_id") : nil
        return MoodEntry(
            id: id, loggedAt: loggedAt, kind: kind, grid: grid ?? .min, typedScore: score,
            labels: labels, associations: associations, tags: tags, notesBytes: notes, source: source,
            sourceIDBytes: sourceID)
    }

    static func writeLoggedAt(_ loggedAt: LoggedAt, to w: inout ByteWriter) {
        w.signed(loggedAt.milliseconds)
        w.signed(Int64(loggedAt.utcOffsetMinutes))
    }

    /// The instants a stored `logged_at` may hold: 1900-01-01T00:00:00Z up to (not including) 2200-01-01T00:00:00Z.
    /// Wider than validation accepts for new entries, narrow enough that no calendar or day table can blow up.
    package static let loggedAtRange: Range<Int64> = -2_208_988_800_000..<7_258_118_400_000

    static func readLoggedAt(from r: inout ByteReader) throws(ByteReader.Malformed) -> LoggedAt {
        let ms = try r.signed()
        guard loggedAtRange.contains(ms) else {
            throw ByteReader.Malformed(what: "logged_at: \(ms) ms is outside 1900-01-01…2199-12-31")
        }
        let offset = try r.signed()
        guard offset >= -24 * 60, offset <= 24 * 60 else {
            throw ByteReader.Malformed(what: "utc_offset_minutes: \(offset) is outside ±1440")
        }
        return LoggedAt(milliseconds: ms, utcOffsetMinutes: Int(offset))
    }

    /// A grid valence `q` with `|q| ≤ 2⁴⁰` (valence within −1…1).
    static func readValence(from r: inout ByteReader) throws(ByteReader.Malformed) -> Double {
        Valence.value(try readGrid(from: &r))
    }

    /// The grid value itself (an entry body keeps it as is: no round trip through a `Double`).
    static func readGrid(from r: inout ByteReader) throws(ByteReader.Malformed) -> Int64 {
        let q = try r.signed()
        guard q >= -Valence.scale, q <= Valence.scale else {
            throw ByteReader.Malformed(what: "valence: grid value \(q) is outside −2⁴⁰…2⁴⁰")
        }
        return q
    }

    /// A typed score, 1…10.
    static func readScore(from r: inout ByteReader) throws(ByteReader.Malformed) -> Int {
        let score = try r.u8()
        guard MoodRules.scoreRange.contains(Int(score)) else {
            throw ByteReader.Malformed(what: "score: \(score) is outside 1…10")
        }
        return Int(score)
    }

    static func readKind(from r: inout ByteReader) throws(ByteReader.Malformed) -> MoodKind {
        guard let kind = MoodKind(rawValue: Int(try r.u8())) else {
            throw ByteReader.Malformed(what: "kind: unknown code")
        }
        return kind
    }

    /// A server revision: a varint ≤ 2⁶³ − 1.
    package static func readRevision(from r: inout ByteReader) throws(ByteReader.Malformed) -> UInt64 {
        let value = try r.varint()
        guard value <= UInt64(Int64.max) else { throw ByteReader.Malformed(what: "revision: above 2⁶³ − 1") }
        return value
    }

    static func readDestination(from r: inout ByteReader) throws(ByteReader.Malformed) -> SyncDestination {
        guard let destination = SyncDestination(code: try r.u8()) else {
            throw ByteReader.Malformed(what: "destination: unknown code")
        }
        return destination
    }

    static func writeWords<D>(_ words: [VocabularyWord<D>], to w: inout ByteWriter) {
        w.varint(UInt64(words.count))
        for word in words { writeWord(word, to: &w) }
    }

    @inline(__always)
    package static func writeWord<D>(_ word: VocabularyWord<D>, to w: inout ByteWriter) {
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
            if raws.allSatisfy({ $0 != 0 && Int($0) <= D.canonicalNames.count }),
                let list = WordList<D>(rawValues: raws)
            {
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
        for _ in 0..<count { words.append(try readWord(from: &r)) }
        return words
    }

    /// One word: Apple's raw value, or 0 and the custom word.
    package static func readWord<D>(from r: inout ByteReader) throws(ByteReader.Malformed) -> VocabularyWord<D> {
        let raw = try r.u8()
        if raw == 0 {
            let word = try r.string(D.fieldName)
            guard !word.isEmpty else { throw ByteReader.Malformed(what: "\(D.fieldName): an empty custom word") }
            return VocabularyWord(custom: word)
        }
        guard let word = VocabularyWord<D>(appleRawValue: Int(raw)) else {
            throw ByteReader.Malformed(what: "\(D.fieldName): unknown raw value \(raw)")
        }
        return word
    }

    static func writeStrings(_ strings: [String], to w: inout ByteWriter) {
        w.varint(UInt64(strings.count))
        for string in strings { w.string(string) }
    }

    static func readStrings(from r: inout ByteReader) throws(ByteReader.Malformed) -> [String] {
        let count = try r.count()
        var strings: [String] = []
        strings.reserveCapacity(count)
        for _ in 0..<count { strings.append(try r.string("tags")) }
        return strings
    }
}
