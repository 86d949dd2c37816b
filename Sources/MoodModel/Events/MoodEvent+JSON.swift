extension MoodEvent {
    /// The event's payload for humans and exports (`data` in `moodledger events --json`).
    public var json: JSONValue {
        switch self {
        case .created(let entry):
            return entry.creationJSON
        case .updated(_, let update):
            var fields: [(String, JSONValue)] = []
            if let loggedAt = update.loggedAt {
                fields.append(("logged_at", .string(loggedAt.iso8601)))
                fields.append(("utc_offset_minutes", .int(Int64(loggedAt.utcOffsetMinutes))))
            }
            if let kind = update.kind { fields.append(("kind", .string(kind.wireName))) }
            if let valence = update.valence {
                fields.append(("valence", .optional(valence.value) { .double(Valence.display($0)) }))
            }
            if let score = update.enteredScore {
                fields.append(("score", .optional(score.value) { .int(Int64($0)) }))
            }
            if let notes = update.notes { fields.append(("notes", .optional(notes.value) { .string($0) })) }
            return .object([("changed", .object(fields))])
        case .labelsEdited(_, let labels): return .object([("labels", .array(labels.map { .string($0.wireName) }))])
        case .associationsEdited(_, let associations):
            return .object([("associations", .array(associations.map { .string($0.wireName) }))])
        case .tagsEdited(_, let tags): return .object([("tags", .array(tags.map { .string($0) }))])
        case .deleted: return .object([])
        case .syncAttempted(_, let destination, let operation, let key):
            return .object([
                ("destination", .string(destination.rawValue)), ("operation", .string(operation.rawValue)),
                ("idempotency_key", key.isEmpty ? .null : .string(key))
            ])
        case .syncSucceeded(_, let destination, let remoteID, let revision):
            return .object([
                ("destination", .string(destination.rawValue)), ("remote_id", .string(remoteID)),
                ("revision", revision == 0 ? .null : .int(Int64(revision)))
            ])
        case .syncFailed(_, let destination, let failure):
            return .object([
                ("destination", .string(destination.rawValue)),
                ("status", .optional(failure.status) { .int(Int64($0)) }),
                ("error", .string(failure.error)),
                ("retryable", .bool(failure.retryable)),
                (
                    "next_attempt_at",
                    .optional(failure.nextAttemptAt) { .string(ISO8601.format(milliseconds: $0, offsetMinutes: 0)) }
                )
            ])
        case .remoteApplied(let change):
            return .object([
                ("origin", .string(change.origin.rawValue)),
                ("remote_id", .optional(change.remoteID) { .string($0) }),
                ("operation", .string(change.entry == nil ? "delete" : "upsert")),
                ("entry", .optional(change.entry) { $0.creationJSON }),
                ("revision", change.revision == 0 ? .null : .int(Int64(change.revision))),
                ("conflict", .bool(change.conflict))
            ])
        case .syncPulled(let pull):
            return .object([
                ("destination", .string(pull.destination.rawValue)), ("cursor", .int(Int64(pull.cursor))),
                ("server_revision", .int(Int64(pull.serverRevision))), ("applied", .int(Int64(pull.applied))),
                ("server_went_back", .bool(pull.serverWentBack)), ("account", .optional(pull.account) { .string($0) })
            ])
        case .remoteConfigured(let config):
            return .object([
                ("destination", .string(config.destination.rawValue)), ("url", .string(config.url)),
                ("dialect", .string(config.dialect.rawValue)),
                ("capabilities", .array(config.capabilities.names.map { .string($0) })),
                ("capability_source", .string(config.capabilitySource.name))
            ])
        case .syncReleased(_, let destination):
            return .object([("destination", .string(destination.rawValue))])
        case .healthKitAnchored(let anchor):
            let digits = Array("0123456789abcdef")
            return .object([
                ("anchor", .string(String(anchor.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })))
            ])
        case .requestKeyed(let key):
            return .object([
                ("key", .string(key.key)), ("fingerprint", .string(key.fingerprint)),
                ("status", .int(Int64(key.status))), ("entry_id", .optional(key.entryID) { .string($0.description) })
            ])
        case .editReplaced(_, let revision, let fields):
            return .object([
                ("revision", .int(Int64(revision))), ("fields", .array(fields.names.map { .string($0) }))
            ])
        case .syncRequeued(_, let destination, let reason):
            return .object([("destination", .string(destination.rawValue)), ("reason", .string(reason))])
        case .entryErased(_, let erasure):
            return .object([
                ("reason", .string(erasure.reason)), ("requested_by", .string(erasure.requestedBy)),
                ("complete", .bool(erasure.complete))
            ])
        case .ledgerErased(let erasure):
            return .object([
                ("reason", .string(erasure.reason)), ("requested_by", .string(erasure.requestedBy)),
                ("complete", .bool(erasure.complete)), ("keeps_healthkit", .bool(erasure.keepsHealthKit))
            ])
        case .syncMerged(let merge):
            return .object([
                ("destination", .string(merge.destination.rawValue)),
                ("remote_id", .optional(merge.remoteID) { .string($0) }),
                ("server_revision", .int(Int64(merge.serverRevision))),
                ("base_revision", merge.baseRevision == 0 ? .null : .int(Int64(merge.baseRevision))),
                ("base", .optional(merge.base) { $0.creationJSON }),
                ("here", .optional(merge.here) { $0.creationJSON }),
                ("theirs", .optional(merge.theirs) { $0.creationJSON }),
                ("merged", .optional(merge.merged) { $0.creationJSON }),
                ("conflicts", .array(merge.conflicts.names.map { .string($0) }))
            ])
        case .conflictResolved(_, let fields, let choice):
            return .object([
                ("fields", .array(fields.names.map { .string($0) })),
                ("take", .string(choice == .here ? "here" : "server"))
            ])
        case .redacted: return .object([("redacted", .bool(true))])
        }
    }
}

extension RecordedEvent {
    /// One line of `moodledger events --json`: seq, recorded_at, type, entry_id, command_id, offset, size, data.
    public var json: JSONValue {
        .object([
            ("seq", .int(Int64(seq))),
            ("recorded_at", .string(ISO8601.format(milliseconds: recordedAtMilliseconds, offsetMinutes: 0))),
            ("type", .string(event.type.name)),
            ("entry_id", .string(event.entryID.description)),
            ("command_id", .string(commandID.description)),
            ("offset", .int(offset)),
            ("size", .int(Int64(size))),
            ("data", event.json)
        ])
    }
}
