/// An entry's place in its day: by instant, then id (what a day's list is ordered by, kept beside the id so that
/// ordering never looks an entry up).
struct DayKey: Sendable, Comparable {
    var ms: Int64
    var id: EntryID

    static func < (a: DayKey, b: DayKey) -> Bool { (a.ms, a.id) < (b.ms, b.id) }
}

/// The key of the source-id index: a source id is unique per source.
struct SourceKey: Hashable, Sendable {
    var source: MoodSource
    var sourceID: String
}

extension SourceKey {
    /// A key from a source id's UTF-8 bytes (as an entry's extras hold them).
    init(source: MoodSource, bytes: UnsafeRawBufferPointer) {
        self.init(source: source, sourceID: String(decoding: bytes, as: UTF8.self))
    }
}

/// The id of a snapshot row that is no longer current (its entry removed, or changed and held as a value).
struct HiddenRow: EntryKeyed, Sendable {
    var id: EntryID
}
