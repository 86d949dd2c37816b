/// The scalar fields an update changed, with their new values (see `Specs/events.md`).
public struct MoodUpdate: Sendable, Equatable {
    public var loggedAt: LoggedAt?
    public var kind: MoodKind?
    public var valence: FieldChange<Double>?
    public var enteredScore: FieldChange<Int>?
    public var notes: FieldChange<String>?

    /// Creates an update.
    public init(
        loggedAt: LoggedAt? = nil, kind: MoodKind? = nil, valence: FieldChange<Double>? = nil,
        enteredScore: FieldChange<Int>? = nil, notes: FieldChange<String>? = nil
    ) {
        self.loggedAt = loggedAt
        self.kind = kind
        self.valence = valence
        self.enteredScore = enteredScore
        self.notes = notes
    }

    /// Whether nothing changes.
    public var isEmpty: Bool {
        loggedAt == nil && kind == nil && valence == nil && enteredScore == nil && notes == nil
    }

    /// Applies the update to an entry.
    package func apply(to entry: inout MoodEntry) {
        if let loggedAt { entry.loggedAt = loggedAt }
        if let kind { entry.kind = kind }
        if let valence { entry.valence = valence.value }
        if let enteredScore { entry.enteredScore = enteredScore.value }
        if let notes { entry.notes = notes.value }
    }
}

/// What an outbox operation does at its destination.
public enum SyncOperation: String, Sendable, CaseIterable {
    case create, update, delete

    /// The on-disk code (`Specs/events.md`): 0 create, 1 update, 2 delete. Written out, never derived from the
    /// order of the cases.
    package var code: UInt8 {
        switch self {
        case .create: 0
        case .update: 1
        case .delete: 2
        }
    }

    package init?(code: UInt8) {
        switch code {
        case 0: self = .create
        case 1: self = .update
        case 2: self = .delete
        default: return nil
        }
    }
}

/// Why a sync attempt failed.
public struct SyncFailure: Sendable, Equatable {
    /// The HTTP-like status, if the destination answered.
    public var status: Int?
    /// The error text (never contains notes).
    public var error: String
    /// Whether trying again may help; `false` parks the item as failed.
    public var retryable: Bool
    /// When the sender chose to try again (ms since 1970), drawn at send time so replay reproduces it; `nil` in
    /// version-1 events, whose retry time the fold computes with the old rule.
    public var nextAttemptAt: Int64?

    /// Creates a failure.
    public init(status: Int? = nil, error: String, retryable: Bool, nextAttemptAt: Int64? = nil) {
        self.status = status
        self.error = error
        self.retryable = retryable
        self.nextAttemptAt = nextAttemptAt
    }
}

/// The backend API dialect a remote speaks (`Specs/sync.md`).
public enum RemoteDialect: String, Sendable, CaseIterable {
    case moodAPI = "mood-api"
    case wellness
    case progress

    /// The on-disk code (`Specs/events.md`, `remote.configured`): 0 mood-api, 1 wellness, 2 progress.
    package var code: UInt8 {
        switch self {
        case .moodAPI: 0
        case .wellness: 1
        case .progress: 2
        }
    }

    package init?(code: UInt8) {
        switch code {
        case 0: self = .moodAPI
        case 1: self = .wellness
        case 2: self = .progress
        default: return nil
        }
    }
}

/// What a remote can do beyond its dialect's documented routes (`Specs/sync.md`, *Capabilities*).
public struct RemoteCapabilities: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A changes feed (`GET /api/v1/mood/changes`): remote changes can be pulled.
    public static let changes = RemoteCapabilities(rawValue: 1)
    /// Revisions: `ETag` on answers and `If-Match` honoured (412 on a stale base).
    public static let revisions = RemoteCapabilities(rawValue: 2)
    /// An update route (`PUT …/{id}`).
    public static let update = RemoteCapabilities(rawValue: 4)
    /// A delete route (`DELETE …/{id}`).
    public static let delete = RemoteCapabilities(rawValue: 8)
    /// The reference server's extension fields (`id`, `kind`, `utc_offset_minutes`, `score`, `tags`, custom words).
    public static let extensions = RemoteCapabilities(rawValue: 16)
    /// A batch write route (`POST /api/v1/mood/batch`): many creates, updates and deletes in one request, an answer
    /// per item (`Specs/server.md`, *Batch writes*).
    public static let batch = RemoteCapabilities(rawValue: 32)

    /// Every capability, with its name on the command line and in JSON.
    public static let named: [(name: String, capability: RemoteCapabilities)] = [
        ("changes", .changes), ("revisions", .revisions), ("update", .update), ("delete", .delete),
        ("extensions", .extensions), ("batch", .batch)
    ]
    /// Every bit a capability set may have.
    public static let all = RemoteCapabilities(rawValue: 0x3F)

    /// The capabilities' names, in ``named`` order.
    public var names: [String] { Self.named.filter { contains($0.capability) }.map(\.name) }

    /// What a remote that speaks exactly its seed's documents has: seed 001's mood API documents no update, delete
    /// or changes route; seed 002's wellness API documents update and delete; the progress API only creates.
    public static func seed(_ dialect: RemoteDialect) -> RemoteCapabilities {
        dialect == .wellness ? [.update, .delete] : []
    }

    /// The most a dialect can use: the progress dialect has no item route, so it only ever creates.
    public static func ceiling(_ dialect: RemoteDialect) -> RemoteCapabilities {
        dialect == .progress ? [.extensions] : all
    }
}

/// How the client came to believe what a remote can do.
public enum CapabilitySource: UInt8, Sendable {
    /// Not learned yet: the next sync asks the remote.
    case unknown = 0
    /// The remote answered `GET /api/v1/capabilities` (or did not have the route: its seed's documented set).
    case probed = 1
    /// Set by the user (`remote set … --capabilities`).
    case set = 2

    /// The name shown by `remote show` and in JSON.
    public var name: String {
        switch self {
        case .unknown: return "unknown"
        case .probed: return "probed"
        case .set: return "set"
        }
    }
}

/// Which server a destination is: recorded in the log so time travel shows where entries were sent and what the
/// client believed the server could do. Never holds credentials.
public struct RemoteConfig: Sendable, Equatable {
    /// The destination configured (always `backend` today).
    public var destination: SyncDestination
    /// The server's base URL, e.g. `http://127.0.0.1:8080`.
    public var url: String
    /// The API dialect.
    public var dialect: RemoteDialect
    /// What the remote can do beyond its dialect's documented routes (empty until learned).
    public var capabilities: RemoteCapabilities
    /// Whether the capabilities were probed, set by the user, or are not known yet.
    public var capabilitySource: CapabilitySource

    /// Creates a configuration.
    /// - Parameters:
    ///   - destination: the destination (`backend`).
    ///   - url: the canonical base URL.
    ///   - dialect: the API dialect.
    ///   - capabilities: what the remote can do (ignored, and empty, while `source` is `unknown`).
    ///   - source: how the capabilities were learned. Default `unknown`: the next sync probes.
    public init(
        destination: SyncDestination = .backend, url: String, dialect: RemoteDialect,
        capabilities: RemoteCapabilities = [], source: CapabilitySource = .unknown
    ) {
        self.destination = destination
        self.url = url
        self.dialect = dialect
        self.capabilities = source == .unknown ? [] : capabilities.intersection(.ceiling(dialect))
        self.capabilitySource = source
    }

    /// Whether this is the same server (URL and dialect) as `other`, whatever either believes it can do.
    public func sameServer(as other: RemoteConfig) -> Bool {
        destination == other.destination && url == other.url && dialect == other.dialect
    }

    /// Whether the remote is known to have `capability`.
    public func has(_ capability: RemoteCapabilities) -> Bool { capabilities.contains(capability) }
}

/// A pull from a destination finished: its changes were applied (they precede this event), and the cursor moved.
public struct SyncPull: Sendable, Equatable {
    /// The destination pulled.
    public var destination: SyncDestination
    /// The cursor to pull from next time (the server revision the changes reach).
    public var cursor: UInt64
    /// The server's revision when it answered.
    public var serverRevision: UInt64
    /// How many changes the pull applied.
    public var applied: Int
    /// The server's revision was below the cursor: it went back (restored from a backup), or its account is
    /// another one than the one this device synced with.
    public var serverWentBack: Bool
    /// The identity of the account the server answered for (`MoodLedger-Account`), when it names one: an account
    /// erased and created again under the same name is another account (`Specs/sync.md`, *The account*).
    public var account: String?

    /// Creates a pull record.
    public init(
        destination: SyncDestination = .backend, cursor: UInt64, serverRevision: UInt64, applied: Int,
        serverWentBack: Bool = false, account: String? = nil
    ) {
        self.destination = destination
        self.cursor = cursor
        self.serverRevision = serverRevision
        self.applied = applied
        self.serverWentBack = serverWentBack
        self.account = account
    }

    /// Whether an account identity may be kept: 1 to 64 visible ASCII characters.
    public static func isUsableAccount(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 64 && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}

/// A change pulled from a destination and applied locally.
public struct RemoteChange: Sendable, Equatable {
    /// Where it came from (never sent back there).
    public var origin: SyncDestination
    /// The destination's id for the entry, if known.
    public var remoteID: String?
    /// The new state of the entry, or `nil` when the remote side deleted it.
    public var entry: MoodEntry?
    /// The entry concerned.
    public var entryID: EntryID
    /// The server revision of the change (0 = unknown, version 1).
    public var revision: UInt64
    /// The entry had unsent local changes (`Specs/sync.md`, *Conflicts*): an upsert is recorded but not applied
    /// (the local change stays pending and, sent later, wins by landing later); a deletion is applied and the local
    /// change dropped.
    public var conflict: Bool

    /// Creates a remote change: `entry` is the new state (its content: its created and updated times are the
    /// ledger's, which the record does not carry), or `nil` for a deletion of `entryID`.
    public init(
        origin: SyncDestination, remoteID: String?, entry: MoodEntry?, entryID: EntryID, revision: UInt64 = 0,
        conflict: Bool = false
    ) {
        self.origin = origin
        self.remoteID = remoteID
        self.entry = entry.map(\.bodyContent)
        self.entryID = entryID
        self.revision = revision
        self.conflict = conflict
    }
}

/// One event of the catalog in `Specs/events.md`.
public enum MoodEvent: Sendable, Equatable {
    case created(MoodEntry)
    case updated(EntryID, MoodUpdate)
    case labelsEdited(EntryID, [MoodLabel])
    case associationsEdited(EntryID, [MoodAssociation])
    case tagsEdited(EntryID, [String])
    case deleted(EntryID)
    /// A send began; `key` is the request's `Idempotency-Key` ("" in version 1).
    case syncAttempted(EntryID, SyncDestination, SyncOperation, key: String)
    /// The destination acknowledged; `revision` is its revision of the change (0 = unknown).
    case syncSucceeded(EntryID, SyncDestination, remoteID: String, revision: UInt64)
    case syncFailed(EntryID, SyncDestination, SyncFailure)
    /// Held out of line, as `sync.merged` is: the two are the largest payloads (a whole entry and more), and an
    /// inline one would make every event, however small, as large as they are.
    indirect case remoteApplied(RemoteChange)
    /// A pull finished (entry id: all zero).
    case syncPulled(SyncPull)
    /// The backend was configured (entry id: all zero).
    case remoteConfigured(RemoteConfig)
    /// The destination lost an entry it had acknowledged: it is queued to be created there again.
    case syncRequeued(EntryID, SyncDestination, reason: String)
    /// The entry's personal data is erased (`Specs/erasure.md`): it is gone, and every earlier record about it is
    /// (or, until `complete`, is still to be) rewritten as a redacted record.
    case entryErased(EntryID, Erasure)
    /// Every entry's personal data is erased at once (`Specs/erasure.md`, *Erasing everything*; entry id: all zero):
    /// the entries are gone (but HealthKit's copies when ``Erasure/keepsHealthKit``), and every earlier record about
    /// them is (or, until `complete`, is still to be) rewritten as a redacted record.
    case ledgerErased(Erasure)
    /// A record whose payload was redacted by an erasure: only its type, entry id and (sync events) destination remain.
    case redacted(EntryID, Redaction)
    /// The entry was merged three ways with a destination's version (`Specs/sync.md`, *Merging*).
    indirect case syncMerged(SyncMerge)
    /// The user chose a side for the entry's open conflicts on these fields (any value change is its own edit event).
    case conflictResolved(EntryID, MergeFields, ConflictChoice)
    /// The user released the entry's parked item for the destination (`moodledger sync --retry-parked`): due now,
    /// its attempts and failure streak start again (`Specs/sync.md`, *Parking and its release*).
    case syncReleased(EntryID, SyncDestination)
    /// A HealthKit pull's anchor: where the next anchored query starts (the health store's opaque bytes: an archived
    /// `HKQueryAnchor`), recorded with the pull's deletions (`Specs/imports-exports.md`, *HealthKit*).
    case healthKitAnchored([UInt8])
    /// A server stored a request's idempotency key with the change the request made, last in that change's batch
    /// (`Specs/server.md`, *Idempotency-Key*; entry id: all zero, the answer's entry is in the key).
    case requestKeyed(RequestKey)
    /// The change of this batch replaced another device's concurrent edit of the entry: that device's server
    /// `revision` and the fields that were in conflict (`Specs/server.md`, *Replaced edits*).
    case editReplaced(EntryID, revision: UInt64, fields: MergeFields)

    /// The entry the event concerns.
    public var entryID: EntryID {
        switch self {
        case .created(let entry): return entry.id
        case .updated(let id, _), .labelsEdited(let id, _), .associationsEdited(let id, _), .tagsEdited(let id, _),
            .deleted(let id), .syncAttempted(let id, _, _, _), .syncSucceeded(let id, _, _, _),
            .syncFailed(let id, _, _),
            .syncRequeued(let id, _, _), .entryErased(let id, _), .redacted(let id, _), .conflictResolved(let id, _, _),
            .syncReleased(let id, _), .editReplaced(let id, _, _):
            return id
        case .remoteApplied(let change): return change.entryID
        case .syncMerged(let merge): return merge.entryID
        case .syncPulled, .remoteConfigured, .ledgerErased, .healthKitAnchored, .requestKeyed: return EntryID.none
        }
    }

    /// The catalog type, e.g. `mood.created`.
    public var type: EventType {
        switch self {
        case .created: return .created
        case .updated: return .updated
        case .labelsEdited: return .labelsEdited
        case .associationsEdited: return .associationsEdited
        case .tagsEdited: return .tagsEdited
        case .deleted: return .deleted
        case .syncAttempted: return .syncAttempted
        case .syncSucceeded: return .syncSucceeded
        case .syncFailed: return .syncFailed
        case .remoteApplied: return .remoteApplied
        case .syncPulled: return .syncPulled
        case .remoteConfigured: return .remoteConfigured
        case .syncRequeued: return .syncRequeued
        case .syncReleased: return .syncReleased
        case .healthKitAnchored: return .healthKitAnchored
        case .requestKeyed: return .requestKeyed
        case .editReplaced: return .editReplaced
        case .entryErased: return .entryErased
        case .ledgerErased: return .ledgerErased
        case .syncMerged: return .syncMerged
        case .conflictResolved: return .conflictResolved
        case .redacted(_, let redaction): return redaction.type
        }
    }
}

/// What a redacted record keeps: its type, and for the sync events their destination (so the destination's last
/// success and error times replay the same).
public struct Redaction: Sendable, Equatable {
    public var type: EventType
    public var destination: SyncDestination?

    /// Creates a redaction.
    public init(type: EventType, destination: SyncDestination? = nil) {
        self.type = type
        self.destination = destination
    }
}

/// Why and by whom an entry was erased; never personal data.
public struct Erasure: Sendable, Equatable {
    /// The person's stated reason (may be empty).
    public var reason: String
    /// What asked: `cli`, `server`, `account`.
    public var requestedBy: String
    /// Whether every earlier record about the entry has been rewritten as redacted.
    public var complete: Bool
    /// For an erasure of every entry (`ledger.erased`): whether the entries whose source is HealthKit stay (their
    /// samples live in the Health app). Always false for one entry's.
    public var keepsHealthKit: Bool

    /// Creates an erasure.
    public init(reason: String, requestedBy: String, complete: Bool = false, keepsHealthKit: Bool = false) {
        self.reason = reason
        self.requestedBy = requestedBy
        self.complete = complete
        self.keepsHealthKit = keepsHealthKit
    }

    /// Whether an erasure of every entry leaves this entry as it is: a HealthKit copy, when it keeps them (their
    /// samples live in the Health app). The one rule of the fold, the rewrite and the commands that ask first.
    public func keeps(_ entry: MoodEntry?) -> Bool { keepsHealthKit && entry?.source == .healthkit }
}

/// The event types: their wire names, record type codes and current schema versions.
public enum EventType: UInt16, Sendable, CaseIterable {
    // The record type codes of `Specs/events.md`'s catalog, each written out: reordering the cases changes nothing.
    case created = 1
    case updated = 2
    case labelsEdited = 3
    case associationsEdited = 4
    case tagsEdited = 5
    case deleted = 6
    case syncAttempted = 7
    case syncSucceeded = 8
    case syncFailed = 9
    case remoteApplied = 10
    case syncPulled = 11
    case remoteConfigured = 12
    case syncRequeued = 13
    case entryErased = 14
    case syncMerged = 15
    case conflictResolved = 16
    case ledgerErased = 17
    case syncReleased = 18
    case healthKitAnchored = 19
    case requestKeyed = 20
    case editReplaced = 21

    /// The type's line of `Specs/events.md`'s catalog: its name, the schema version this code writes, and whether
    /// its events concern no entry (their entry id is all zero). A new type is a case above (its code) and a line
    /// here; its body's writer and reader go in `EventCodec+Bodies.swift`.
    private var catalog: (name: String, version: UInt8, namesNoEntry: Bool) {
        switch self {
        case .created: ("mood.created", 2, false)
        case .updated: ("mood.updated", 1, false)
        case .labelsEdited: ("mood.labels_edited", 1, false)
        case .associationsEdited: ("mood.associations_edited", 1, false)
        case .tagsEdited: ("mood.tags_edited", 1, false)
        case .deleted: ("mood.deleted", 1, false)
        case .syncAttempted: ("sync.attempted", 2, false)
        case .syncSucceeded: ("sync.succeeded", 2, false)
        case .syncFailed: ("sync.failed", 2, false)
        case .remoteApplied: ("remote.applied", 2, false)
        case .syncPulled: ("sync.pulled", 2, true)
        case .remoteConfigured: ("remote.configured", 2, true)
        case .syncRequeued: ("sync.requeued", 1, false)
        case .entryErased: ("entry.erased", 1, false)
        case .syncMerged: ("sync.merged", 1, false)
        case .conflictResolved: ("conflict.resolved", 1, false)
        case .ledgerErased: ("ledger.erased", 1, true)
        case .syncReleased: ("sync.released", 1, false)
        case .healthKitAnchored: ("healthkit.anchored", 1, true)
        case .requestKeyed: ("request.keyed", 1, true)
        case .editReplaced: ("edit.replaced", 1, false)
        }
    }

    /// The catalog name, e.g. `mood.labels_edited`.
    public var name: String { catalog.name }

    /// Whether events of this type concern no entry: their entry id is all zero (`Specs/events.md`).
    var namesNoEntry: Bool { catalog.namesNoEntry }

    /// The schema version this code writes.
    public var currentVersion: UInt8 { catalog.version }

    /// Parses a catalog name.
    public init?(name: String) {
        guard let type = EventType.allCases.first(where: { $0.name == name }) else { return nil }
        self = type
    }
}

/// An event as read back from the log: where it is, when it was recorded and which command wrote it.
public struct RecordedEvent: Sendable, Equatable {
    /// Sequence number in the log.
    public var seq: UInt64
    /// When the log recorded it, microseconds since 1970.
    public var recordedAt: Int64
    /// The command that appended it (one command may append several events).
    public var commandID: EntryID
    /// The event.
    public var event: MoodEvent
    /// Byte offset of the record in the log file.
    public var offset: Int64
    /// Size of the record on disk.
    public var size: Int

    /// Creates a recorded event.
    public init(
        seq: UInt64, recordedAt: Int64, commandID: EntryID, event: MoodEvent, offset: Int64 = 0,
        size: Int = 0
    ) {
        self.seq = seq
        self.recordedAt = recordedAt
        self.commandID = commandID
        self.event = event
        self.offset = offset
        self.size = size
    }

    /// Milliseconds since 1970 (what entries' createdAt / updatedAt hold).
    public var recordedAtMilliseconds: Int64 { recordedAt.floorDivided(by: 1000) }
}
