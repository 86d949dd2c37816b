import EventLogFormat

/// A record stored in the same batch as a command's events — all of it durable, or none — which the folds skip:
/// what an edge keeps beside a change that no question of the fold needs (what carried a batch of sync attempts).
///
/// Attachments are records whose type has the *safe to ignore* bit (`Specs/log-format.md`): a reader that does not
/// know a kind passes over it. `Ledger.execute` stores them after a command's events. Three kinds older versions
/// wrote are read by the folds as the events that now carry them (``event(recordType:payload:)``).
public struct Attachment: Sendable, Equatable {
    /// What an attachment holds; its record type.
    public struct Kind: Sendable, Hashable {
        /// The record type (the safe-to-ignore bit set).
        public let recordType: UInt16

        /// A request's idempotency key as older versions kept it: record type `0x8001`, a JSON object `{"key",
        /// "fingerprint", "status", "entry_id"}`. Written no more (`request.keyed` carries it); the folds read one
        /// as that event (``event(recordType:payload:)``).
        public static let idempotencyKey = Kind(recordType: 0x8001)

        /// A replacement note as older versions kept it: record type `0x8002`, a JSON object `{"entry_id",
        /// "revision", "fields"}`. Written no more (`edit.replaced` carries it); the folds read one as that event.
        public static let replacement = Kind(recordType: 0x8002)

        /// What carried a batch of sync attempts (`Specs/sync.md`, *Transports*): record type `0x8003`, a JSON object
        /// `{"carrier"}` such as `"HTTPS via URLSession, TLS 1.3"` (with `batch_items`, and the boot clock's `boot` and
        /// `boot_ms` when known), the last record of the attempts' batch.
        public static let carrier = Kind(recordType: 0x8003)

        /// The anchor of a HealthKit pull as older versions kept it: record type `0x8004`, the store's opaque anchor
        /// bytes. Written no more (`healthkit.anchored` carries it); the folds read one as that event
        /// (`Specs/events.md`).
        public static let healthKitAnchor = Kind(recordType: 0x8004)

        init(recordType: UInt16) {
            precondition(recordType & LogFormat.safeToIgnoreBit != 0, "an attachment's type is safe to ignore")
            self.recordType = recordType
        }
    }

    /// What it holds.
    public var kind: Kind
    /// Its bytes, as the kind defines them.
    public var payload: [UInt8]

    /// An attachment of `kind` holding `payload`.
    public init(_ kind: Kind, payload: [UInt8]) {
        self.kind = kind
        self.payload = payload
    }

    /// The event an older version's attachment is read as (`Specs/events.md`, *Records older versions wrote*):
    /// `0x8001` as `request.keyed`, `0x8002` as `edit.replaced`, `0x8004` as `healthkit.anchored`; `nil` for
    /// another type, or for a payload that breaks the event's rules (such a record is passed over, as before).
    public static func event(recordType: UInt16, payload: some Collection<UInt8>) -> MoodEvent? {
        switch recordType {
        case Kind.healthKitAnchor.recordType: return .healthKitAnchored(Array(payload))
        case Kind.idempotencyKey.recordType:
            guard let json = try? JSONParser.parse(String(decoding: payload, as: UTF8.self)),
                let key = json["key"]?.stringValue, let fingerprint = json["fingerprint"]?.stringValue,
                let status = json["status"]?.intValue
            else { return nil }
            let id = json["entry_id"]?.stringValue.flatMap(EntryID.init)
            let request = RequestKey(key: key, fingerprint: fingerprint, status: status, entryID: id)
            return request.brokenRule == nil ? .requestKeyed(request) : nil
        case Kind.replacement.recordType:
            guard let json = try? JSONParser.parse(String(decoding: payload, as: UTF8.self)),
                let id = json["entry_id"]?.stringValue.flatMap(EntryID.init), id != .none,
                let revision = json["revision"]?.intValue, revision > 0,
                let names = json["fields"]?.arrayValue?.compactMap(\.stringValue)
            else { return nil }
            let fields = MergeFields.named.reduce(into: MergeFields()) {
                if names.contains($1.name) { $0.insert($1.field) }
            }
            return fields.isEmpty ? nil : .editReplaced(id, revision: UInt64(revision), fields: fields)
        default: return nil
        }
    }

    /// The record that carries it.
    package var record: PendingRecord { PendingRecord(type: kind.recordType, payload: payload) }
}
