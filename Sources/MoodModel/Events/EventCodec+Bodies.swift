import EventLogFormat

/// Each event type's body (`Specs/events.md`, the catalog), written and read side by side: what ``encode`` and
/// ``decode`` dispatch to after the envelope. A new event type is one case in each switch and, where its body is more
/// than a field or two, one pair of functions below.
extension EventCodec {
    /// Writes the body of `event` (after the envelope: version, command id, entry id).
    static func writeBody(_ event: MoodEvent, to w: inout ByteWriter) {
        switch event {
        case .created(let entry): writeEntryBody(entry, to: &w, withTags: true)
        case .updated(_, let update): writeUpdate(update, to: &w)
        case .labelsEdited(_, let labels): writeWords(labels, to: &w)
        case .associationsEdited(_, let associations): writeWords(associations, to: &w)
        case .tagsEdited(_, let tags): writeStrings(tags, to: &w)
        case .deleted, .redacted: break
        case .syncAttempted(_, let destination, let operation, let key):
            writeAttempt(destination, operation, key: key, to: &w)
        case .syncSucceeded(_, let destination, let remoteID, let revision):
            writeSuccess(destination, remoteID: remoteID, revision: revision, to: &w)
        case .syncFailed(_, let destination, let failure): writeFailure(destination, failure, to: &w)
        case .remoteApplied(let change): writeRemoteChange(change, to: &w)
        case .syncPulled(let pull): writePull(pull, to: &w)
        case .remoteConfigured(let config): writeRemoteConfig(config, to: &w)
        case .syncRequeued(_, let destination, let reason): writeRequeue(destination, reason: reason, to: &w)
        case .syncReleased(_, let destination): w.u8(destination.code)
        case .healthKitAnchored(let anchor): w.bytes(anchor)
        case .requestKeyed(let key): writeRequestKey(key, to: &w)
        case .editReplaced(_, let revision, let fields):
            w.varint(revision)
            w.u8(fields.rawValue)
        case .entryErased(_, let erasure): writeErasure(erasure, flags: erasure.complete ? 1 : 0, to: &w)
        case .ledgerErased(let erasure):
            writeErasure(erasure, flags: (erasure.complete ? 1 : 0) | (erasure.keepsHealthKit ? 2 : 0), to: &w)
        case .syncMerged(let merge): writeMerge(merge, to: &w)
        case .conflictResolved(_, let fields, let choice): writeResolution(fields, choice, to: &w)
        }
    }

    /// Reads the body of an event of `type` written at schema `version` (1 … current), upcasting older versions.
    /// - Parameter id: the envelope's entry id.
    static func readBody(
        _ type: EventType, version: UInt8, id: EntryID, from r: inout ByteReader
    ) throws(ByteReader.Malformed) -> MoodEvent {
        if type.namesNoEntry, id != .none { throw ByteReader.Malformed(what: "entry_id: must be all zero") }
        switch type {
        // Version 1 had no tags; upcast with an empty tag list.
        case .created: return .created(try readEntryBody(id: id, from: &r, withTags: version >= 2))
        case .updated: return .updated(id, try readUpdate(from: &r))
        case .labelsEdited: return .labelsEdited(id, try readWords(from: &r))
        case .associationsEdited: return .associationsEdited(id, try readWords(from: &r))
        case .tagsEdited: return .tagsEdited(id, try readStrings(from: &r))
        case .deleted: return .deleted(id)
        case .syncAttempted: return try readAttempt(id, version: version, from: &r)
        case .syncSucceeded: return try readSuccess(id, version: version, from: &r)
        case .syncFailed: return try readFailure(id, version: version, from: &r)
        case .remoteApplied: return .remoteApplied(try readRemoteChange(id, version: version, from: &r))
        case .syncPulled: return .syncPulled(try readPull(version: version, from: &r))
        case .remoteConfigured: return .remoteConfigured(try readRemoteConfig(version: version, from: &r))
        case .syncRequeued: return .syncRequeued(id, try readDestination(from: &r), reason: try r.string("reason"))
        case .syncReleased: return .syncReleased(id, try readDestination(from: &r))
        case .healthKitAnchored: return .healthKitAnchored(try r.bytes("anchor"))
        case .requestKeyed: return .requestKeyed(try readRequestKey(from: &r))
        case .editReplaced: return try readReplacement(id, from: &r)
        case .syncMerged: return .syncMerged(try readMerge(id, from: &r))
        case .conflictResolved: return try readResolution(id, from: &r)
        case .entryErased: return .entryErased(id, try readErasure(allowedFlags: 0x01, from: &r))
        case .ledgerErased: return .ledgerErased(try readErasure(allowedFlags: 0x03, from: &r))
        }
    }

    // MARK: - mood.updated: a mask of the fields set or cleared, then the values set

    static func writeUpdate(_ update: MoodUpdate, to w: inout ByteWriter) {
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
    }

    static func readUpdate(from r: inout ByteReader) throws(ByteReader.Malformed) -> MoodUpdate {
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
        return update
    }

    // MARK: - sync.attempted, sync.succeeded, sync.failed, sync.requeued

    static func writeAttempt(
        _ destination: SyncDestination, _ operation: SyncOperation, key: String, to w: inout ByteWriter
    ) {
        w.u8(destination.code)
        w.u8(operation.code)
        w.string(key)
    }

    static func readAttempt(
        _ id: EntryID, version: UInt8, from r: inout ByteReader
    ) throws(ByteReader.Malformed) -> MoodEvent {
        let destination = try readDestination(from: &r)
        guard let operation = SyncOperation(code: try r.u8()) else {
            throw ByteReader.Malformed(what: "operation: unknown code")
        }
        // Version 1 had no idempotency key.
        return .syncAttempted(id, destination, operation, key: version >= 2 ? try r.string("key") : "")
    }

    static func writeSuccess(
        _ destination: SyncDestination, remoteID: String, revision: UInt64, to w: inout ByteWriter
    ) {
        w.u8(destination.code)
        w.string(remoteID)
        w.varint(revision)
    }

    static func readSuccess(
        _ id: EntryID, version: UInt8, from r: inout ByteReader
    ) throws(ByteReader.Malformed) -> MoodEvent {
        let destination = try readDestination(from: &r)
        let remoteID = try r.string("remote_id")
        // Version 1 had no revision.
        let revision = version >= 2 ? try readRevision(from: &r) : 0
        return .syncSucceeded(id, destination, remoteID: remoteID, revision: revision)
    }

    static func writeFailure(_ destination: SyncDestination, _ failure: SyncFailure, to w: inout ByteWriter) {
        w.u8(destination.code)
        w.varint(UInt64(max(0, failure.status ?? 0)))
        w.u8(failure.retryable ? 1 : 0)
        w.string(failure.error)
        w.varint(UInt64(max(0, failure.nextAttemptAt ?? 0)))
    }

    static func readFailure(
        _ id: EntryID, version: UInt8, from r: inout ByteReader
    ) throws(ByteReader.Malformed) -> MoodEvent {
        let destination = try readDestination(from: &r)
        let rawStatus = try r.varint()
        guard rawStatus <= 999 else { throw ByteReader.Malformed(what: "status: \(rawStatus) is above 999") }
        let status = Int(rawStatus)
        let retryable = try r.bool("retryable")
        var failure = SyncFailure(
            status: status == 0 ? nil : status, error: try r.string("error"), retryable: retryable)
        if version >= 2 {
            // Version 1 has no retry time: the fold computes it with the version-1 rule.
            let next = try r.varint()
            guard next <= UInt64(LogFormat.recordedAtRange.upperBound / 1000) else {
                throw ByteReader.Malformed(what: "next_attempt_at: \(next) ms is after year 9999")
            }
            failure.nextAttemptAt = next == 0 ? nil : Int64(next)
        }
        return .syncFailed(id, destination, failure)
    }

    static func writeRequeue(_ destination: SyncDestination, reason: String, to w: inout ByteWriter) {
        w.u8(destination.code)
        w.string(reason)
    }

    // MARK: - remote.applied: origin, flags (1 remote id, 2 deleted, 4 conflict), the entry, the revision

    static func writeRemoteChange(_ change: RemoteChange, to w: inout ByteWriter) {
        w.u8(change.origin.code)
        w.u8((change.remoteID != nil ? 1 : 0) | (change.entry == nil ? 2 : 0) | (change.conflict ? 4 : 0))
        if let remoteID = change.remoteID { w.string(remoteID) }
        if let entry = change.entry { writeEntryBody(entry, to: &w, withTags: true) }
        w.varint(change.revision)
    }

    static func readRemoteChange(
        _ id: EntryID, version: UInt8, from r: inout ByteReader
    ) throws(ByteReader.Malformed) -> RemoteChange {
        let origin = try readDestination(from: &r)
        let flags = try r.u8()
        // Version 1 had no conflict bit and no revision.
        guard flags & ~(version >= 2 ? 0x07 : 0x03) == 0 else {
            throw ByteReader.Malformed(what: "flags: unknown bits")
        }
        let remoteID = flags & 1 != 0 ? try r.string("remote_id") : nil
        let entry = flags & 2 != 0 ? nil : try readEntryBody(id: id, from: &r, withTags: true)
        let revision = version >= 2 ? try readRevision(from: &r) : 0
        return RemoteChange(
            origin: origin, remoteID: remoteID, entry: entry, entryID: id, revision: revision,
            conflict: flags & 4 != 0)
    }

    // MARK: - sync.pulled and remote.configured (about no entry: the all-zero id)

    static func writePull(_ pull: SyncPull, to w: inout ByteWriter) {
        w.u8(pull.destination.code)
        w.u8(pull.serverWentBack ? 1 : 0)
        w.varint(pull.cursor)
        w.varint(pull.serverRevision)
        w.varint(UInt64(pull.applied))
        w.string(pull.account ?? "")  // v2: the account's identity, empty when the server named none
    }

    static func readPull(version: UInt8, from r: inout ByteReader) throws(ByteReader.Malformed) -> SyncPull {
        let destination = try readDestination(from: &r)
        let flags = try r.u8()
        guard flags & ~0x01 == 0 else { throw ByteReader.Malformed(what: "flags: unknown bits") }
        let cursor = try readRevision(from: &r)
        let revision = try readRevision(from: &r)
        let applied = try r.varint()
        guard applied <= UInt64(Int32.max) else { throw ByteReader.Malformed(what: "applied: above 2³¹ − 1") }
        var account: String?
        if version >= 2 {
            let text = try r.string("account")
            guard text.isEmpty || SyncPull.isUsableAccount(text) else {
                throw ByteReader.Malformed(what: "account: not 1 to 64 visible ASCII characters")
            }
            account = text.isEmpty ? nil : text
        }
        return SyncPull(
            destination: destination, cursor: cursor, serverRevision: revision, applied: Int(applied),
            serverWentBack: flags & 1 != 0, account: account)
    }

    static func writeRemoteConfig(_ config: RemoteConfig, to w: inout ByteWriter) {
        w.u8(config.destination.code)
        w.u8(config.dialect.code)
        w.string(config.url)
        w.u8(config.capabilitySource.rawValue)
        w.u8(config.capabilities.rawValue)
    }

    static func readRemoteConfig(version: UInt8, from r: inout ByteReader) throws(ByteReader.Malformed) -> RemoteConfig
    {
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
        guard source != .unknown || capabilities.isEmpty, capabilities.isSubset(of: .ceiling(dialect)) else {
            throw ByteReader.Malformed(what: "capabilities: not possible for this dialect or source")
        }
        return RemoteConfig(
            destination: destination, url: url, dialect: dialect, capabilities: capabilities, source: source)
    }

    // MARK: - sync.merged: destination, flags (1 remote id, 2…16 the four versions), revisions, the versions

    static func writeMerge(_ merge: SyncMerge, to w: inout ByteWriter) {
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
    }

    static func readMerge(_ id: EntryID, from r: inout ByteReader) throws(ByteReader.Malformed) -> SyncMerge {
        let destination = try readDestination(from: &r)
        let flags = try r.u8()
        guard flags & ~0x1F == 0 else { throw ByteReader.Malformed(what: "flags: unknown bits") }
        guard flags & 0x0C != 0 else { throw ByteReader.Malformed(what: "flags: deleted on both sides is no merge") }
        let remoteID = flags & 1 != 0 ? try r.string("remote_id") : nil
        let serverRevision = try readRevision(from: &r)
        let baseRevision = try readRevision(from: &r)
        var versions: [MoodEntry?] = []
        for bit: UInt8 in [2, 4, 8, 16] {
            versions.append(flags & bit != 0 ? try readEntryBody(id: id, from: &r, withTags: true) : nil)
        }
        return SyncMerge(
            destination: destination, entryID: id, remoteID: remoteID, serverRevision: serverRevision,
            baseRevision: baseRevision, base: versions[0], here: versions[1], theirs: versions[2], merged: versions[3])
    }

    // MARK: - request.keyed, edit.replaced

    /// A request key: key string, fingerprint string, status varint, the answer's entry id (zeros: none).
    package static func writeRequestKey(_ key: RequestKey, to w: inout ByteWriter) {
        w.string(key.key)
        w.string(key.fingerprint)
        w.varint(UInt64(key.status))
        w.id(key.entryID ?? .none)
    }

    /// Reads ``writeRequestKey(_:to:)``'s bytes, checked against `request.keyed`'s rules.
    package static func readRequestKey(from r: inout ByteReader) throws(ByteReader.Malformed) -> RequestKey {
        let key = try r.string("key")
        let fingerprint = try r.string("fingerprint")
        let status = try r.varint()
        let id = try r.id()
        let request = RequestKey(
            key: key, fingerprint: fingerprint, status: Int(clamping: status), entryID: id == .none ? nil : id)
        if let broken = request.brokenRule { throw ByteReader.Malformed(what: broken) }
        return request
    }

    static func readReplacement(_ id: EntryID, from r: inout ByteReader) throws(ByteReader.Malformed) -> MoodEvent {
        let revision = try readRevision(from: &r)
        guard revision >= 1 else { throw ByteReader.Malformed(what: "revision: not 1 … 2⁶³ − 1") }
        let fields = MergeFields(rawValue: try r.u8())
        guard !fields.isEmpty else { throw ByteReader.Malformed(what: "fields: none named") }
        return .editReplaced(id, revision: revision, fields: fields)
    }

    // MARK: - conflict.resolved, entry.erased, ledger.erased

    static func writeResolution(_ fields: MergeFields, _ choice: ConflictChoice, to w: inout ByteWriter) {
        w.u8(fields.rawValue)
        w.u8(choice.rawValue)
    }

    static func readResolution(_ id: EntryID, from r: inout ByteReader) throws(ByteReader.Malformed) -> MoodEvent {
        let fields = MergeFields(rawValue: try r.u8())
        guard !fields.isEmpty else { throw ByteReader.Malformed(what: "fields: none named") }
        guard let choice = ConflictChoice(rawValue: try r.u8()) else {
            throw ByteReader.Malformed(what: "choice: unknown code")
        }
        return .conflictResolved(id, fields, choice)
    }

    /// An erasure's body: flags (bit 0 complete; for `ledger.erased`, bit 1 HealthKit's copies kept), reason,
    /// requested-by.
    static func writeErasure(_ erasure: Erasure, flags: UInt8, to w: inout ByteWriter) {
        w.u8(flags)
        w.string(erasure.reason)
        w.string(erasure.requestedBy)
    }

    static func readErasure(allowedFlags: UInt8, from r: inout ByteReader) throws(ByteReader.Malformed) -> Erasure {
        let flags = try r.u8()
        guard flags & ~allowedFlags == 0 else { throw ByteReader.Malformed(what: "flags: unknown bits") }
        let reason = try r.string("reason")
        return Erasure(
            reason: reason, requestedBy: try r.string("requested_by"), complete: flags & 1 != 0,
            keepsHealthKit: flags & 2 != 0)
    }
}
