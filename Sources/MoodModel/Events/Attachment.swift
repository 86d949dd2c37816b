import EventLogFormat

/// A record stored in the same batch as a command's events — all of it durable, or none — which the folds skip:
/// what an edge keeps beside a change (the reference server's idempotency key with its answer).
///
/// Attachments are records whose type has the *safe to ignore* bit (`Specs/log-format.md`): a reader that does not
/// know a kind passes over it. `Ledger.execute` stores them; `Ledger.forEachAttachment`
/// reads them back.
public struct Attachment: Sendable, Equatable {
    /// What an attachment holds; its record type.
    public struct Kind: Sendable, Hashable {
        /// The record type (the safe-to-ignore bit set).
        public let recordType: UInt16

        /// A request's idempotency key with the answer's status and entry (`Specs/server.md`, *Idempotency*):
        /// record type `0x8001`, a JSON object `{"key", "fingerprint", "status", "entry_id"}`.
        public static let idempotencyKey = Kind(recordType: 0x8001)

        /// A change that replaced another device's concurrent edit (`Specs/server.md`, *Replaced edits*): record
        /// type `0x8002`, a JSON object `{"entry_id", "revision", "fields"}`, the last record of the change's batch.
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

    /// The record that carries it.
    package var record: PendingRecord { PendingRecord(type: kind.recordType, payload: payload) }
}
