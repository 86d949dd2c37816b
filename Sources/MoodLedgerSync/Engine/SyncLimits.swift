/// The client's limits on what a remote may make it do (`Specs/sync.md`, *Limits*). A limit breached is a recorded
/// failure of that request or run, never a crash and never memory in proportion to what a server sends.
public enum SyncLimits {
    /// Most bytes of an answer that carries at most one entry (a write's answer, an entry read, a deletion): 256 KiB,
    /// where the largest entry the rules allow is under 16 KiB of JSON.
    public static let entryAnswerBytes = 256 << 10
    /// Most bytes of the capability read's answer: 8 MiB (seed 004's list answers every record at once).
    public static let probeAnswerBytes = 8 << 20
    /// Most bytes of a changes page: 64 KiB plus 16 KiB a change asked for (8 MiB for the default 500).
    public static func changesPageBytes(limit: Int) -> Int { (64 << 10) + max(1, limit) * (16 << 10) }
    /// Seconds from connecting to the last byte of the answer, for one request: 60.
    public static let requestSeconds: Double = 60
    /// Seconds one read may wait for the next bytes: 30.
    public static let readSeconds: Double = 30
    /// Changes pages one run pulls at most (100,000 changes at the default page size); the rest waits for the next
    /// run, which says so.
    public static let pullPagesPerRun = 200
    /// Most UTF-8 bytes of a remote id: 255. A longer one, or one with a control character, is refused for its item.
    public static let remoteIDBytes = 255
    /// Most characters of a server's error message kept in the log: 200.
    public static let serverMessageCharacters = 200
}
