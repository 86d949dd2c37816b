import EventLog
import Foundation
import MoodLedger

/// Creates, replacements and deletions: validated against the ledger, appended with their idempotency key in one
/// batch, acknowledged only once durable (group commit).
extension MoodServer {
    enum Write {
        case create(MoodDraft, progress: Bool)
        case replace(EntryID, MoodReplacement, progress: Bool)
        case delete(EntryID)
    }

    /// A write: validated and appended here (on the event loop); its answer is sent once durable.
    func write(_ write: Write, request: HTTPRequest, user: UserLedger) throws -> Reply {
        let given = request.header("idempotency-key")
        if let given, given.isEmpty || given.utf8.count > 255 {
            throw APIFailure(422, "validation_error", "Idempotency-Key must be 1 to 255 characters", field: "Idempotency-Key")
        }
        // Keys are scoped to the method and path: the same key on another route is another request.
        let key = given.map { "\(request.method) \(request.path) \($0)" }
        let fingerprint = key == nil ? ""
            : ByteText.hex(SHA256.hash(Array("\(request.method) \(request.path)\n".utf8) + request.body))
        if let key {
            switch user.claim(key, fingerprint: fingerprint) {
            case .new: break
            case .replay(let known): return replay(known, write: write, key: key, user: user)
            case .mismatch:
                throw APIFailure(422, "idempotency_key_reused", "this Idempotency-Key was used for a different request",
                                 field: "Idempotency-Key")
            case .inFlight:
                throw APIFailure(409, "request_in_progress", "a request with this Idempotency-Key is still in progress",
                                 headers: [("Retry-After", "1")])
            }
        }
        try user.prepareRevisions()
        var stored: UserLedger.Idempotent?
        defer { if let key { user.finish(key, stored) } }
        // If-Match, the change and its revision are one step per user, so a stale precondition never slips through.
        let (result, status) = try user.writing { () throws -> (CommandResult, Int) in
            var status = 200
            var entryID: EntryID?
            let result = try user.ledger.execute(attaching: { events, id in
                entryID = id
                status = self.status(of: write, events: events)
                return key.map { [UserLedger.idempotencyRecord(key: $0, fingerprint: fingerprint, status: status, entryID: id)] } ?? []
            }) { state, now in
                switch write {
                case .create(let draft, _):
                    return try Ledger.events(logging: draft, in: state, now: now, options: user.ledger.options)
                case .replace(let id, let replacement, _):
                    try checkPrecondition(request, id: id, user: user, exists: state.entries[id] != nil)
                    return (try Ledger.events(replacing: id, with: replacement, in: state, now: now,
                                              bounds: user.ledger.options.loggedAtBounds), id, false)
                case .delete(let id):
                    try checkPrecondition(request, id: id, user: user, exists: state.entries[id] != nil)
                    return (try Ledger.events(deleting: id, in: state), id, false)
                }
            }
            if let entryID, result.appendedEvents > 0 { user.noteChange(entryID, at: result.lastSeq) }
            return (result, status)
        }
        let response = try render(write, status: status, entry: result.entry, user: user)
        if key != nil {
            // Known before it is durable: a replay of the key waits for the same sync (see replay).
            stored = UserLedger.Idempotent(fingerprint: fingerprint, status: status, entryID: result.entry?.id,
                                           seq: result.lastSeq, body: response.body)
        }
        return .afterSync(response, result.lastSeq)
    }

    /// `DELETE …/{id}?erase=true`: the entry deleted if present, then erased from the user's ledger
    /// (`Specs/erasure.md`); 204, or 404 for an id the ledger never held (or already erased). Blocks (it rewrites
    /// the log): run on a worker.
    func erase(_ id: EntryID, user: UserLedger) throws -> HTTPResponse {
        try user.prepareRevisions()
        let seq = try user.writingLong { () throws -> UInt64 in
            do {
                if user.ledger.entry(id) != nil { try user.ledger.delete(id) }
                try user.ledger.erase([id], reason: "erase=true", requestedBy: "server", ignoringDestinations: true)
            } catch let error as MoodError where error.code == .notFound {
                throw APIFailure(404, "not_found", "no such entry")
            }
            user.noteChange(id, at: user.ledger.lastSeq)
            user.forgetResponses(of: id)
            return user.ledger.lastSeq
        }
        do { try user.waitDurable(seq) } catch {
            throw APIFailure(500, "internal_error", "the erasure could not be made durable")
        }
        return HTTPResponse(status: 204)
    }

    private func status(of write: Write, events: [MoodEvent]) -> Int {
        switch write {
        case .create: return events.contains { if case .created = $0 { return true } else { return false } } ? 201 : 200
        case .replace: return 200
        case .delete: return 204
        }
    }

    /// `If-Match`: the entry's current ETag (or `*` for any existing entry); a stale one is 412.
    private func checkPrecondition(_ request: HTTPRequest, id: EntryID, user: UserLedger, exists: Bool) throws {
        // A missing entry is 404 whatever the precondition says (the more useful answer); an empty If-Match is none.
        guard exists else { throw APIFailure(404, "not_found", "no such entry") }
        guard let condition = request.header("if-match"), !condition.isEmpty else { return }
        if condition == "*" { return }
        let current = Self.etag(try user.revision(of: id))
        // RFC 9110 §13.1.1: If-Match uses the strong comparison, so a weak tag (`W/"27"`) never matches.
        let tags = condition.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard tags.contains(current) else {
            throw APIFailure(412, "precondition_failed", "the entry changed since that ETag (now \(current))",
                             headers: [("ETag", current)])
        }
    }

    static func etag(_ revision: UInt64) -> String { "\"\(revision)\"" }

    /// The response of a write: the entry (mood and wellness routes), the progress record, or 204.
    private func render(_ write: Write, status: Int, entry: MoodEntry?, user: UserLedger) throws -> HTTPResponse {
        if status == 204 { return HTTPResponse(status: 204) }
        guard let entry else { throw APIFailure(404, "not_found", "no such entry") }
        var headers = [("ETag", Self.etag(try user.revision(of: entry.id)))]
        let progress: Bool
        switch write {
        case .create(_, let isProgress):
            progress = isProgress
            headers.append(("Location", (progress ? "/api/v1/progress/" : "/api/v1/mood/") + entry.id.description))
        case .replace(_, _, let isProgress): progress = isProgress
        case .delete: progress = false
        }
        return APIReply.data(status, headers: headers) { Self.writeEntry(entry, progress: progress, user: user, to: &$0) }
    }

    /// The first response of an idempotency key, again: kept in memory, or rebuilt from the ledger as it was at
    /// that revision (time travel) after a restart.
    private func replay(_ known: UserLedger.Idempotent, write: Write, key: String, user: UserLedger) -> Reply {
        if known.status == 204 { return .afterSync(HTTPResponse(status: 204), known.seq) }
        if let body = known.body {
            return .afterSync(HTTPResponse(status: known.status, headers: [APIReply.contentType, ("Idempotent-Replayed", "true")],
                                           body: body), known.seq)
        }
        // Rebuilding takes time travel: on a worker.
        return .offload { [self] in try rebuild(known, write: write, key: key, user: user) }
    }

    private func rebuild(_ known: UserLedger.Idempotent, write: Write, key: String, user: UserLedger) throws -> HTTPResponse {
        try user.waitDurable(known.seq)
        var body = known.body
        if body == nil {
            let then = try user.ledger.state(at: .seq(known.seq))
            guard let id = known.entryID, let entry = then.entries[id] else {
                throw APIFailure(500, "internal_error", "the first response of this Idempotency-Key cannot be rebuilt")
            }
            var isProgress = false
            if case .create(_, let progress) = write { isProgress = progress }
            if case .replace(_, _, let progress) = write { isProgress = progress }
            body = APIReply.data(200) { Self.writeEntry(entry, progress: isProgress, user: user, to: &$0) }.body
            var rebuilt = known
            rebuilt.body = body
            user.finish(key, rebuilt)
        }
        return HTTPResponse(status: known.status, headers: [APIReply.contentType, ("Idempotent-Replayed", "true")],
                            body: body ?? [])
    }

    /// The older `/api/v1/progress` record of an entry: `type: mood_score`, `quantity` its 1–10 score.
    static func progressJSON(_ entry: MoodEntry) -> JSONValue {
        .object([("id", .string(entry.id.description)), ("type", .string("mood_score")),
                 ("quantity", .optional(entry.enteredScore ?? entry.score) { .double(Double($0)) }),
                 ("logged_at", .string(entry.loggedAt.iso8601)), ("notes", .optional(entry.notes) { .string($0) }),
                 ("created_at", .string(ISO8601.format(milliseconds: entry.createdAt, offsetMinutes: 0))),
                 ("updated_at", entry.updatedAt == entry.createdAt ? .null
                    : .string(ISO8601.format(milliseconds: entry.updatedAt, offsetMinutes: 0)))])
    }
}
