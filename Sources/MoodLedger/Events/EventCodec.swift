import EventLog

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
        case .syncAttempted(_, let destination, let operation, let key):
            w.u8(destination.code)
            w.u8(operation.code)
            w.string(key)
        case .syncSucceeded(_, let destination, let remoteID, let revision):
            w.u8(destination.code)
            w.string(remoteID)
            w.varint(revision)
        case .syncFailed(_, let destination, let failure):
            w.u8(destination.code)
            w.varint(UInt64(max(0, failure.status ?? 0)))
            w.u8(failure.retryable ? 1 : 0)
            w.string(failure.error)
            w.varint(UInt64(max(0, failure.nextAttemptAt ?? 0)))
        case .remoteApplied(let change):
            w.u8(change.origin.code)
            w.u8((change.remoteID != nil ? 1 : 0) | (change.entry == nil ? 2 : 0) | (change.conflict ? 4 : 0))
            if let remoteID = change.remoteID { w.string(remoteID) }
            if let entry = change.entry { writeEntryBody(entry, to: &w, withTags: true) }
            w.varint(change.revision)
        case .syncPulled(let pull):
            w.u8(pull.destination.code)
            w.u8(pull.serverWentBack ? 1 : 0)
            w.varint(pull.cursor)
            w.varint(pull.serverRevision)
            w.varint(UInt64(pull.applied))
        case .remoteConfigured(let config):
            w.u8(config.destination.code)
            w.u8(config.dialect.code)
            w.string(config.url)
            w.u8(config.capabilitySource.rawValue)
            w.u8(config.capabilities.rawValue)
        case .syncRequeued(_, let destination, let reason):
            w.u8(destination.code)
            w.string(reason)
        case .entryErased(_, let erasure):
            w.u8(erasure.complete ? 1 : 0)
            w.string(erasure.reason)
            w.string(erasure.requestedBy)
        case .ledgerErased(let erasure):
            w.u8((erasure.complete ? 1 : 0) | (erasure.keepsHealthKit ? 2 : 0))
            w.string(erasure.reason)
            w.string(erasure.requestedBy)
        case .syncMerged(let merge):
            w.u8(merge.destination.code)
            var flags: UInt8 = 0
            if merge.remoteID != nil { flags |= 1 }
            if merge.base != nil { flags |= 2 }
            if merge.here != nil { flags |= 4 }
            if merge.theirs != nil { flags |= 8 }
            if merge.merged != nil { flags |= 16 }
            w.u8(flags)
            if let remoteID = merge.remoteID { w.string(remoteID) }
            w.varint(merge.serverRevision)
            w.varint(merge.baseRevision)
            for version in [merge.base, merge.here, merge.theirs, merge.merged] {
                if let version { writeEntryBody(version, to: &w, withTags: true) }
            }
        case .conflictResolved(_, let fields, let choice):
            w.u8(fields.rawValue)
            w.u8(choice.rawValue)
        case .redacted: break
        }
        return w.bytes
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
                // A redacted record (Specs/erasure.md): the marker, the command id and the entry id, nothing else —
                // then, redacted in place, zero bytes up to the record's old length.
                let commandID = try r.id()
                let id = try r.id()
                if eventType == .syncPulled || eventType == .remoteConfigured || eventType == .ledgerErased, id != .none
                {
                    throw ByteReader.Malformed(what: "entry_id: must be all zero")
                }
                var redaction = Redaction(type: eventType)
                if [.syncAttempted, .syncSucceeded, .syncFailed, .syncRequeued].contains(eventType) {
                    redaction.destination = try readDestination(from: &r)
                }
                if version == redactedInPlaceMarker {
                    while !r.isAtEnd {
                        guard try r.u8() == 0 else {
                            throw ByteReader.Malformed(what: "padding: a redaction in place is padded with zero bytes")
                        }
                    }
                }
                guard r.isAtEnd else { throw ByteReader.Malformed(what: "payload: trailing bytes after a redaction") }
                return (commandID, .redacted(id, redaction))
            }
            guard version >= 1 else { throw ByteReader.Malformed(what: "version: 0 is not a schema version") }
            guard version <= eventType.currentVersion else { throw ByteReader.Malformed(what: newerVersionText) }
            let commandID = try r.id()
            let id = try r.id()
            let event: MoodEvent
            switch eventType {
            case .created:
                // Version 1 had no tags; upcast with an empty tag list.
                event = .created(try readEntryBody(id: id, from: &r, withTags: version >= 2))
            case .updated:
                let mask = try r.u8()
                guard mask & 0x0C != 0x0C, mask & 0x30 != 0x30, mask & 0xC0 != 0xC0 else {
                    throw ByteReader.Malformed(what: "mask: a field is both set and cleared")
                }
                var update = MoodUpdate()
                if mask & 0x01 != 0 { update.loggedAt = try readLoggedAt(from: &r) }
                if mask & 0x02 != 0 { update.kind = try readKind(from: &r) }
                if mask & 0x04 != 0 { update.valence = .set(try readValence(from: &r)) }
                if mask & 0x08 != 0 { update.valence = .clear }
                if mask & 0x10 != 0 { update.enteredScore = .set(try readScore(from: &r)) }
                if mask & 0x20 != 0 { update.enteredScore = .clear }
                if mask & 0x40 != 0 { update.notes = .set(try r.string("notes")) }
                if mask & 0x80 != 0 { update.notes = .clear }
                event = .updated(id, update)
            case .labelsEdited: event = .labelsEdited(id, try readWords(from: &r))
            case .associationsEdited: event = .associationsEdited(id, try readWords(from: &r))
            case .tagsEdited: event = .tagsEdited(id, try readStrings(from: &r))
            case .deleted: event = .deleted(id)
            case .syncAttempted:
                let destination = try readDestination(from: &r)
                guard let operation = SyncOperation(code: try r.u8()) else {
                    throw ByteReader.Malformed(what: "operation: unknown code")
                }
                // Version 1 had no idempotency key.
                event = .syncAttempted(id, destination, operation, key: version >= 2 ? try r.string("key") : "")
            case .syncSucceeded:
                let destination = try readDestination(from: &r)
                let remoteID = try r.string("remote_id")
                let revision = version >= 2 ? try readRevision(from: &r) : 0
                event = .syncSucceeded(id, destination, remoteID: remoteID, revision: revision)
            case .syncFailed:
                let destination = try readDestination(from: &r)
                let rawStatus = try r.varint()
                guard rawStatus <= 999 else { throw ByteReader.Malformed(what: "status: \(rawStatus) is above 999") }
                let status = Int(rawStatus)
                let retryable = try r.bool("retryable")
                var failure = SyncFailure(
                    status: status == 0 ? nil : status, error: try r.string("error"),
                    retryable: retryable)
                if version >= 2 {
                    // Version 1 has no retry time: the fold computes it with the version-1 rule.
                    let next = try r.varint()
                    guard next <= UInt64(LogFormat.recordedAtRange.upperBound / 1000) else {
                        throw ByteReader.Malformed(what: "next_attempt_at: \(next) ms is after year 9999")
                    }
                    failure.nextAttemptAt = next == 0 ? nil : Int64(next)
                }
                event = .syncFailed(id, destination, failure)
            case .remoteApplied:
                let origin = try readDestination(from: &r)
                let flags = try r.u8()
                guard flags & ~(version >= 2 ? 0x07 : 0x03) == 0 else {
                    throw ByteReader.Malformed(what: "flags: unknown bits")
                }
                let remoteID = flags & 1 != 0 ? try r.string("remote_id") : nil
                let entry = flags & 2 != 0 ? nil : try readEntryBody(id: id, from: &r, withTags: true)
                let revision = version >= 2 ? try readRevision(from: &r) : 0
                event = .remoteApplied(
                    RemoteChange(
                        origin: origin, remoteID: remoteID, entry: entry, entryID: id,
                        revision: revision, conflict: flags & 4 != 0))
            case .syncPulled:
                guard id == .none else { throw ByteReader.Malformed(what: "entry_id: must be all zero") }
                let destination = try readDestination(from: &r)
                let flags = try r.u8()
                guard flags & ~0x01 == 0 else { throw ByteReader.Malformed(what: "flags: unknown bits") }
                let cursor = try readRevision(from: &r)
                let revision = try readRevision(from: &r)
                let applied = try r.varint()
                guard applied <= UInt64(Int32.max) else { throw ByteReader.Malformed(what: "applied: above 2³¹ − 1") }
                event = .syncPulled(
                    SyncPull(
                        destination: destination, cursor: cursor, serverRevision: revision,
                        applied: Int(applied), serverWentBack: flags & 1 != 0))
            case .remoteConfigured:
                guard id == .none else { throw ByteReader.Malformed(what: "entry_id: must be all zero") }
                let destination = try readDestination(from: &r)
                guard let dialect = RemoteDialect(code: try r.u8()) else {
                    throw ByteReader.Malformed(what: "dialect: unknown code")
                }
                let url = try r.string("url")
                // Version 1 had no capabilities: upcast as not learned yet (the next sync probes).
                let source = version >= 2 ? CapabilitySource(rawValue: try r.u8()) : .unknown
                guard let source else { throw ByteReader.Malformed(what: "capability_source: unknown code") }
                let bits = version >= 2 ? try r.u8() : 0
                guard bits & ~RemoteCapabilities.all.rawValue == 0 else {
                    throw ByteReader.Malformed(what: "capabilities: unknown bits")
                }
                let capabilities = RemoteCapabilities(rawValue: bits)
                guard source != .unknown || capabilities.isEmpty,
                    capabilities.isSubset(of: .ceiling(dialect))
                else {
                    throw ByteReader.Malformed(what: "capabilities: not possible for this dialect or source")
                }
                event = .remoteConfigured(
                    RemoteConfig(
                        destination: destination, url: url, dialect: dialect,
                        capabilities: capabilities, source: source))
            case .syncRequeued:
                event = .syncRequeued(id, try readDestination(from: &r), reason: try r.string("reason"))
            case .syncMerged:
                let destination = try readDestination(from: &r)
                let flags = try r.u8()
                guard flags & ~0x1F == 0 else { throw ByteReader.Malformed(what: "flags: unknown bits") }
                guard flags & 0x0C != 0 else {
                    throw ByteReader.Malformed(what: "flags: deleted on both sides is no merge")
                }
                let remoteID = flags & 1 != 0 ? try r.string("remote_id") : nil
                let serverRevision = try readRevision(from: &r)
                let baseRevision = try readRevision(from: &r)
                var versions: [MoodEntry?] = []
                for bit: UInt8 in [2, 4, 8, 16] {
                    versions.append(flags & bit != 0 ? try readEntryBody(id: id, from: &r, withTags: true) : nil)
                }
                event = .syncMerged(
                    SyncMerge(
                        destination: destination, entryID: id, remoteID: remoteID,
                        serverRevision: serverRevision, baseRevision: baseRevision,
                        base: versions[0], here: versions[1], theirs: versions[2], merged: versions[3]))
            case .conflictResolved:
                let fields = MergeFields(rawValue: try r.u8())
                guard !fields.isEmpty else { throw ByteReader.Malformed(what: "fields: none named") }
                guard let choice = ConflictChoice(rawValue: try r.u8()) else {
                    throw ByteReader.Malformed(what: "choice: unknown code")
                }
                event = .conflictResolved(id, fields, choice)
            case .entryErased:
                let flags = try r.u8()
                guard flags & ~0x01 == 0 else { throw ByteReader.Malformed(what: "flags: unknown bits") }
                let reason = try r.string("reason")
                event = .entryErased(
                    id, Erasure(reason: reason, requestedBy: try r.string("requested_by"), complete: flags & 1 != 0))
            case .ledgerErased:
                guard id == .none else { throw ByteReader.Malformed(what: "entry_id: must be all zero") }
                let flags = try r.u8()
                guard flags & ~0x03 == 0 else { throw ByteReader.Malformed(what: "flags: unknown bits") }
                let reason = try r.string("reason")
                event = .ledgerErased(
                    Erasure(
                        reason: reason, requestedBy: try r.string("requested_by"), complete: flags & 1 != 0,
                        keepsHealthKit: flags & 2 != 0))
            }
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
        entry.withNotesBytes { if let notes = $0 { w.string(utf8: notes) } }
        entry.withSourceIDBytes { if let sourceID = $0 { w.string(utf8: sourceID) } }
    }

    static func readEntryBody(
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
    static let loggedAtRange: Range<Int64> = -2_208_988_800_000..<7_258_118_400_000

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
    static func readRevision(from r: inout ByteReader) throws(ByteReader.Malformed) -> UInt64 {
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
    static func readWord<D>(from r: inout ByteReader) throws(ByteReader.Malformed) -> VocabularyWord<D> {
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
