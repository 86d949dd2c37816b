import Dispatch
import EventLog
import Foundation
import MoodLedger

/// Creates, replacements and deletions: validated against the ledger, appended with their idempotency key in one
/// batch, acknowledged only once durable (group commit).
extension MoodServer {
    enum Write {
        case create(MoodDraft, shape: Shape)
        case replace(EntryID, MoodReplacement, shape: Shape)
        case delete(EntryID)
    }

    /// A request's scoped `Idempotency-Key` and its fingerprint (`Specs/server.md`, *Idempotency*), if it has a key:
    /// keys are scoped to the method and path, so the same key on another route is another request.
    static func idempotency(_ request: HTTPRequest) -> (key: String?, fingerprint: Fingerprint) {
        guard let given = request.header("idempotency-key"), !given.isEmpty else {
            return (nil, Fingerprint(canonical: "", bytes: ""))
        }
        // Scoped by the route, not its spelling: one key and body to `/api/v1/mood/` and `/api/v1/%6dood` is one
        // request.
        let path = Route.match(request.path)?.canonicalPath ?? request.path
        let prefix = Array("\(request.method) \(path)\n".utf8)
        let bytes = ByteText.hex(SHA256.hash(prefix + request.body))
        // The same JSON written another way (a batch item re-sent alone, another client's spacing or key order) is
        // the same request: the fingerprint is over the body's canonical form.
        let canonical = Fingerprint.canonicalJSON(request.body).map { ByteText.hex(SHA256.hash(prefix + $0)) } ?? bytes
        return ("\(request.method) \(path) \(given)", Fingerprint(canonical: canonical, bytes: bytes))
    }

    /// A write: validated and appended here (on the event loop); its answer is sent once durable.
    func write(_ write: Write, request: HTTPRequest, user: UserLedger) throws -> Reply {
        let given = request.header("idempotency-key")
        let (key, fingerprint) = Self.idempotency(request)
        // The scoped key (method, route, key) is stored with the change: at most `RequestKey.maximumKeyBytes`.
        if let given, given.isEmpty || given.utf8.count > 255 || (key?.utf8.count ?? 0) > RequestKey.maximumKeyBytes {
            throw APIFailure(
                422, "validation_error", "Idempotency-Key must be 1 to 255 characters", field: "Idempotency-Key")
        }
        if let key {
            switch user.claim(key, fingerprint: fingerprint) {
            case .new: break
            case .replay(let known): return replay(known, write: write, key: key, user: user)
            case .mismatch:
                throw APIFailure(
                    422, "idempotency_key_reused", "this Idempotency-Key was used for a different request",
                    field: "Idempotency-Key")
            case .inFlight:
                throw APIFailure(
                    409, "request_in_progress", "a request with this Idempotency-Key is still in progress",
                    headers: [("Retry-After", "1")])
            }
        }
        let replaces = try Self.replaces(request, write: write)
        var stored: UserLedger.Idempotent?
        defer { if let key { user.finish(key, stored) } }
        // If-Match, the change and its revision are one step per user, so a stale precondition never slips through.
        let (result, status) = try user.writing { () throws -> (CommandResult, Int) in
            var status = 200
            let result = try user.ledger.appendCommand { [self] state, now in
                let (events, id, created): ([MoodEvent], EntryID, Bool)
                switch write {
                case .create(let draft, _):
                    (events, id, created) = try Ledger.events(
                        logging: draft, in: state, now: now, options: user.ledger.options)
                case .replace(let target, let replacement, _):
                    try checkPrecondition(request, id: target, state: state)
                    (events, id, created) = (
                        try Ledger.events(
                            replacing: target, with: replacement, in: state, now: now,
                            bounds: user.ledger.options.loggedAtBounds), target, false
                    )
                case .delete(let target):
                    try checkPrecondition(request, id: target, state: state)
                    (events, id, created) = (try Ledger.events(deleting: target, in: state), target, false)
                }
                status = self.status(of: write, events: events)
                // The note and the key are events of the change's batch: both durable with it, or neither; the key
                // last, so its seq is the revision the answer is made at.
                var all = events
                if let replaces, !events.isEmpty {
                    all.append(.editReplaced(id, revision: replaces.revision, fields: replaces.fields))
                }
                if let key {
                    all.append(
                        .requestKeyed(
                            RequestKey(key: key, fingerprint: fingerprint.canonical, status: status, entryID: id)))
                }
                return (all, id, created)
            }
            return (result, status)
        }
        let response = try render(write, status: status, entry: result.entry, user: user)
        if key != nil {
            // Known before it is durable: a replay of the key waits for the same sync (see replay).
            stored = UserLedger.Idempotent(
                fingerprint: fingerprint.canonical, status: status, entryID: result.entry?.id,
                seq: result.lastSeq, body: response.body)
        }
        return .afterSync(response, result.lastSeq)
    }

    /// `DELETE …/{id}?erase=true`: the entry deleted if present, then erased from the user's ledger
    /// (`Specs/erasure.md`); 204, or 404 for an id the ledger never held (or already erased). Blocks (it rewrites
    /// the log): run on a worker.
    func erase(_ id: EntryID, user: UserLedger) throws -> HTTPResponse {
        let seq = try user.writingLong { () throws -> UInt64 in
            do {
                if user.ledger.entry(id) != nil { try user.ledger.delete(id) }
                try user.ledger.erase([id], reason: "erase=true", requestedBy: "server", ignoringDestinations: true)
            } catch let error as MoodError where error.code == .notFound {
                throw APIFailure(404, "not_found", "no such entry")
            } catch {
                // The erasure is recorded but its rewrite failed: never "done", never 404 for data still on disk.
                // The server finishes it by itself as soon as it can; a retry finishes it too.
                guard user.ledger.unfinishedErasures.contains(id) else { throw error }
                user.forgetResponses(of: id)
                configuration.log("\(user.name): an erasure could not be finished yet: \(error); retrying")
                finishErasures(of: user, after: 1)
                throw APIFailure(
                    503, "erasure_unfinished",
                    "the erasure is recorded but not finished (the server could not redact its records); it is being "
                        + "retried: ask again to finish it", headers: [("Retry-After", "5")])
            }
            user.forgetResponses(of: id)
            return user.ledger.lastSeq
        }
        do { try user.waitDurable(seq) } catch {
            throw APIFailure(500, "internal_error", "the erasure could not be made durable")
        }
        return HTTPResponse(status: 204)
    }

    /// Finishes `user`'s unfinished erasures on a background thread after `seconds`, again with a doubling wait (at
    /// most 60 s) while the rewrite fails, until it succeeds, the ledger is closed or the server stops; each outcome
    /// logged (never an entry's contents).
    func finishErasures(of user: UserLedger, after seconds: Int) {
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(seconds)) { [self] in
            guard !isStopping, !user.ledger.unfinishedErasures.isEmpty else { return }
            do {
                let report = try user.writingLong { try user.ledger.finishErasures() }
                configuration.log(
                    "\(user.name): finished \(report.erased.count) erasure(s): \(report.recordsRedacted) records redacted"
                )
            } catch let error as EventLogError where error.code == .notWritable {
                return  // the ledger was closed: its next open finishes the erasure
            } catch let error as EventLogError where error.code == .failedState {
                // The log refuses writes until reopened: drop it; the next open (this request's retry, or any
                // request of this user) finishes the erasure before it serves anything.
                drop(user.name, because: "an erasure could not be finished yet (\(error))")
            } catch {
                configuration.log("\(user.name): an erasure could not be finished yet: \(error); retrying")
                finishErasures(of: user, after: min(60, seconds * 2))
            }
        }
    }

    private func status(of write: Write, events: [MoodEvent]) -> Int {
        switch write {
        case .create: return events.contains { if case .created = $0 { return true } else { return false } } ? 201 : 200
        case .replace: return 200
        case .delete: return 204
        }
    }

    /// `If-Match`: the entry's current ETag (or `*` for any existing entry); a stale one is 412. Read from the state
    /// the change is decided against, so the check and the change are one step.
    private func checkPrecondition(_ request: HTTPRequest, id: EntryID, state: LedgerState) throws {
        // A missing entry is 404 whatever the precondition says (the more useful answer); an empty If-Match is none.
        guard state.entries[id] != nil else { throw APIFailure(404, "not_found", "no such entry") }
        guard let condition = request.header("if-match"), !condition.isEmpty else { return }
        if condition == "*" { return }
        let current = Self.etag(state.revision(of: id))
        // RFC 9110 §13.1.1: If-Match uses the strong comparison, so a weak tag (`W/"27"`) never matches.
        let tags = condition.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard tags.contains(current) else {
            throw APIFailure(
                412, "precondition_failed", "the entry changed since that ETag (now \(current))",
                headers: [("ETag", current)])
        }
    }

    static func etag(_ revision: UInt64) -> String { "\"\(revision)\"" }

    /// `MoodLedger-Replaces: <revision>; fields=<name>,…` on a PUT: the client merged with the entry's revision
    /// `<revision>` (another device's) and its write replaces that revision's values of these fields
    /// (`Specs/server.md`, *Replaced edits*). Absent: `nil`. Malformed: 422 naming the header.
    static func replaces(_ request: HTTPRequest, write: Write) throws -> (revision: UInt64, fields: MergeFields)? {
        guard let text = request.header("moodledger-replaces"), !text.isEmpty else { return nil }
        let invalid = APIFailure(
            422, "validation_error",
            "must be <revision>; fields=<field>,… with a revision above 0 and fields among \(MergeFields.named.map(\.name).joined(separator: ", "))",
            field: "MoodLedger-Replaces")
        guard case .replace = write else { throw invalid }
        let parts = text.split(separator: ";", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, let revision = UInt64(parts[0]), revision > 0, parts[1].hasPrefix("fields="),
            text.utf8.count <= 256
        else { throw invalid }
        let names = parts[1].dropFirst("fields=".count).split(separator: ",").map(String.init)
        var fields = MergeFields()
        for name in names {
            guard let field = MergeFields.named.first(where: { $0.name == name })?.field else { throw invalid }
            fields.insert(field)
        }
        guard !fields.isEmpty, revision <= UInt64(Int64.max) else { throw invalid }
        return (revision, fields)
    }

    /// The response of a write: the entry (mood and wellness routes), the progress record, or 204.
    private func render(_ write: Write, status: Int, entry: MoodEntry?, user: UserLedger) throws -> HTTPResponse {
        if status == 204 { return HTTPResponse(status: 204) }
        guard let entry else { throw APIFailure(404, "not_found", "no such entry") }
        let shape = Self.shape(of: write)
        return APIReply.data(
            status, headers: Self.headers(write, entryID: entry.id, revision: user.revision(of: entry.id)),
            errorNull: shape == .progress
        ) {
            Self.writeEntry(entry, shape: shape, user: user, to: &$0)
        }
    }

    /// The seed route a write came by: its answer is in that seed's shape.
    static func shape(of write: Write) -> Shape {
        switch write {
        case .create(_, let shape), .replace(_, _, let shape): return shape
        case .delete: return .mood
        }
    }

    /// The headers of a write's answer, the first time and on every replay: the entry's `ETag` at the write, and for
    /// a created mood entry its `Location` (progress records have no item route, so they get none).
    static func headers(_ write: Write, entryID: EntryID, revision: UInt64) -> [(String, String)] {
        var headers = [("ETag", etag(revision))]
        if case .create(_, let shape) = write, shape != .progress {
            headers.append(
                (
                    "Location",
                    (shape == .wellness ? "/api/v1/wellness/mood-entries/" : "/api/v1/mood/") + entryID.description
                ))
        }
        return headers
    }

    /// The first response of an idempotency key, again: kept in memory, or rebuilt from the ledger as it was at
    /// that revision (time travel) after a restart.
    private func replay(_ known: UserLedger.Idempotent, write: Write, key: String, user: UserLedger) -> Reply {
        if known.status == 204 { return .afterSync(HTTPResponse(status: 204), known.seq) }
        if let body = known.body {
            return .afterSync(
                HTTPResponse(status: known.status, headers: Self.replayHeaders(known, write: write), body: body),
                known.seq)
        }
        // Rebuilding takes time travel: on a worker.
        return .offload { [self] in try rebuild(known, write: write, key: key, user: user) }
    }

    private func rebuild(
        _ known: UserLedger.Idempotent, write: Write, key: String, user: UserLedger
    ) throws -> HTTPResponse {
        try user.waitDurable(known.seq)
        var body = known.body
        if body == nil {
            let entry = try known.entryID.flatMap { id in try user.ledger.entry(id, asOf: known.seq) }
            guard let entry else {
                // The request was applied and acknowledged; the entry it wrote has been erased since, so its first
                // answer (the entry's data) no longer exists anywhere (Specs/server.md, Idempotency).
                throw APIFailure(410, "erased", "this request was applied; the entry it wrote has since been erased")
            }
            let shape = Self.shape(of: write)
            body =
                APIReply.data(200, errorNull: shape == .progress) {
                    Self.writeEntry(entry, shape: shape, user: user, to: &$0)
                }.body
            var rebuilt = known
            rebuilt.body = body
            user.finish(key, rebuilt)
        }
        return HTTPResponse(status: known.status, headers: Self.replayHeaders(known, write: write), body: body ?? [])
    }

    /// A replay answers like the first answer, headers included, and says it is a replay.
    static func replayHeaders(_ known: UserLedger.Idempotent, write: Write) -> [(String, String)] {
        [APIReply.contentType] + (known.entryID.map { headers(write, entryID: $0, revision: known.seq) } ?? [])
            + [("Idempotent-Replayed", "true")]
    }

    /// The older `/api/v1/progress` record of an entry (seed 004): `id`, `user_id`, `type: mood_score`, `quantity`
    /// its 1–10 score, `logged_at`, `notes`, `created_at`, `updated_at` (equal to `created_at` until edited), instants
    /// in whole seconds.
    static func progressJSON(_ entry: MoodEntry, userID: String) -> JSONValue {
        func whole(_ milliseconds: Int64, _ offset: Int) -> JSONValue {
            .string(
                ISO8601.format(
                    milliseconds: milliseconds - ((milliseconds % 1000) + 1000) % 1000, offsetMinutes: offset))
        }
        return .object([
            ("id", .string(entry.id.description)), ("user_id", .string(userID)), ("type", .string("mood_score")),
            ("quantity", .optional(entry.enteredScore ?? entry.score) { .double(Double($0)) }),
            ("logged_at", whole(entry.loggedAt.milliseconds, entry.loggedAt.utcOffsetMinutes)),
            ("notes", .optional(entry.notes) { .string($0) }),
            ("created_at", whole(entry.createdAt, 0)), ("updated_at", whole(entry.updatedAt, 0))
        ])
    }
}
