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
    /// The `If-Match` entity tag: the base revision of a conditional update or delete.
    public var ifMatch: String?
    /// Most bytes the answer may have, head and body (``SyncLimits``).
    public var maximumResponseBytes: Int
    /// `MoodLedger-Replaces`: the revision and fields of another device's edit this write replaces (a merge's
    /// conflicts, sent to the reference server so that the other device learns it; `Specs/sync.md`).
    public var replaces: String?

    /// Creates a request.
    /// - Parameters:
    ///   - method: the HTTP method.
    ///   - path: the path below the remote's prefix, with its query.
    ///   - body: the JSON body.
    ///   - idempotencyKey: the write's key.
    ///   - ifMatch: the entity tag a conditional write carries.
    ///   - maximumResponseBytes: the answer's byte budget (default: one entry's, ``SyncLimits/entryAnswerBytes``).
    public init(
        method: String, path: String, body: [UInt8]? = nil, idempotencyKey: String? = nil, ifMatch: String? = nil,
        maximumResponseBytes: Int = SyncLimits.entryAnswerBytes
    ) {
        self.method = method
        self.path = path
        self.body = body
        self.idempotencyKey = idempotencyKey
        self.ifMatch = ifMatch
        self.maximumResponseBytes = maximumResponseBytes
        self.replaces = nil
    }
}

/// How a send of one outbox item maps onto a backend dialect's routes, and what a remote cannot carry
/// (`Specs/sync.md`, *Dialects* and *Capabilities*). Each dialect is a small codec: entry → request, response →
/// remote id. Without the `extensions` capability a request body holds exactly the fields its seed documents.
public struct SyncDialect: Sendable {
    /// The remote: its dialect and what it is believed to do.
    public var remote: RemoteConfig

    /// Creates the codec of a remote.
    public init(_ remote: RemoteConfig) { self.remote = remote }

    /// The dialect.
    public var dialect: RemoteDialect { remote.dialect }

    /// The collection route.
    var collection: String {
        switch dialect {
        case .moodAPI: return "/api/v1/mood"
        case .wellness: return "/api/v1/wellness/mood-entries"
        case .progress: return "/api/v1/progress"
        }
    }

    /// Why an operation cannot be carried to this remote at all, or `nil`. Such an item is **held**: not sent, no
    /// event appended, listed by `sync status` with this reason, and due again by itself once the remote is
    /// believed to carry it (`remote set … --capabilities`).
    public func held(_ operation: SyncOperation, entry: MoodEntry?) -> String? {
        switch operation {
        case .update where !remote.has(.update):
            return dialect == .progress
                ? "the progress dialect cannot update: /api/v1/progress only creates records"
                : "the remote has no update route (\(dialect.rawValue) as documented): the change stays here"
        case .delete where !remote.has(.delete):
            return dialect == .progress
                ? "the progress dialect cannot delete: /api/v1/progress only creates records"
                : "the remote has no delete route (\(dialect.rawValue) as documented): the deletion stays here"
        case .delete: return nil
        default: break
        }
        guard let entry, entry.valence == nil else { return nil }
        switch dialect {
        case .progress: return "the progress dialect carries a 1–10 quantity: this entry has labels only"
        case .wellness where !remote.has(.extensions):
            return "the wellness dialect requires a valence: this entry has labels only"
        default: return nil
        }
    }

    /// What of an entry this remote does not keep although the entry is sent (it is sent without it), as short
    /// field descriptions; empty when everything is carried.
    public func notCarried(_ entry: MoodEntry) -> [String] {
        if remote.has(.extensions) && dialect != .progress { return [] }
        var lost: [String] = []
        switch dialect {
        case .progress:
            if !entry.labels.isEmpty { lost.append("labels") }
            if !entry.associations.isEmpty { lost.append("associations") }
            if entry.enteredScore == nil, entry.valence != nil { lost.append("valence (sent as its 1–10 score)") }
        case .wellness:
            let labels = entry.labels.filter { Self.wellnessWord($0) == nil }.count
            let associations = entry.associations.filter { Self.wellnessWord($0) == nil }.count
            if labels > 0 {
                lost.append("\(labels) custom label\(labels == 1 ? "" : "s") (the seed's labels are a fixed list)")
            }
            if associations > 0 {
                lost.append(
                    "\(associations) custom association\(associations == 1 ? "" : "s") (the seed's associations are a fixed list)"
                )
            }
        case .moodAPI: break
        }
        if !entry.tags.isEmpty { lost.append("tags") }
        return lost
    }

    /// What this remote keeps of no entry (stated once by `sync status`, not per entry).
    public var neverCarried: [String] {
        if remote.has(.extensions) && dialect != .progress { return [] }
        return dialect == .progress
            ? ["kind", "UTC offset", "labels", "associations", "tags"] : ["kind", "UTC offset", "tags"]
    }

    /// The request that performs `operation` for `entry` (its state at the attempt; `nil` for a delete). An update
    /// or delete to a remote with revisions is conditional on `baseRevision` (`If-Match`), when it is known.
    public func request(
        _ operation: SyncOperation, entryID: EntryID, entry: MoodEntry?, remoteID: String?,
        key: String, baseRevision: UInt64 = 0
    ) -> SyncRequest {
        let item = "\(collection)/\(Self.escape(remoteID ?? entryID.description))"
        let condition = remote.has(.revisions) && baseRevision > 0 ? "\"\(baseRevision)\"" : nil
        switch operation {
        case .create:
            return SyncRequest(
                method: "POST", path: collection, body: entry.map { body(for: $0, create: true) }, idempotencyKey: key)
        case .update:
            return SyncRequest(
                method: "PUT", path: item, body: entry.map { body(for: $0, create: false) }, idempotencyKey: key,
                ifMatch: condition)
        case .delete:
            return SyncRequest(method: "DELETE", path: item, body: nil, idempotencyKey: key, ifMatch: condition)
        }
    }

    /// The item read of a remote with revisions: its current version and `ETag` (after a 412).
    public func itemPath(remoteID: String) -> String { "\(collection)/\(Self.escape(remoteID))" }

    /// The changes feed, for a remote that has one.
    public func changesPath(since cursor: UInt64, limit: Int) -> String? {
        remote.has(.changes) ? "/api/v1/mood/changes?since=\(cursor)&limit=\(limit)" : nil
    }

    /// The request body in the dialect's documented shape.
    func body(for entry: MoodEntry, create: Bool) -> [UInt8] {
        if dialect == .progress { return progressBody(entry) }
        if remote.has(.extensions) { return extendedBody(entry, create: create) }
        return dialect == .wellness ? wellnessBody(entry) : moodAPIBody(entry, create: create)
    }

    /// Seed 004's `{type, quantity, logged_at, notes}`: the typed score, else the score derived from the valence.
    private func progressBody(_ entry: MoodEntry) -> [UInt8] {
        var pairs: [(String, JSONValue)] = [
            ("type", .string("mood_score")),
            ("quantity", .int(Int64(entry.enteredScore ?? entry.score ?? 5))),
            ("logged_at", .string(entry.loggedAt.iso8601))
        ]
        if let notes = entry.notes { pairs.append(("notes", .string(notes))) }
        return JSONValue.object(pairs).serializedBytes()
    }

    /// Seed 001's create body: `valence`, `labels` (left out when empty: at least one when given), `associations`,
    /// `logged_at`, `source`, `source_id`, `notes`. Its handler deduplicates by `source_id`, so an entry without one
    /// sends its own id there: a create resent after a lost answer is answered with the entry it made the first time.
    private func moodAPIBody(_ entry: MoodEntry, create: Bool) -> [UInt8] {
        var pairs: [(String, JSONValue)] = []
        if let valence = Self.valence(entry) { pairs.append(("valence", .double(valence))) }
        if !entry.labels.isEmpty { pairs.append(("labels", .array(entry.labels.map { .string($0.wireName) }))) }
        pairs.append(("associations", .array(entry.associations.map { .string($0.wireName) })))
        pairs.append(("logged_at", .string(entry.loggedAt.iso8601)))
        pairs.append(
            (
                "source",
                .string(
                    entry.source == .healthkit ? "healthkit" : entry.source == .aiAnalysis ? "ai_analysis" : "manual")
            ))
        if create { pairs.append(("source_id", .string(entry.sourceID ?? entry.id.description))) }
        if let notes = entry.notes {
            pairs.append(("notes", .string(notes)))
        } else if !create {
            pairs.append(("notes", .null))
        }
        return JSONValue.object(pairs).serializedBytes()
    }

    /// Seed 002's `CreateMoodRequest` (also its update body): `valence`, `labels`, `associations` (Apple's words in
    /// the seed's camelCase; custom words are not in its fixed lists), `notes`, `logged_at`, `source`.
    private func wellnessBody(_ entry: MoodEntry) -> [UInt8] {
        var pairs: [(String, JSONValue)] = [("valence", .double(Self.valence(entry) ?? 0))]
        func words<D>(_ list: [VocabularyWord<D>]) -> JSONValue {
            var seen: [String] = []
            for word in list {
                if let spelled = Self.wellnessWord(word), !seen.contains(spelled) { seen.append(spelled) }
            }
            return .array(seen.map { .string($0) })
        }
        pairs.append(("labels", words(entry.labels)))
        pairs.append(("associations", words(entry.associations)))
        pairs.append(("notes", .optional(entry.notes) { .string($0) }))
        pairs.append(("logged_at", .string(entry.loggedAt.iso8601)))
        pairs.append(("source", .string(entry.source == .healthkit ? "healthkit" : "manual")))
        return JSONValue.object(pairs).serializedBytes()
    }

    /// The words seed 002's fixed lists hold beyond Apple's: sent as themselves.
    static let wellnessOwnWords: Set<String> = ["energetic", "tired", "social", "finances"]

    /// How a word goes to seed 002: an Apple word in its spelling (``wellnessSpelling(_:)``), one of the seed's own
    /// words as itself, anything else `nil` (not in its fixed lists: left out, said per entry).
    static func wellnessWord<D>(_ word: VocabularyWord<D>) -> String? {
        if !word.isCustom { return wellnessSpelling(word.name) }
        return wellnessOwnWords.contains(word.name) ? word.name : nil
    }

    /// The seed 002 spelling of an Apple word: the words its documents list for the same meaning (`tired` for
    /// drained, `social` for friends, `finances` for money; read back as the same words), else Apple's camelCase name.
    public static func wellnessSpelling(_ name: String) -> String {
        switch name {
        case "drained": return "tired"
        case "friends": return "social"
        case "money": return "finances"
        default: return name
        }
    }

    /// A word as seed 002 spells it, read back as the word it stands for (``wellnessSpelling(_:)`` undone).
    static func wellnessReading(_ spelled: String) -> String {
        switch spelled {
        case "tired": return "drained"
        case "social": return "friends"
        case "finances": return "money"
        default: return spelled
        }
    }

    /// The reference server's body: every field of the entry, in the API's names. A typed 1–10 score is sent as
    /// `score` (its valence is its exact translation); otherwise the valence.
    private func extendedBody(_ entry: MoodEntry, create: Bool) -> [UInt8] {
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
        // An update may clear the labels; a create leaves an empty list out.
        if !entry.labels.isEmpty || !create {
            pairs.append(("labels", .array(entry.labels.map { .string($0.wireName) })))
        }
        pairs.append(("associations", .array(entry.associations.map { .string($0.wireName) })))
        pairs.append(("tags", .array(entry.tags.map { .string($0) })))
        pairs.append(("notes", .optional(entry.notes) { .string($0) }))
        if create {
            pairs.append(("source", .string(entry.source.rawValue)))
            if let sourceID = entry.sourceID { pairs.append(("source_id", .string(sourceID))) }
        }
        return JSONValue.object(pairs).serializedBytes()
    }

    /// The valence a seed stores: for a typed score the seed's own formula `(score − 5.5) / 4.5` (so the backend
    /// holds exactly what its legacy `mood_score` input would have made), else the shortest decimal of the grid point.
    static func valence(_ entry: MoodEntry) -> Double? {
        if let score = entry.enteredScore { return (Double(score) - 5.5) / 4.5 }
        return entry.valence.map(Valence.display)
    }

    /// Percent-encodes a path segment (unreserved characters kept).
    static func escape(_ segment: String) -> String {
        var out = ""
        for byte in segment.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
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
