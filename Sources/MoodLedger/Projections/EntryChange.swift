/// What one event did to one entry.
public struct EntryChange: Sendable, Equatable {
    /// The entry before the event (`nil` if it was created).
    public var before: MoodEntry?
    /// The entry after the event (`nil` if it was deleted).
    public var after: MoodEntry?

    /// What a change did, without the entries: all the outbox asks.
    enum Kind: Sendable {
        case created, changed, deleted
    }

    /// Where the entries' fold hands a change: one that keeps it, or one that never builds it.
    protocol Sink {
        /// Whether it keeps changes: a sink that does not lets the fold edit an entry where it is held, without the
        /// copy of it as it was before.
        static var keepsChanges: Bool { get }
        /// Takes a change (`change` is evaluated only by a sink that keeps it).
        mutating func keep(_ change: @autoclosure () -> EntryChange)
    }

    /// Keeps the change.
    struct Kept: Sink {
        static var keepsChanges: Bool { true }
        var change: EntryChange?
        @inline(__always)
        mutating func keep(_ change: @autoclosure () -> EntryChange) { self.change = change() }
    }

    /// Builds nothing: a replay that leaves the analytics to its end.
    struct Discarded: Sink {
        static var keepsChanges: Bool { false }
        @inline(__always)
        func keep(_ change: @autoclosure () -> EntryChange) {}
    }
}

extension MoodEntry {
    /// The first and last local day (as days since the epoch) of the entries `eachEntry` visits; nil without any.
    static func dayRange(of eachEntry: ((UnsafePointer<MoodEntry>) -> Void) -> Void) -> ClosedRange<Int32>? {
        var low = Int32.max
        var high = Int32.min
        eachEntry { entry in
            let day = entry.pointee.loggedAt.localDate.daysSinceEpoch
            low = min(low, day)
            high = max(high, day)
        }
        return low <= high ? low...high : nil
    }

    /// Oldest first: by instant, then by id.
    static func loggedEarlier(_ a: MoodEntry, _ b: MoodEntry) -> Bool {
        (a.loggedAt.milliseconds, a.id) < (b.loggedAt.milliseconds, b.id)
    }

    /// Newest first: by instant, then by id for a stable order.
    static func newestFirst(_ a: MoodEntry, _ b: MoodEntry) -> Bool {
        a.loggedAt.milliseconds != b.loggedAt.milliseconds
            ? a.loggedAt.milliseconds > b.loggedAt.milliseconds
            : a.id > b.id
    }
}
