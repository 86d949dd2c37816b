/// A record to append: an application type and its payload bytes.
public struct PendingRecord: Sendable {
    /// The record type: `1...0xFFFE`; bit `0x8000` marks a type readers may skip.
    public var type: UInt16
    /// The payload, at most ``LogFormat/maximumPayloadSize`` bytes.
    public var payload: [UInt8]
    /// The recorded-at time in microseconds since 1970; `nil` stamps the current time. Never earlier than the
    /// previous record's (an earlier value is raised to it, so the log stays ordered by time).
    public var recordedAt: Int64?

    /// Creates a record to append.
    public init(type: UInt16, payload: [UInt8], recordedAt: Int64? = nil) {
        self.type = type
        self.payload = payload
        self.recordedAt = recordedAt
    }
}
