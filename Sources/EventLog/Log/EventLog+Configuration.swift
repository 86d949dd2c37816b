import Platform

extension EventLog {
    /// When appends become durable.
    public enum Durability: Sendable, Equatable {
        /// Every `append` writes and syncs before it returns (group commit: one sync per batch). The default.
        case always
        /// `append` only writes; the caller calls ``EventLog/sync()`` to make what was written durable.
        case batched
    }

    /// Whether the log is opened for writing.
    public enum Access: Sendable, Equatable {
        /// Takes the writer lock; trims a torn tail; appends allowed. The default.
        case readWrite
        /// Takes no lock and changes nothing; a torn tail is ignored, not trimmed.
        case readOnly
    }

    /// How an ``EventLog`` is opened. Every property documents its default.
    public struct Configuration: Sendable {
        /// Read-write (default) or read-only.
        public var access: Access = .readWrite
        /// When appends are durable. Default: ``Durability/always``.
        public var durability: Durability = .always
        /// Whether to create the directory and an empty log when missing. Default: `true` (read-write only).
        public var createIfMissing = true
        /// A record known to be valid (e.g. the one a snapshot covers up to). When set, open checks that this
        /// record is still at its offset with its checksum and scans only the records after it; the part
        /// before it is checked when it is read. Default: `nil`, scan and check the whole file on open.
        /// If the record does not match, open falls back to a full scan.
        public var checkpoint: RecordLocation? = nil
        /// How long open waits for another writer to release the lock before failing with `locked`.
        /// Default: 0 (fail at once). A short wait helps when a process that just forked still holds an
        /// inherited lock descriptor for the moment before its exec.
        public var lockWaitMilliseconds = 0
        /// The system-call layer. Default: Platform's `SystemIO`. Tests pass a fault-injecting one.
        public var io: any PlatformIO = SystemIO()

        /// The default configuration.
        public init() {}
    }
}
