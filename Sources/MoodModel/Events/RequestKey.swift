/// A request's idempotency key as a server stores it with the change the request made (`request.keyed`,
/// `Specs/server.md`, *Idempotency-Key*): enough to answer the same request again without applying it twice.
public struct RequestKey: Sendable, Equatable {
    /// The key scoped by its route: `METHOD SP path SP key` (1 to 1,024 bytes of UTF-8).
    public var key: String
    /// The request's fingerprint: SHA-256 in lowercase hex of the method, route and canonical body (1 to 128 bytes).
    public var fingerprint: String
    /// The status of the first answer (200 … 299).
    public var status: Int
    /// The entry the first answer named, if any.
    public var entryID: EntryID?

    /// A stored key.
    public init(key: String, fingerprint: String, status: Int, entryID: EntryID?) {
        self.key = key
        self.fingerprint = fingerprint
        self.status = status
        self.entryID = entryID
    }

    /// The longest scoped key, in bytes: a method, a route's path and a 255-character key fit with room to spare.
    public static let maximumKeyBytes = 1_024
    /// The longest fingerprint, in bytes.
    public static let maximumFingerprintBytes = 128

    /// The first rule of `request.keyed` (`Specs/events.md`, *Strict decoding*) the key breaks, naming its field;
    /// `nil` when it keeps them all.
    public var brokenRule: String? {
        if key.isEmpty || key.utf8.count > Self.maximumKeyBytes { return "key: 1 to \(Self.maximumKeyBytes) bytes" }
        if fingerprint.isEmpty || fingerprint.utf8.count > Self.maximumFingerprintBytes {
            return "fingerprint: 1 to \(Self.maximumFingerprintBytes) bytes"
        }
        return (200...299).contains(status) ? nil : "status: not 200 … 299"
    }
}
