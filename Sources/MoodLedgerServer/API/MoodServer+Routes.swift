import Foundation
import MoodInterchange
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

    /// What a handler is given: the route (with its parameter), the request, the user's ledger and the time.
    struct RouteCall {
        var route: Route
        var request: HTTPRequest
        var user: UserLedger
        /// Milliseconds since 1970.
        var nowMilliseconds: Int64
        /// The local date of `nowMilliseconds`.
        var today: LocalDate
        /// The path's parameter (an entry id, a date), or "".
        var parameter: String { route.parameter }
    }

    /// Answers one method of one route.
    typealias RouteHandler = @Sendable (MoodServer, RouteCall) throws -> Reply

    /// One line of the route table: the path (`*` marks the segment a parameterised route takes), the route's name,
    /// and a handler per method — 405 and `Allow` derive from the methods listed here.
    struct RouteEntry: Sendable {
        var path: [String]
        var name: @Sendable (String) -> Route.Name
        var handlers: [(method: String, handle: RouteHandler)]
    }

    /// The route table (`Specs/server.md`, `Specs/openapi.yaml`): every route of the server, in one place.
    static let routes: [RouteEntry] = [
        RouteEntry(path: ["health"], name: { _ in .health }, handlers: [("GET", { _, _ in MoodServer.health })]),
        RouteEntry(
            path: ["api", "v1", "mood"], name: { _ in .moodCollection },
            handlers: [("GET", { try $0.listAnswer($1, style: .moodAPI) }), ("POST", { try $0.create($1, .mood) })]),
        RouteEntry(
            path: ["api", "v1", "mood", "changes"], name: { _ in .moodChanges },
            handlers: [("GET", { .now(try $0.changes($1.request, user: $1.user)) })]),
        RouteEntry(
            path: ["api", "v1", "mood", "batch"], name: { _ in .moodBatch },
            handlers: [("POST", { try $0.batch($1.request, user: $1.user, now: $1.nowMilliseconds) })]),
        RouteEntry(
            path: ["api", "v1", "mood", "trends"], name: { _ in .moodTrends },
            handlers: [("GET", { try $0.trendsAnswer($1) })]),
        RouteEntry(
            path: ["api", "v1", "mood", "analytics", "labels"], name: { _ in .moodLabelAnalytics },
            handlers: [("GET", { try $0.wordAnalyticsAnswer($1, labels: true) })]),
        RouteEntry(
            path: ["api", "v1", "mood", "analytics", "associations"], name: { _ in .moodAssociationAnalytics },
            handlers: [("GET", { try $0.wordAnalyticsAnswer($1, labels: false) })]),
        RouteEntry(
            path: ["api", "v1", "mood", "daily", "*"], name: { .moodDaily($0) },
            handlers: [("GET", { try $0.dayAnswer($1) })]),
        RouteEntry(
            path: ["api", "v1", "mood", "*"], name: { .moodItem($0) },
            handlers: [
                ("GET", { try $0.itemAnswer($1, shape: .mood) }), ("PUT", { try $0.replace($1, shape: .mood) }),
                ("DELETE", { try $0.delete($1) })
            ]),
        RouteEntry(
            path: ["api", "v1", "wellness", "mood-entries"], name: { _ in .wellnessCollection },
            handlers: [
                ("GET", { try $0.listAnswer($1, style: .wellness) }), ("POST", { try $0.create($1, .wellness) })
            ]),
        RouteEntry(
            path: ["api", "v1", "wellness", "mood-entries", "analytics"], name: { _ in .wellnessAnalytics },
            handlers: [
                (
                    "GET",
                    { .now(APIReply.data(200, try $0.wellnessAnalytics($1.request, today: $1.today, user: $1.user))) }
                )
            ]),
        RouteEntry(
            path: ["api", "v1", "wellness", "mood-entries", "*"], name: { .wellnessItem($0) },
            handlers: [
                ("GET", { try $0.itemAnswer($1, shape: .wellness) }), ("PUT", { try $0.replace($1, shape: .wellness) }),
                ("DELETE", { try $0.delete($1) })
            ]),
        RouteEntry(
            path: ["api", "v1", "progress"], name: { _ in .progress },
            handlers: [
                ("GET", { .now(APIReply.data(200, try $0.progressList($1.request, user: $1.user), errorNull: true)) }),
                ("POST", { try $0.create($1, .progress) })
            ])
    ]

    /// Runs the route's handler of `method`.
    /// - Throws: ``APIFailure`` 405 (with `Allow`) when the route has none — a request checked against
    ///   ``Route/allowed`` first never meets it — or what the handler throws.
    func dispatch(_ route: Route, method: String, request: HTTPRequest, user: UserLedger, now: Int64) throws -> Reply {
        guard let handle = route.handler(for: method) else {
            throw APIFailure(
                405, "method_not_allowed", "\(method) is not allowed here",
                headers: [("Allow", route.allowed.joined(separator: ", "))])
        }
        let call = RouteCall(
            route: route, request: request, user: user, nowMilliseconds: now,
            today: LoggedAt(milliseconds: now).localDate)
        return try handle(self, call)
    }

    // MARK: - Handlers

    /// `GET /health` (answered before authentication; here for the table's sake).
    static let health = Reply.now(APIReply.data(200, .object([("status", .string("ok"))])))

    /// A page of entries, in the seed 001 (`moodAPI`) or seed 002 (`wellness`) style.
    private func listAnswer(_ call: RouteCall, style: EntryJSONStyle) throws -> Reply {
        let page = try list(call.request, today: call.today, user: call.user)
        let user = call.user
        let wellness = style == .wellness
        return .now(
            APIReply.data(200) {
                page.writeJSON(to: &$0) { entries, out in
                    user.writeEntries(entries, style: style, userID: wellness ? user.name : nil, to: &out)
                }
            })
    }

    /// A create in a seed's shape.
    private func create(_ call: RouteCall, _ shape: Shape) throws -> Reply {
        let body = try Self.jsonBody(call.request)
        let draft = shape == .progress ? try APIRecord.progressDraft(from: body) : try APIRecord.draft(from: body)
        return try write(.create(draft, shape: shape), request: call.request, user: call.user)
    }

    /// One entry, with its revision as the `ETag`.
    private func itemAnswer(_ call: RouteCall, shape: Shape) throws -> Reply {
        let user = call.user
        let id = try Self.entryID(call.parameter)
        // The entry and its revision from one state: the ETag is the revision of the body sent.
        let read = user.ledger.read { state in state.entries[id].map { ($0, state.revision(of: id)) } }
        guard let (entry, revision) = read else { throw APIFailure(404, "not_found", "no such entry") }
        // `?detail=full` (the reference server's extension): the changes feed's entry object — instants to the
        // millisecond and `typed_score` — for a client merging after a 412, which must compare like with like.
        let full = try Self.fullDetail(call.request)
        return .now(
            APIReply.data(200, headers: [("ETag", Self.etag(revision))]) {
                if full {
                    entry.writeJSON(to: &$0, userID: user.name, typedScore: true)
                } else {
                    Self.writeEntry(entry, shape: shape, user: user, to: &$0)
                }
            })
    }

    /// A whole replacement of an entry (`PUT`).
    private func replace(_ call: RouteCall, shape: Shape) throws -> Reply {
        let id = try Self.entryID(call.parameter)
        let replacement = try APIRecord.replacement(from: try Self.jsonBody(call.request))
        return try write(.replace(id, replacement, shape: shape), request: call.request, user: call.user)
    }

    /// `DELETE`: a deletion, or with `?erase=true` an erasure (on a worker: it reads the whole log).
    private func delete(_ call: RouteCall) throws -> Reply {
        let id = try Self.entryID(call.parameter)
        guard try Self.flag(call.request, "erase") else {
            return try write(.delete(id), request: call.request, user: call.user)
        }
        // Erasures have a budget of their own: it bounds how often one user makes the server redact and drop
        // snapshots.
        if let decision = limiter.take(user: call.user.name, .erase, now: call.nowMilliseconds), !decision.allowed {
            throw APIFailure(
                429, "rate_limited", "too many erasures; try again later",
                headers: [("Retry-After", "\(max(1, decision.retryAfter))")])
        }
        let user = call.user
        return .offload { [self] in try erase(id, user: user) }
    }

    /// One local day's aggregate (`/api/v1/mood/daily/{date}`).
    private func dayAnswer(_ call: RouteCall) throws -> Reply {
        guard let date = LocalDate(call.parameter) else {
            throw APIFailure(422, "validation_error", "must be YYYY-MM-DD", field: "date")
        }
        let include = try Self.flag(call.request, "include_entries")
        return .now(APIReply.data(200, call.user.ledger.read { $0.day(date, includeEntries: include) }.json))
    }

    /// The trends of a period.
    private func trendsAnswer(_ call: RouteCall) throws -> Reply {
        let (from, to) = try Self.period(call.request, today: call.today)
        return .now(APIReply.data(200, try call.user.ledger.read { try Self.trends($0, from: from, to: to) }.json))
    }

    /// Label or association analytics of a period.
    private func wordAnalyticsAnswer(_ call: RouteCall, labels: Bool) throws -> Reply {
        let (from, to) = try Self.period(call.request, today: call.today)
        let limit = try Self.integer(call.request, "limit", default: 10, range: MoodRules.pageSizeRange)
        return .now(
            APIReply.data(
                200,
                call.user.ledger.read {
                    labels
                        ? $0.labelAnalytics(from: from, to: to, limit: limit).json
                        : $0.associationAnalytics(from: from, to: to, limit: limit).json
                }))
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
        let (seq, all, found, replaced) = user.ledger.read { state in
            let all = state.changes(since: since)
            var found: [EntryID: MoodEntry] = [:]
            var replaced: [EntryID: RequestRecords.Note] = [:]
            for (id, _) in all.prefix(limit) {
                found[id] = state.entries[id]
                if found[id] != nil { replaced[id] = state.replacementNote(of: id) }
            }
            return (state.seq, all, found, replaced)
        }
        let page = all.prefix(limit)
        let hasMore = all.count > page.count
        let next = hasMore ? page.last!.revision : seq
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
                    for field in note.fields.names { out.string(field) }
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
