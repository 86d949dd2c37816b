import MoodLedger

/// The seed's response envelope: `{"success": true, "data": …}` or
/// `{"success": false, "error": {"code", "message", "field"}}`, as JSON responses.
enum APIReply {
    static let contentType = ("Content-Type", "application/json; charset=utf-8")

    /// - Parameter errorNull: add `"error": null` after `data` (seed 004's envelope shows it).
    static func data(
        _ status: Int, _ data: JSONValue, headers: [(name: String, value: String)] = [], errorNull: Bool = false
    ) -> HTTPResponse {
        let body = JSONValue.object(
            [("success", .bool(true)), ("data", data)] + (errorNull ? [("error", JSONValue.null)] : [])
        ).serializedBytes()
        return HTTPResponse(status: status, headers: [contentType] + headers, body: body)
    }

    /// A success envelope whose `data` is written by `write` straight into bytes (hot paths: lists, entries).
    static func data(
        _ status: Int, headers: [(name: String, value: String)] = [], errorNull: Bool = false,
        _ write: (inout JSONBytes) -> Void
    )
        -> HTTPResponse
    {
        var out = JSONBytes(capacity: 4096)
        out.beginObject()
        out.key("success")
        out.bool(true)
        out.key("data")
        write(&out)
        if errorNull {
            out.key("error")
            out.null()
        }
        out.endObject()
        return HTTPResponse(status: status, headers: [contentType] + headers, body: out.bytes)
    }

    static func error(
        _ status: Int, _ code: String, _ message: String, field: String? = nil,
        headers: [(name: String, value: String)] = []
    ) -> HTTPResponse {
        let error = JSONValue.object([
            ("code", .string(code)), ("message", .string(message)),
            ("field", .optional(field) { .string($0) })
        ])
        let body = JSONValue.object([("success", .bool(false)), ("error", error)]).serialized()
        return HTTPResponse(status: status, headers: [contentType] + headers, body: Array(body.utf8))
    }

    /// A domain error as an API error: invalid input 422 naming the field, read-only 403, unknown entry 404.
    /// Never echoes input values (notes are health data).
    static func from(_ error: MoodError) -> HTTPResponse {
        switch error.code {
        case .notFound: return Self.error(404, "not_found", "no such entry")
        case .readOnly: return Self.error(403, "read_only", error.rule, field: error.field)
        case .invalidInput: return Self.error(422, "validation_error", error.rule, field: error.field)
        default: return Self.error(500, "internal_error", "the ledger could not be read")
        }
    }

    /// An error thrown while handling a request, mapped to a response.
    static func from(any error: Error) -> HTTPResponse {
        if let error = error as? APIFailure { return error.response }
        if let error = error as? MoodError { return from(error) }
        if let error = error as? PostgresError, error.outcomeUnknown {
            // The connection was lost while the change's transaction was being committed: it may have been made.
            return Self.error(
                503, "outcome_unknown",
                "the database went away while the change was being committed: it may or may not have been made; "
                    + "send it again with the same Idempotency-Key to learn which", headers: [("Retry-After", "1")])
        }
        if let error = error as? PostgresError, error.isUnavailable {
            // The database is away (down, restarting, failing over) or another writer kept winning: nothing was
            // acknowledged, and the same request later may succeed.
            return Self.error(
                503, "database_unavailable", "the database is not available now; nothing was changed, try again",
                headers: [("Retry-After", "1")])
        }
        return Self.error(500, "internal_error", "the request could not be completed; nothing was acknowledged")
    }
}

/// A response to send instead of going on (thrown by the handlers' checks).
struct APIFailure: Error {
    var response: HTTPResponse
    init(
        _ status: Int, _ code: String, _ message: String, field: String? = nil,
        headers: [(name: String, value: String)] = []
    ) {
        response = APIReply.error(status, code, message, field: field, headers: headers)
    }
    init(response: HTTPResponse) { self.response = response }
}
