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

    /// A durable statement from outside the log that it once held every sequence number through `seq` (the layer
    /// above's snapshot covering that record): a log of the same file id that ends below it has lost acknowledged
    /// records (`Specs/log-format.md`, *Evidence of loss*).
    public struct Evidence: Sendable, Equatable {
        /// The file id the statement was made for.
        public var fileID: [UInt8]
        /// The last sequence number it proves.
        public var seq: UInt64
        /// What it is, for messages (`snapshot 2650`).
        public var source: String

        /// Creates a statement.
        public init(fileID: [UInt8], seq: UInt64, source: String) {
            self.fileID = fileID
            self.seq = seq
            self.source = source
        }

        /// The strongest statement about a log of `fileID`, if any.
        static func strongest(_ all: [Evidence], for fileID: [UInt8]) -> Evidence? {
            all.filter { $0.fileID == fileID }.max { $0.seq < $1.seq }
        }
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
        /// Whether a writer holds `LOCK` for as long as it is open (`true`, the default: one writer per directory), or
        /// only while it writes (`false`: ``EventLog/beginWrite(waitMilliseconds:)`` … ``EventLog/endWrite()``
        /// around each write, so processes write in turn and an idle open log holds no lock).
        public var lockWhileOpen = true
        /// The system-call layer. Default: Platform's `SystemIO`. Tests pass a fault-injecting one.
        public var io: any PlatformIO = SystemIO()
        /// What proves the log once reached a sequence number (see ``Evidence``). A log that ends below the strongest
        /// statement for its file id has lost acknowledged records: a writer's open refuses with `corrupted` naming
        /// the missing range and trims nothing (a repair records the loss first); a reader's open succeeds and says
        /// so in ``EventLog/missingSeqs``. Default: none.
        public var evidence: [Evidence] = []

        /// The default configuration.
        public init() {}
    }
}
