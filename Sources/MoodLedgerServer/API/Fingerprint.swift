import MoodLedger

/// What makes two requests under one `Idempotency-Key` the same request (`Specs/server.md`, *Idempotency*): SHA-256
/// of `METHOD SP path LF` and the body's canonical JSON — object keys sorted by their UTF-8 bytes, no whitespace,
/// an integral number as an integer — or the body's bytes when it is not JSON. Keys stored by an earlier rule (the
/// body's bytes) still match by the bytes.
struct Fingerprint: Sendable, Equatable {
    /// The fingerprint stored with a key.
    var canonical: String
    /// The fingerprint of the body's bytes as sent.
    var bytes: String

    /// Whether a stored fingerprint names this request.
    func matches(_ stored: String) -> Bool { stored == canonical || stored == bytes }

    /// The canonical form of a JSON body, or `nil` when the body is not JSON.
    static func canonicalJSON(_ body: [UInt8]) -> [UInt8]? {
        guard !body.isEmpty, let value = try? JSONParser.parse(String(decoding: body, as: UTF8.self)) else {
            return nil
        }
        return Array(canonical(value).serialized().utf8)
    }

    private static func canonical(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let pairs):
            return .object(
                pairs.map { ($0.0, canonical($0.1)) }.sorted {
                    Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8))
                })
        case .array(let items): return .array(items.map(canonical))
        case .double(let number) where number.rounded() == number && abs(number) < 9.0e15: return .int(Int64(number))
        default: return value
        }
    }
}
