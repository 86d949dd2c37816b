import Foundation
import MoodLedger
import MoodLedgerSync
import Synchronization

/// A backend that is exactly one seed's documents (`../shared/seed-api`, `Tests/Seed/schemas`): only the documented
/// routes, every request body validated against the seed's schema (unknown fields refused with 400), no changes
/// feed, no revisions, no `If-Match`, no capabilities route, and for seed 001 no update or delete route. It records
/// every request and every violation, so a test can say "zero requests outside the documented shapes".
final class SeedBackend: SyncTransport, @unchecked Sendable {
    // @unchecked Sendable: the schemas never change after init; all mutable state is in one Mutex.
    struct Request: Sendable {
        var method: String
        var path: String
        var body: JSONValue?
        var status: Int
    }

    struct Store: Sendable {
        var entries: [(id: String, body: JSONValue)] = []
        var requests: [Request] = []
        var violations: [String] = []
    }

    let dialect: RemoteDialect
    private let schema: JSONSchema
    private let store = Mutex(Store())

    init(_ dialect: RemoteDialect) throws {
        self.dialect = dialect
        switch dialect {
        case .moodAPI: schema = try JSONSchema.seed("mood-api-create")
        case .wellness: schema = try JSONSchema.seed("wellness-mood-request")
        case .progress: schema = try JSONSchema.seed("progress-create")
        }
    }

    var requests: [Request] { store.withLock { $0.requests } }
    var violations: [String] { store.withLock { $0.violations } }
    /// What the backend stored: its id and the stored record.
    var entries: [(id: String, body: JSONValue)] { store.withLock { $0.entries } }

    /// Stores a record as another client of the seed would have made it (`body` in the seed's stored shape, without
    /// the id); returns its id.
    func insert(_ body: JSONValue) -> String {
        let id = UUID().uuidString.lowercased()
        store.withLock { $0.entries.append((id, record(id: id, from: body))) }
        return id
    }

    /// Replaces a stored record's fields, as another client's edit would.
    func edit(_ id: String, _ change: (inout [(String, JSONValue)]) -> Void) {
        store.withLock { store in
            guard let index = store.entries.firstIndex(where: { $0.id == id }),
                case .object(var pairs) = store.entries[index].body
            else { return }
            change(&pairs)
            store.entries[index].body = .object(pairs)
        }
    }

    func perform(_ request: SyncRequest, credentials: SyncCredentials) -> SyncExchange {
        guard credentials.apiKey != nil, credentials.token != nil else {
            return .response(status: 401, headers: [], body: Array(#"{"error":"missing credentials"}"#.utf8))
        }
        let (status, body) = handle(request.method, request.path, request.body)
        return .response(
            status: status, headers: [(name: "Content-Type", value: "application/json")], body: Array(body.utf8))
    }

    /// One request: `(status, JSON body)`.
    func handle(_ method: String, _ target: String, _ bytes: [UInt8]?) -> (Int, String) {
        let path = String(target.split(separator: "?", maxSplits: 1).first ?? "")
        let json = bytes.flatMap { $0.isEmpty ? nil : try? JSONParser.parse(String(decoding: $0, as: UTF8.self)) }
        return store.withLock { store in
            let (status, answer) = route(method, path, target, bytes, json, &store)
            store.requests.append(Request(method: method, path: target, body: json, status: status))
            return (status, answer)
        }
    }

    private var collection: String {
        switch dialect {
        case .moodAPI: return "/api/v1/mood"
        case .wellness: return "/api/v1/wellness/mood-entries"
        case .progress: return "/api/v1/progress"
        }
    }

    private func route(
        _ method: String, _ path: String, _ target: String, _ bytes: [UInt8]?, _ json: JSONValue?,
        _ store: inout Store
    ) -> (Int, String) {
        let itemID = path.hasPrefix(collection + "/") ? String(path.dropFirst(collection.count + 1)) : nil
        switch (method, path == collection, itemID) {
        case ("GET", true, _):
            // The documented query: `from` and `to` (dates, inclusive, on `logged_at`), `limit` (1–100, default 30),
            // `offset`.
            var query: [String: String] = [:]
            for pair in (target.split(separator: "?", maxSplits: 1).dropFirst().first ?? "").split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { query[parts[0]] = parts[1] }
            }
            let limit = min(max(Int(query["limit"] ?? "") ?? 30, 1), 100)
            let offset = max(Int(query["offset"] ?? "") ?? 0, 0)
            let matching = store.entries.map(\.body).filter { body in
                let day = String((body["logged_at"]?.stringValue ?? "").prefix(10))
                return query["from"].map { day >= $0 } ?? true && query["to"].map { day <= $0 } ?? true
            }
            let page = Array(matching.dropFirst(offset).prefix(limit))
            return (
                200,
                JSONValue.object([
                    ("success", .bool(true)),
                    (
                        "data",
                        .object([
                            ("entries", .array(page)), ("total", .int(Int64(matching.count))),
                            ("limit", .int(Int64(limit))), ("offset", .int(Int64(offset))),
                            ("has_more", .bool(offset + page.count < matching.count))
                        ])
                    )
                ]).serialized
            )
        case ("POST", true, _):
            guard let body = validated(method, path, bytes, json, &store) else { return bad("invalid request body") }
            if dialect == .moodAPI, let sourceID = body["source_id"]?.stringValue,
                let existing = store.entries.first(where: { $0.body["source_id"]?.stringValue == sourceID })
            {
                return (200, envelope(existing.body))  // the seed's idempotency by source_id
            }
            let id = UUID().uuidString.lowercased()
            let stored = record(id: id, from: body)
            store.entries.append((id, stored))
            return (201, envelope(stored))
        case ("PUT", false, let id?) where dialect == .wellness:
            guard let body = validated(method, path, bytes, json, &store) else { return bad("invalid request body") }
            guard let index = store.entries.firstIndex(where: { $0.id == id }) else {
                return (404, #"{"error":"not found"}"#)
            }
            store.entries[index].body = record(id: id, from: body)
            return (200, envelope(store.entries[index].body))
        case ("GET", false, let id?) where dialect == .wellness && id != "analytics":
            guard let index = store.entries.firstIndex(where: { $0.id == id }) else {
                return (404, #"{"error":"not found"}"#)
            }
            return (200, envelope(store.entries[index].body))
        case ("DELETE", false, let id?) where dialect == .wellness:
            guard let index = store.entries.firstIndex(where: { $0.id == id }) else {
                return (404, #"{"error":"not found"}"#)
            }
            store.entries.remove(at: index)
            return (204, "")
        default:
            store.violations.append("\(method) \(path): not a documented route")
            return (404, #"{"error":"404 page not found"}"#)
        }
    }

    private func bad(_ message: String) -> (Int, String) {
        (400, JSONValue.object([("error", .string(message))]).serialized)
    }

    private func validated(
        _ method: String, _ path: String, _ bytes: [UInt8]?, _ json: JSONValue?,
        _ store: inout Store
    ) -> JSONValue? {
        guard let json else {
            store.violations.append("\(method) \(path): body is not JSON")
            return nil
        }
        var problems = schema.violations(of: json)
        if dialect == .wellness, json["valence"] == nil { problems.append("valence is required") }
        if !problems.isEmpty {
            store.violations.append("\(method) \(path): " + problems.joined(separator: "; "))
            return nil
        }
        return json
    }

    /// The stored record: the body's fields (seed 001 converts a legacy `mood_score` to a valence) and the id.
    private func record(id: String, from body: JSONValue) -> JSONValue {
        guard case .object(var pairs) = body else { return body }
        if dialect == .moodAPI, let score = body["mood_score"]?.doubleValue {
            pairs.removeAll { $0.0 == "mood_score" }
            pairs.append(("valence", .double((score - 5.5) / 4.5)))
        }
        return .object([("id", .string(id))] + pairs)
    }

    private func envelope(_ data: JSONValue) -> String {
        JSONValue.object([("success", .bool(true)), ("data", data)]).serialized
    }
}

extension JSONValue {
    var serialized: String { String(decoding: serializedBytes(), as: UTF8.self) }
}
