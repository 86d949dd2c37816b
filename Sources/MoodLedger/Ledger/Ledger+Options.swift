import EventLog
import Platform

extension Ledger {
    /// How a ledger is opened. Every property documents its default.
    public struct Options: Sendable {
        /// When appends are durable. Default: `EventLog/Durability/always` (each command is synced before it
        /// returns).
        public var durability: EventLog.Durability = .always
        /// Write a snapshot after this many events (and on close). Default: 10,000. 0 turns automatic snapshots off,
        /// on close too; `.max` leaves only the ones on close (``snapshotOnCloseMinimum``).
        public var snapshotInterval = 10_000
        /// Close writes a snapshot when at least this many events are not covered by one. Default: 1 (every close
        /// after a change). The CLI, which opens and closes the ledger for every command, uses 1,000 so that one
        /// `log` does not rewrite the whole snapshot; a warm open then replays at most that many events.
        public var snapshotOnCloseMinimum = 1
        /// A read-only open that replayed at least this many events leaves a snapshot for the next open, when no
        /// writer holds the ledger (it takes the writer lock without waiting, only for the write). Default: 10,000;
        /// `.max` never. A read that replayed cold is then not replayed cold again.
        public var snapshotAfterReadMinimum = 10_000
        /// Besides the newest snapshot, keep the oldest of every bucket of this many sequence numbers, doubled until
        /// there are at most eight buckets, and no more than twice the log's bytes in all, so time travel starts from
        /// a snapshot without the snapshots outgrowing the log. Default: 100,000.
        public var sparseSnapshotInterval: UInt64 = 100_000
        /// The iOS data-protection class of the ledger's directory and files (health data at rest), applied by every
        /// writing open; new files in the directory take it. Default:
        /// `FileProtectionClass/completeUntilFirstUserAuthentication` (background syncs work once the device was
        /// unlocked after boot). Nothing on Linux and macOS.
        public var fileProtection = FileProtectionClass.completeUntilFirstUserAuthentication
        /// Open without the writer lock; commands are refused. Default: `false`.
        public var readOnly = false
        /// Create the ledger directory when missing. Default: `true` (ignored when read-only).
        public var createIfMissing = true
        /// Load snapshots on open. Default: `true`; `false` always replays the whole log.
        public var useSnapshots = true
        /// Snapshots of at least this many bytes are checked where they are read — each 1 KiB piece of their rows,
        /// bodies and indexes when first read — instead of whole on open, so that opening costs what is read, not
        /// the size of the history. A piece that fails its checksum is never answered from: the state is rebuilt
        /// from the log and the query asked again (``read(_:)``). Default: 32 MiB (about 370,000 entries); `.max`
        /// checks every snapshot whole on open.
        public var checkSnapshotsWhereReadFrom = 32 << 20
        /// Which `logged_at` instants commands accept. Default ``LoggedAtBounds/userInput``; the reference server
        /// uses ``LoggedAtBounds/storage``.
        public var loggedAtBounds = LoggedAtBounds.userInput
        /// Which words a command accepts as labels and associations. Default ``WordPolicy/open``: a user's word is kept
        /// as they chose it; ``WordPolicy/apple`` refuses a word outside Apple's 38 labels and 18 associations,
        /// naming it and Apple's closest (imports, pulls and HealthKit are not commands an app's user types into).
        public var vocabulary = WordPolicy.open
        /// The zone whose offset an entry logged "now" gets. Default `nil`: the fixed ``utcOffsetMinutes``. The
        /// `moodledger` tool sets the machine's zone (or `--tz`).
        public var zone: LocalZone?
        /// The UTC offset (minutes) for entries logged without a time. Default: the machine's offset at the time it
        /// is read.
        public var utcOffsetMinutes: Int {
            get { utcOffsetSet ?? LocalZone.current.offsetMinutes(atUTC: SystemIO().nowMicroseconds() / 1000) }
            set { utcOffsetSet = newValue }
        }
        private var utcOffsetSet: Int?
        /// The clock, in milliseconds since 1970. Default: the system clock. Demos and tests pass a fixed one.
        public var clock: @Sendable () -> Int64 = { SystemIO().nowMicroseconds() / 1000 }
        /// Draws new entry and command ids. Default: random UUIDs.
        public var newID: @Sendable () -> EntryID = { EntryID.random() }
        /// Replays of at least this many events read and decode on a second thread while the fold runs on the
        /// caller's. Default: 20,000 (below that the thread hand-over costs more than it saves).
        public var parallelReplayThreshold: UInt64 = 20_000
        /// The system-call layer. Default: `SystemIO`.
        public var io: any PlatformIO = SystemIO()
        /// How long a write (or, with ``keepsWriterLock``, the open) waits for another process's before failing with
        /// `locked`. Default: 5,000 (a write holds the lock for milliseconds).
        public var lockWaitMilliseconds = 5_000
        /// Whether this process holds the ledger's writer lock for as long as the ledger is open. Default `false`:
        /// the lock is taken for each write only — caught up with what other processes wrote, appended, synced,
        /// released — so an app, its widget, an App Intent and the command line can all keep the ledger open and
        /// write, and an idle or suspended app holds no lock (`Specs/ledger.md`, *Several processes*). `true` is
        /// for a process that owns the directory (the reference server): one writer, nothing to catch up.
        public var keepsWriterLock = false

        /// The default options.
        public init() {}
    }

    /// A point in a ledger's history: a sequence number or an instant.
    public enum Point: Sendable, Equatable, CustomStringConvertible {
        /// Just after the event with this sequence number.
        case seq(UInt64)
        /// Just after the last event recorded at or before this instant (milliseconds since 1970).
        case instant(Int64)

        /// Parses `1200` (a seq) or an ISO 8601 instant.
        public init?(parsing text: String) {
            if let seq = UInt64(text) {
                self = .seq(seq)
            } else if let instant = ISO8601.parse(text) {
                self = .instant(instant.milliseconds)
            } else {
                return nil
            }
        }

        public var description: String {
            switch self {
            case .seq(let seq): return "seq \(seq)"
            case .instant(let ms): return ISO8601.format(milliseconds: ms, offsetMinutes: 0)
            }
        }
    }
}

extension Ledger.Options {
    /// The snapshots the policy keeps among `seqs` after a write (`Specs/ledger.md`, *Policy*): the newest and up to
    /// eight sparse ones, held to twice the log's bytes (1 MiB at least).
    /// - Parameters:
    ///   - seqs: covered sequence numbers of the snapshots present, newest first.
    ///   - logBytes: the log's size when the newest was written.
    ///   - size: each snapshot's bytes (a benchmark that has not written them passes an estimate).
    /// - Returns: those kept, newest first.
    public func snapshotsKept(newestFirst seqs: [UInt64], logBytes: Int64, size: (UInt64) -> Int64) -> [UInt64] {
        SnapshotStore.kept(
            newestFirst: seqs, sparseInterval: sparseSnapshotInterval, budget: max(2 * logBytes, 1 << 20),
            size: size)
    }
}

/// Which words a ledger's commands take (``Ledger/Options/vocabulary``).
public enum WordPolicy: Sendable, Equatable {
    /// Apple's words, and any other word as the user chose it (the default).
    case open
    /// Apple's words only (any spelling of them): another word is refused, with Apple's closest named.
    case apple
}

extension Ledger {
    /// What `log` did: a ``CommandResult`` whose ``CommandResult/entry`` is the entry as it now is (never `nil` after
    /// a log).
    public typealias LogOutcome = CommandResult
}
