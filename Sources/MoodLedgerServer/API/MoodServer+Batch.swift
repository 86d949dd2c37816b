import MoodLedger

/// `POST /api/v1/mood/batch` (`Specs/server.md`, *Batch writes*): many creates, updates and deletes in one request,
/// each handled exactly as its single request would be (its own idempotency key, `If-Match`, validation, answer),
/// acknowledged together after one `fdatasync`.
extension MoodServer {
    /// Most items in one batch.
    static let batchItems = 256

    /// One item of a batch body.
    struct BatchItem: Sendable {
        var method: String
        var path: String
        var headers: [(name: String, value: String)]
        var body: [UInt8]
    }

    /// The items of a batch body: `{"items": [{"method", "id"?, "idempotency_key"?, "if_match"?, "replaces"?,
    /// "body"?}]}`, 1 to ``batchItems`` objects. The shape (types and lengths) is the batch's: a wrong one refuses
    /// the whole batch. What an item asks (its method, its id, its body's fields) is the item's own: an item that
    /// cannot be a request is answered with its own 422 and the others still apply.
    /// - Throws: 422 naming the field.
    static func batchItems(_ request: HTTPRequest) throws -> [Result<BatchItem, APIFailure>] {
        let json = try jsonBody(request)
        guard let items = json["items"]?.arrayValue else {
            throw APIFailure(422, "validation_error", "must be an array of items", field: "items")
        }
        guard (1...batchItems).contains(items.count) else {
            throw APIFailure(422, "validation_error", "must hold 1 to \(batchItems) items", field: "items")
        }
        return try items.enumerated().map { index, item in
            func invalid(_ field: String, _ rule: String) -> APIFailure {
                APIFailure(
                    422, "validation_error", rule, field: field.isEmpty ? "items[\(index)]" : "items[\(index)].\(field)"
                )
            }
            guard case .object = item else { throw invalid("", "must be an object") }
            guard let method = item["method"]?.stringValue else { throw invalid("method", "must be a string") }
            var headers: [(name: String, value: String)] = []
            for (field, header) in [
                ("idempotency_key", "idempotency-key"), ("if_match", "if-match"), ("replaces", "moodledger-replaces")
            ] {
                guard let value = item[field], value != .null else { continue }
                guard let text = value.stringValue, !text.isEmpty, text.utf8.count <= 255 else {
                    throw invalid(field, "must be a string of 1 to 255 bytes")
                }
                headers.append((header, text))
            }
            let id = item["id"].flatMap { $0 == .null ? nil : $0 }
            if let id, id.stringValue == nil { throw invalid("id", "must be a string") }
            let fields = item["body"].flatMap { $0 == .null ? nil : $0 }
            if let fields, case .object = fields {} else if fields != nil { throw invalid("body", "must be an object") }

            var path = "/api/v1/mood"
            switch method {
            case "POST": break
            case "PUT", "DELETE":
                guard let text = id?.stringValue, EntryID(text) != nil else {
                    return .failure(invalid("id", "must be an entry UUID for PUT and DELETE"))
                }
                path += "/" + text
            default: return .failure(invalid("method", "must be POST, PUT or DELETE"))
            }
            var body: [UInt8] = []
            if method != "DELETE" {
                guard let fields else {
                    return .failure(invalid("body", "must be the entry's JSON object for POST and PUT"))
                }
                body = fields.serializedBytes()
                headers.append(("content-type", "application/json"))
            }
            return .success(BatchItem(method: method, path: path, headers: headers, body: body))
        }
    }

    /// The number of items a batch body holds (what the write budget is charged), 1 when it cannot be read: the
    /// request is then refused by its handler.
    static func batchCost(_ request: HTTPRequest) -> Int {
        guard let json = try? JSONParser.parse(String(decoding: request.body, as: UTF8.self)),
            let items = json["items"]?.arrayValue
        else { return 1 }
        return max(1, min(items.count, batchItems))
    }

    /// How many of a batch's items would change something: those without an idempotency key the user's ledger
    /// acknowledged for the same request (a replay is answered, never charged). 0 for a batch that cannot be read
    /// (its handler refuses it).
    static func batchUnreplayed(_ request: HTTPRequest, user: UserLedger) -> Int {
        guard let items = try? batchItems(request) else { return 0 }
        return items.reduce(0) { count, parsed in
            guard case .success(let item) = parsed else { return count }
            let single = HTTPRequest(
                method: item.method, path: item.path, query: "", headers: item.headers, body: item.body)
            let (key, fingerprint) = idempotency(single)
            guard let key, user.isReplay(key, fingerprint: fingerprint) else { return count + 1 }
            return count
        }
    }

    /// Runs every item as its own request against the user's ledger (each appended with its key in its own batch:
    /// all-or-nothing per item), then waits once for everything to be durable and answers `{"results": [{"status",
    /// "etag", "replayed", "body"}]}` in item order. On a worker: it waits for the sync.
    func batch(_ request: HTTPRequest, user: UserLedger, now: Int64) throws -> Reply {
        let items = try Self.batchItems(request)
        return .offload { [self] in
            var answers: [HTTPResponse] = []
            var durableThrough: UInt64 = 0
            for parsed in items {
                let item: BatchItem
                switch parsed {
                case .success(let value): item = value
                case .failure(let failure):
                    answers.append(APIReply.from(any: failure))
                    continue
                }
                let single = HTTPRequest(
                    method: item.method, path: item.path, query: "", headers: item.headers, body: item.body)
                do {
                    guard let route = Route.match(item.path) else {
                        throw APIFailure(404, "not_found", "no such route")
                    }
                    switch try dispatch(route, method: item.method, request: single, user: user, now: now) {
                    case .now(let answer): answers.append(answer)
                    case .afterSync(let answer, let seq):
                        answers.append(answer)
                        durableThrough = max(durableThrough, seq)
                    case .offload(let work): answers.append(try work())
                    }
                } catch {
                    answers.append(APIReply.from(any: error))
                }
            }
            // One fdatasync (group commit) acknowledges every item; a failed sync acknowledges none.
            if durableThrough > 0 {
                do { try user.waitDurable(durableThrough) } catch {
                    throw APIFailure(
                        500, "internal_error", "the batch could not be made durable; nothing was acknowledged")
                }
            }
            return APIReply.data(200) { out in
                out.beginObject()
                out.key("results")
                out.beginArray()
                for answer in answers {
                    out.beginObject()
                    out.key("status")
                    out.int(Int64(answer.status))
                    out.key("etag")
                    out.string(answer.headers.first { $0.name.lowercased() == "etag" }?.value)
                    out.key("replayed")
                    out.bool(answer.headers.contains { $0.name.lowercased() == "idempotent-replayed" })
                    out.key("body")
                    if answer.body.isEmpty { out.null() } else { out.fragment(answer.body) }
                    out.endObject()
                }
                out.endArray()
                out.endObject()
            }
        }
    }
}
