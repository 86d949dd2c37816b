import Foundation
import MoodLedger

/// Routes to handlers; the read side of the API (lists, aggregates, the changes feed).
extension MoodServer {
    /// What a handler made of a request.
    enum Reply {
        /// Send this now.
        case now(HTTPResponse)
        /// Send this once the user's ledger is durable through the seq (a 500 instead if that sync fails).
        case afterSync(HTTPResponse, UInt64)
        /// Blocking work (an erasure, a rebuilt replay): run on a worker, send what it returns.
        case offload(@Sendable () throws -> HTTPResponse)
    }

    func dispatch(_ route: Route, method: String, request: HTTPRequest, user: UserLedger, now: Int64) throws -> Reply {
        let today = LoggedAt(milliseconds: now).localDate
        switch (route.name, method) {
        case (.moodCollection, "GET"), (.wellnessCollection, "GET"):
            let page = try list(request, today: today, user: user)
            let wellness = route.name == .wellnessCollection
            return .now(
                APIReply.data(200) {
                    page.writeJSON(to: &$0) { entries, out in
                        user.writeEntries(
                            entries, style: wellness ? .wellness : .moodAPI, userID: wellness ? user.name : nil,
                            to: &out)
                    }
                })
        case (.moodCollection, "POST"), (.wellnessCollection, "POST"):
            return try write(
                .create(
                    try APIRecord.draft(from: try Self.jsonBody(request)),
                    shape: route.name == .wellnessCollection ? .wellness : .mood), request: request,
                user: user)
        case (.moodItem(let text), "GET"), (.wellnessItem(let text), "GET"):
            let id = try Self.entryID(text)
            guard let entry = user.ledger.entry(id) else { throw APIFailure(404, "not_found", "no such entry") }
            // `?detail=full` (the reference server's extension): the changes feed's entry object — instants to the
            // millisecond and `typed_score` — for a client merging after a 412, which must compare like with like.
            var shape: Shape = .wellness
            if case .moodItem = route.name { shape = .mood }
            let full = try Self.fullDetail(request)
            let answerShape = shape
            return .now(
                APIReply.data(200, headers: [("ETag", Self.etag(try user.revision(of: id)))]) {
                    if full {
                        entry.writeJSON(to: &$0, userID: user.name, typedScore: true)
                    } else {
                        Self.writeEntry(entry, shape: answerShape, user: user, to: &$0)
                    }
                })
        case (.moodItem(let text), "PUT"), (.wellnessItem(let text), "PUT"):
            let id = try Self.entryID(text)
            let replacement = try APIRecord.replacement(from: try Self.jsonBody(request))
            var shape: Shape = .wellness
            if case .moodItem = route.name { shape = .mood }
            return try write(.replace(id, replacement, shape: shape), request: request, user: user)
        case (.moodItem(let text), "DELETE"), (.wellnessItem(let text), "DELETE"):
            if try Self.flag(request, "erase") {
                let id = try Self.entryID(text)
                // Every erasure rewrites the user's log: a budget of its own bounds what one user makes the disk write.
                if let decision = limiter.take(user: user.name, .erase, now: now), !decision.allowed {
                    throw APIFailure(
                        429, "rate_limited", "too many erasures; try again later",
                        headers: [("Retry-After", "\(max(1, decision.retryAfter))")])
                }
                return .offload { [self] in try erase(id, user: user) }
            }
            return try write(.delete(try Self.entryID(text)), request: request, user: user)
        case (.moodDaily(let text), "GET"):
            guard let date = LocalDate(text) else {
                throw APIFailure(422, "validation_error", "must be YYYY-MM-DD", field: "date")
            }
            let include = try Self.flag(request, "include_entries")
            return .now(APIReply.data(200, user.ledger.read { $0.day(date, includeEntries: include) }.json))
        case (.moodTrends, "GET"):
            let (from, to) = try Self.period(request, today: today)
            return .now(APIReply.data(200, try user.ledger.read { try Self.trends($0, from: from, to: to) }.json))
        case (.moodLabelAnalytics, "GET"):
            let (from, to) = try Self.period(request, today: today)
            let limit = try Self.integer(request, "limit", default: 10, range: MoodRules.pageSizeRange)
            return .now(
                APIReply.data(200, user.ledger.read { $0.labelAnalytics(from: from, to: to, limit: limit) }.json))
        case (.moodAssociationAnalytics, "GET"):
            let (from, to) = try Self.period(request, today: today)
            let limit = try Self.integer(request, "limit", default: 10, range: MoodRules.pageSizeRange)
            return .now(
                APIReply.data(200, user.ledger.read { $0.associationAnalytics(from: from, to: to, limit: limit) }.json))
        case (.moodBatch, "POST"):
            return try batch(request, user: user, now: now)
        case (.moodChanges, "GET"):
            return .now(try changes(request, user: user))
        case (.wellnessAnalytics, "GET"):
            return .now(APIReply.data(200, try wellnessAnalytics(request, today: today, user: user)))
        case (.progress, "POST"):
            return try write(
                .create(try APIRecord.progressDraft(from: try Self.jsonBody(request)), shape: .progress),
                request: request, user: user)
        case (.progress, "GET"):
            return .now(APIReply.data(200, try progressList(request, user: user), errorNull: true))
        default:
            // `Route.match` is the table of paths and methods (405 and `Allow` are answered from it before this);
            // a method it allows with no handler here is a programming error, which a test of every route catches.
            assertionFailure("the route \(route.name) allows \(method) but has no handler")
            throw APIFailure(500, "internal_error", "\(method) has no handler here")
        }
    }

    // MARK: - Reads

    /// One entry as a single-entry answer carries it: the CLI's entry object with the seed's `user_id` after `id`
    /// (or the `/api/v1/progress` record of it).
    static func writeEntry(_ entry: MoodEntry, shape: Shape, user: UserLedger, to out: inout JSONBytes) {
        switch shape {
        case .progress: out.value(progressJSON(entry, userID: user.name))
        case .mood: entry.writeJSON(to: &out, userID: user.name, style: .moodAPI)
        case .wellness: entry.writeJSON(to: &out, userID: user.name, style: .wellness)
        }
    }

    /// The seed route an answer is shaped for (`Specs/server.md`, *Seed shapes*).
    enum Shape: Sendable, Equatable {
        /// Seed 001's `/api/v1/mood`.
        case mood
        /// Seed 002's `/api/v1/wellness/mood-entries`.
        case wellness
        /// Seed 004's `/api/v1/progress`.
        case progress
    }

    /// `detail=full` on an item read: `true`; absent: `false`; anything else is refused naming the parameter.
    static func fullDetail(_ request: HTTPRequest) throws -> Bool {
        guard let detail = value(request, "detail") else { return false }
        guard detail == "full" else { throw APIFailure(422, "validation_error", "must be full", field: "detail") }
        return true
    }

    private func list(_ request: HTTPRequest, today: LocalDate, user: UserLedger) throws -> EntryPage {
        var query = EntryQuery()
        (query.from, query.to) = try Self.period(request, today: today)
        if let source = Self.value(request, "source") {
            guard let parsed = MoodSource(rawValue: source) else {
                throw APIFailure(
                    422, "validation_error", "must be manual, healthkit, backend, import or ai_analysis",
                    field: "source")
            }
            query.source = parsed
        }
        query.minValence = try Self.number(request, "min_valence", range: -1...1)
        query.maxValence = try Self.number(request, "max_valence", range: -1...1)
        query.limit = try Self.integer(request, "limit", default: 30, range: MoodRules.pageSizeRange)
        query.offset = try Self.integer(request, "offset", default: 0, range: 0...Int(Int32.max))
        let empty = EntryPage(entries: [], total: 0, limit: query.limit, offset: query.offset)
        // A word no entry can hold, or a period that ends before it starts, matches nothing (not an error).
        if let label = Self.value(request, "label") {
            guard let word = try? MoodLabel.parse(label) else { return empty }
            query.label = word
        }
        if let association = Self.value(request, "association") {
            guard let word = try? MoodAssociation.parse(association) else { return empty }
            query.association = word
        }
        if let from = query.from, let to = query.to, from > to { return empty }
        do { return try user.ledger.read { try $0.list(query) } } catch { throw APIReply.failure(error) }
    }

    /// `GET /api/v1/mood/changes?since=REV&limit=N`: every entry changed after revision `since` (its current state,
    /// or a deletion), oldest change first, with the ledger's revision — what a sync client pulls.
    private func changes(_ request: HTTPRequest, user: UserLedger) throws -> HTTPResponse {
        let since = UInt64(try Self.integer(request, "since", default: 0, range: 0...Int(Int64.max)))
        let limit = try Self.integer(request, "limit", default: 100, range: 1...1000)
        // Read inside `read`, so that an answer is never taken from a damaged snapshot piece.
        let (seq, all, found) = try user.ledger.read { state in
            let all = try user.changes(since: since).filter { $0.1 <= state.seq }
            var found: [EntryID: MoodEntry] = [:]
            for (id, _) in all.prefix(limit) { found[id] = state.entries[id] }
            return (state.seq, all, found)
        }
        var replaced: [EntryID: UserLedger.Replacement] = [:]
        for (id, revision) in all.prefix(limit) where found[id] != nil {
            replaced[id] = try user.replacement(of: id, at: revision)
        }
        let page = all.prefix(limit)
        let hasMore = all.count > page.count
        let next = hasMore ? page.last!.1 : seq
        return APIReply.data(200) { out in
            out.beginObject()
            out.key("changes")
            out.beginArray()
            for (id, revision) in page {
                let entry = found[id]
                out.beginObject()
                out.key("revision")
                out.int(Int64(revision))
                out.key("operation")
                out.string(entry == nil ? "delete" : "upsert")
                out.key("id")
                out.id(id)
                out.key("entry")
                if let entry { entry.writeJSON(to: &out, typedScore: true) } else { out.null() }
                if let note = replaced[id] {
                    // This revision replaced another device's concurrent edit: that device learns it lost.
                    out.key("replaced")
                    out.beginObject()
                    out.key("revision")
                    out.int(Int64(note.revision))
                    out.key("fields")
                    out.beginArray()
                    for field in note.fields { out.string(field) }
                    out.endArray()
                    out.endObject()
                }
                out.endObject()
            }
            out.endArray()
            out.key("revision")
            out.int(Int64(seq))
            out.key("next_since")
            out.int(Int64(next))
            out.key("has_more")
            out.bool(hasMore)
            out.endObject()
        }
    }

    private func wellnessAnalytics(_ request: HTTPRequest, today: LocalDate, user: UserLedger) throws -> JSONValue {
        let (from, to) = try Self.period(request, today: today)
        let labelLimit = try Self.integer(request, "top_labels_limit", default: 5, range: MoodRules.pageSizeRange)
        let associationLimit = try Self.integer(
            request, "top_associations_limit", default: 5, range: MoodRules.pageSizeRange)
        let daily = try Self.flag(request, "include_daily_breakdown")
        return try user.ledger.read { state in
            try Self.wellness(
                state, from: from, to: to, today: today, labelLimit: labelLimit,
                associationLimit: associationLimit, daily: daily)
        }
    }

    private static func wellness(
        _ state: LedgerState, from: LocalDate, to: LocalDate, today: LocalDate, labelLimit: Int,
        associationLimit: Int, daily: Bool
    ) throws -> JSONValue {
        let trends = try trends(state, from: from, to: to)
        let summary: RangeSummary
        do {
            summary = try (from <= to ? state : LedgerState()).summary(
                range: "custom", today: today, from: min(from, to), to: to)
        } catch { throw APIReply.failure(error) }
        // Each report is rendered once and its fields picked from it.
        let summaryJSON = summary.json
        let trendsJSON = trends.json
        var pairs: [(String, JSONValue)] = [
            ("period", .object([("from", .string(from.description)), ("to", .string(to.description))])),
            (
                "summary",
                .object(
                    [("total_entries", .int(Int64(summary.entryCount)))]
                        + ["average_valence", "average_score", "highest_score", "lowest_score"].map {
                            ($0, summaryJSON[$0] ?? .null)
                        })
            ),
            (
                "trends",
                .object([
                    ("trend_direction", .string(trends.direction)),
                    ("valence_statistics", trendsJSON["valence_statistics"] ?? .null)
                ])
            ),
            (
                "top_labels",
                state.labelAnalytics(from: from, to: to, limit: labelLimit).json["top_labels"] ?? .array([])
            ),
            (
                "top_associations",
                state.associationAnalytics(from: from, to: to, limit: associationLimit).json["top_associations"]
                    ?? .array([])
            )
        ]
        if daily { pairs.append(("daily_aggregates", trendsJSON["daily_data"] ?? .array([]))) }
        return .object(pairs)
    }

    private func progressList(_ request: HTTPRequest, user: UserLedger) throws -> JSONValue {
        var from: LocalDate?
        var to: LocalDate?
        if let text = Self.value(request, "from") { from = try Self.date(text, field: "from") }
        if let text = Self.value(request, "to") { to = try Self.date(text, field: "to") }
        let type = Self.value(request, "type") ?? "mood_score"
        guard type == "mood_score" else { return .array([]) }
        return user.ledger.read { state in Self.progress(state, from: from, to: to, userID: user.name) }
    }

    private static func progress(_ state: LedgerState, from: LocalDate?, to: LocalDate?, userID: String) -> JSONValue {
        var records: [JSONValue] = []
        for day in state.entries.activeDays where (from.map { day >= $0 } ?? true) && (to.map { day <= $0 } ?? true) {
            for entry in state.entries.entries(on: day).reversed()
            where entry.valence != nil || entry.enteredScore != nil {
                records.append(Self.progressJSON(entry, userID: userID))
            }
        }
        return .array(records)
    }

    // MARK: - Parameters

    static func value(_ request: HTTPRequest, _ name: String) -> String? {
        request.queryItems.last { $0.name == name }?.value
    }

    static func date(_ text: String, field: String) throws -> LocalDate {
        guard let date = LocalDate(text) else {
            throw APIFailure(422, "validation_error", "must be a date YYYY-MM-DD", field: field)
        }
        return date
    }

    /// `from`/`to`: the last 30 days ending today when absent (the seed's defaults). A `from` after `to` is an
    /// empty period (no entries), not an error.
    static func period(_ request: HTTPRequest, today: LocalDate) throws -> (LocalDate, LocalDate) {
        let to = try value(request, "to").map { try date($0, field: "to") } ?? today
        let from = try value(request, "from").map { try date($0, field: "from") } ?? to.advanced(by: -30)
        return (from, to)
    }

    /// Trends over a period; an empty period (from after to) has no entries.
    static func trends(_ state: LedgerState, from: LocalDate, to: LocalDate) throws -> TrendReport {
        do {
            guard from <= to else {
                var empty = try LedgerState().trends(from: to, to: to)
                (empty.from, empty.to) = (from, to)
                return empty
            }
            return try state.trends(from: from, to: to)
        } catch { throw APIReply.failure(error) }
    }

    static func integer(
        _ request: HTTPRequest, _ name: String, default fallback: Int, range: ClosedRange<Int>
    ) throws -> Int {
        guard let text = value(request, name) else { return fallback }
        guard let number = Int(text), range.contains(number) else {
            throw APIFailure(
                422, "validation_error", "must be a whole number \(range.lowerBound)...\(range.upperBound)", field: name
            )
        }
        return number
    }

    static func number(_ request: HTTPRequest, _ name: String, range: ClosedRange<Double>) throws -> Double? {
        guard let text = value(request, name) else { return nil }
        guard let number = Double(text), number.isFinite, range.contains(number) else {
            throw APIFailure(
                422, "validation_error", "must be a number \(range.lowerBound)...\(range.upperBound)", field: name)
        }
        return number
    }

    static func flag(_ request: HTTPRequest, _ name: String) throws -> Bool {
        // Exactly `true` or `false` (OpenAPI's boolean): `1`, `TRUE` or an empty value would mean different things to
        // different clients.
        switch value(request, name) {
        case nil, "false": return false
        case "true": return true
        default: throw APIFailure(422, "validation_error", "must be true or false", field: name)
        }
    }

    static func entryID(_ text: String) throws -> EntryID {
        guard let id = EntryID(text) else { throw APIFailure(404, "not_found", "no such entry") }
        return id
    }

    /// The body as JSON: `application/json` (or `+json`) UTF-8, else 415; malformed JSON is 400.
    static func jsonBody(_ request: HTTPRequest) throws -> JSONValue {
        let type = request.header("content-type")?.lowercased() ?? ""
        let parameters = type.split(separator: ";")
        let media = parameters.first?.trimmingCharacters() ?? ""
        guard media == "application/json" || media.hasSuffix("+json") else {
            throw APIFailure(415, "unsupported_media_type", "the body must be application/json")
        }
        if let charset = parameters.dropFirst().first(where: { $0.contains("charset") }), !charset.contains("utf-8") {
            throw APIFailure(415, "unsupported_media_type", "the body must be UTF-8")
        }
        guard let text = String(validating: request.body, as: UTF8.self) else {
            throw APIFailure(415, "unsupported_media_type", "the body must be UTF-8")
        }
        do { return try JSONParser.parse(text) } catch {
            // The parser's reasons are fixed texts, or name a duplicated key (a field name, cut to 64 characters).
            throw APIFailure(
                400, "bad_request",
                "the body is not valid JSON (line \(error.line), column \(error.column)): \(error.reason)")
        }
    }
}

extension APIReply {
    /// A domain error as a thrown API failure.
    static func failure(_ error: Error) -> APIFailure {
        if let error = error as? MoodError { return APIFailure(response: from(error)) }
        return APIFailure(response: from(any: error))
    }
}
