import MoodLedger

/// One HTTP request of a sync run, before credentials are added.
public struct SyncRequest: Sendable, Equatable {
    public var method: String
    /// The path below the remote's prefix, with its query.
    public var path: String
    /// The JSON body, if any.
    public var body: [UInt8]?
    /// The `Idempotency-Key` (writes only).
    public var idempotencyKey: String?

    /// Creates a request.
    public init(method: String, path: String, body: [UInt8]? = nil, idempotencyKey: String? = nil) {
        self.method = method
        self.path = path
        self.body = body
        self.idempotencyKey = idempotencyKey
    }
}

/// How a send of one outbox item maps onto a backend dialect's routes, and what cannot be sent at all
/// (`Specs/sync.md`, *Dialects*). Each dialect is a small codec: entry → request, response → remote id.
public struct SyncDialect: Sendable {
    /// The dialect.
    public var dialect: RemoteDialect

    /// Creates the codec of a dialect.
    public init(_ dialect: RemoteDialect) { self.dialect = dialect }

    /// The collection route.
    var collection: String {
        switch dialect {
        case .moodAPI: return "/api/v1/mood"
        case .wellness: return "/api/v1/wellness/mood-entries"
        case .progress: return "/api/v1/progress"
        }
    }

    /// Why an operation can never be sent in this dialect (the item is parked with this reason), or `nil`.
    public func unsendable(_ operation: SyncOperation, entry: MoodEntry?) -> String? {
        guard dialect == .progress else { return nil }
        if operation != .create {
            return "the progress dialect cannot \(operation.rawValue): /api/v1/progress only creates records"
        }
        if let entry, entry.valence == nil, entry.enteredScore == nil {
            return "the progress dialect carries a 1–10 quantity: this entry has labels only"
        }
        return nil
    }

    /// The request that performs `operation` for `entry` (its current state; `nil` for a delete).
    public func request(_ operation: SyncOperation, entryID: EntryID, entry: MoodEntry?, remoteID: String?,
                        key: String) -> SyncRequest {
        let item = "\(collection)/\(Self.escape(remoteID ?? entryID.description))"
        switch operation {
        case .create:
            return SyncRequest(method: "POST", path: collection, body: entry.map { body(for: $0, create: true) }, idempotencyKey: key)
        case .update:
            return SyncRequest(method: "PUT", path: item, body: entry.map { body(for: $0, create: false) }, idempotencyKey: key)
        case .delete:
            return SyncRequest(method: "DELETE", path: item, body: nil, idempotencyKey: key)
        }
    }

    /// The changes feed (mood-api only: the seed documents no feed for the other dialects).
    public func changesPath(since cursor: UInt64, limit: Int) -> String? {
        dialect == .moodAPI ? "/api/v1/mood/changes?since=\(cursor)&limit=\(limit)" : nil
    }

    /// The request body: every field of the entry, in the API's names. A typed 1–10 score is sent as `score` (its
    /// valence is its exact translation); otherwise the valence.
    func body(for entry: MoodEntry, create: Bool) -> [UInt8] {
        if dialect == .progress {
            let quantity = entry.enteredScore ?? entry.score ?? 5
            return JSONValue.object([
                ("type", .string("mood_score")), ("quantity", .int(Int64(quantity))),
                ("logged_at", .string(entry.loggedAt.iso8601)), ("notes", .optional(entry.notes) { .string($0) }),
            ]).serializedBytes()
        }
        var pairs: [(String, JSONValue)] = []
        if create { pairs.append(("id", .string(entry.id.description))) }
        pairs.append(("logged_at", .string(entry.loggedAt.iso8601)))
        pairs.append(("utc_offset_minutes", .int(Int64(entry.loggedAt.utcOffsetMinutes))))
        pairs.append(("kind", .string(entry.kind.wireName)))
        if let score = entry.enteredScore {
            pairs.append(("score", .int(Int64(score))))
        } else if let valence = entry.valence {
            pairs.append(("valence", .double(Valence.display(valence))))
        }
        // The seed: `labels` must hold at least one item when given; an update may clear them.
        if !entry.labels.isEmpty || !create { pairs.append(("labels", .array(entry.labels.map { .string($0.wireName) }))) }
        pairs.append(("associations", .array(entry.associations.map { .string($0.wireName) })))
        pairs.append(("tags", .array(entry.tags.map { .string($0) })))
        pairs.append(("notes", .optional(entry.notes) { .string($0) }))
        if create {
            pairs.append(("source", .string(entry.source.rawValue)))
            if let sourceID = entry.sourceID { pairs.append(("source_id", .string(sourceID))) }
        }
        return JSONValue.object(pairs).serializedBytes()
    }

    /// Percent-encodes a path segment (unreserved characters kept).
    static func escape(_ segment: String) -> String {
        var out = ""
        for byte in segment.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let digits = Array("0123456789ABCDEF")
                out += "%\(digits[Int(byte >> 4)])\(digits[Int(byte & 15)])"
            }
        }
        return out
    }
}
