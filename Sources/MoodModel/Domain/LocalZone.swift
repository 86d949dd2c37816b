import Foundation  // The one place the domain reads IANA zone rules (Foundation's TimeZone); everything else is zone-free.

/// How local times become instants and instants local days: an IANA time zone (DST and half-hour offsets right,
/// as `Specs/mood-model.md` rules) or a fixed UTC offset.
public struct LocalZone: Sendable, Equatable, CustomStringConvertible {
    private enum Rule: Sendable, Equatable {
        case zone(TimeZone)
        case fixed(Int)
    }
    /// `nil`: the machine's zone, looked up when first used (a command that never converts a time never loads the
    /// zone rules: about 1 ms of each `moodledger` process).
    private let rule: Rule?

    /// The machine's zone, looked up once per process: `$TZ` when it names a zone, else the system setting.
    private static let machine: Rule = {
        if let name = ProcessInfo.processInfo.environment["TZ"],
            let zone = LocalZone(identifier: name.hasPrefix(":") ? String(name.dropFirst()) : name)
        {
            return zone.resolved
        }
        return .zone(TimeZone.current)
    }()

    /// The rule itself, the machine's looked up.
    private var resolved: Rule { rule ?? Self.machine }

    public static func == (a: LocalZone, b: LocalZone) -> Bool { a.resolved == b.resolved }

    /// An IANA zone by name (`Europe/Berlin`, `Australia/Lord_Howe`), or `nil` if unknown.
    public init?(identifier: String) {
        guard !identifier.isEmpty, let zone = TimeZone(identifier: identifier) else { return nil }
        rule = .zone(zone)
    }

    /// A fixed offset from UTC in minutes (`--utc-offset`).
    public static func fixed(minutes: Int) -> LocalZone { LocalZone(rule: .fixed(minutes)) }

    private init(rule: Rule?) { self.rule = rule }

    /// The machine's zone: `$TZ` when it names a zone, else the system setting (looked up when first used, then
    /// kept for the process).
    public static var current: LocalZone { LocalZone(rule: nil) }

    /// `Europe/Berlin`, or `UTC+05:30` for a fixed offset.
    public var description: String {
        switch resolved {
        case .zone(let zone): return zone.identifier
        case .fixed(let minutes):
            return "UTC" + (minutes < 0 ? "-" : "+") + ISO8601.pad(abs(minutes) / 60, 2) + ":"
                + ISO8601.pad(abs(minutes) % 60, 2)
        }
    }

    /// The zone's UTC offset in minutes at an instant (ms since 1970).
    public func offsetMinutes(atUTC milliseconds: Int64) -> Int {
        switch resolved {
        case .fixed(let minutes): return minutes
        case .zone(let zone):
            return zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(milliseconds) / 1000)) / 60
        }
    }

    /// An instant as it reads in this zone.
    public func loggedAt(atUTC milliseconds: Int64) -> LoggedAt {
        LoggedAt(milliseconds: milliseconds, utcOffsetMinutes: offsetMinutes(atUTC: milliseconds))
    }

    /// The local date of an instant.
    public func localDate(atUTC milliseconds: Int64) -> LocalDate { loggedAt(atUTC: milliseconds).localDate }

    /// What became of a local time that the clocks skipped or showed twice.
    public enum Adjustment: Sendable, Equatable {
        /// The local time shows twice (clocks set back): the earlier instant was taken.
        case ambiguous
        /// The local time never shows (clocks set forward): moved forward by the gap (minutes).
        case skipped(gapMinutes: Int)
    }

    /// A local wall-clock time (ms since 1970 as if it were UTC) as an instant in this zone: the zone's offset at
    /// that instant; the earlier instant of a repeated hour; a skipped time moved forward by the gap.
    /// - Returns: the instant with its offset, and the adjustment made, if any.
    public func resolve(localMilliseconds local: Int64) -> (LoggedAt, Adjustment?) {
        // Offsets in force a day either side cover every transition near this time.
        let (earlier, middle, later) = (
            offsetMinutes(atUTC: local - 86_400_000), offsetMinutes(atUTC: local),
            offsetMinutes(atUTC: local + 86_400_000)
        )
        if earlier == middle, middle == later, offsetMinutes(atUTC: local - Int64(middle) * 60_000) == middle {
            // No transition near (most times): the one offset, without building the candidates.
            return (LoggedAt(milliseconds: local - Int64(middle) * 60_000, utcOffsetMinutes: middle), nil)
        }
        let candidates = Set([earlier, middle, later])
        let valid = candidates.filter { offset in offsetMinutes(atUTC: local - Int64(offset) * 60_000) == offset }
            .sorted(by: >)  // larger offset = earlier instant
        if let first = valid.first {
            return (
                LoggedAt(milliseconds: local - Int64(first) * 60_000, utcOffsetMinutes: first),
                valid.count > 1 ? .ambiguous : nil
            )
        }
        // In a gap: read the time with the offset before the transition, which lands after it.
        let before = offsetMinutes(atUTC: local - 86_400_000)
        let after = offsetMinutes(atUTC: local + 86_400_000)
        let instant = local - Int64(before) * 60_000
        return (loggedAt(atUTC: instant), .skipped(gapMinutes: abs(after - before)))
    }
}

extension LocalZone {
    /// A time typed by a person (`Specs/mood-model.md`, *Times on the command line*): `now` or `today` (now),
    /// `yesterday` (this time yesterday), `YYYY-MM-DD` (noon that day), a local date-time without an offset
    /// (`2026-11-16T08:30`, resolved in this zone), or an instant with `Z` or an offset (kept exactly; its offset
    /// becomes this zone's at that instant).
    /// - Parameters:
    ///   - text: what was typed.
    ///   - now: the current time, ms since 1970.
    ///   - field: the field named in errors.
    /// - Returns: the instant with its offset, and any adjustment of a skipped or repeated local time.
    /// - Throws: ``MoodError`` `invalid_input` naming `field`.
    public func parseTime(
        _ text: String, now: Int64, field: String = "logged_at"
    ) throws(MoodError)
        -> (LoggedAt, Adjustment?)
    {
        switch text.lowercased() {
        case "now", "today": return (loggedAt(atUTC: now), nil)
        case "yesterday":
            let local = loggedAt(atUTC: now)
            return resolve(localMilliseconds: local.milliseconds + Int64(local.utcOffsetMinutes) * 60_000 - 86_400_000)
        default: break
        }
        if let date = LocalDate(text) {
            return resolve(localMilliseconds: date.utcMidnightMilliseconds + 12 * 3_600_000)
        }
        if let instant = ISO8601.parse(text) { return (loggedAt(atUTC: instant.milliseconds), nil) }
        if let local = ISO8601.parse(text + "Z") { return resolve(localMilliseconds: local.milliseconds) }
        throw MoodError.invalid(
            field,
            "must be now, today, yesterday, YYYY-MM-DD, a local date-time like "
                + "2026-11-16T08:30, or an instant like 2026-11-16T08:30:00+01:00")
    }

    /// A date typed by a person: `today`, `yesterday`, `YYYY-MM-DD`, or a date-time (its local date in this zone).
    /// - Throws: ``MoodError`` `invalid_input` naming `field`.
    public func parseDate(_ text: String, now: Int64, field: String) throws(MoodError) -> LocalDate {
        switch text.lowercased() {
        case "today": return localDate(atUTC: now)
        case "yesterday": return localDate(atUTC: now).advanced(by: -1)
        default: break
        }
        if let date = LocalDate(text) { return date }
        if let instant = ISO8601.parse(text) { return localDate(atUTC: instant.milliseconds) }
        if let local = ISO8601.parse(text + "Z") { return local.localDate }
        throw MoodError.invalid(field, "must be today, yesterday or a date YYYY-MM-DD")
    }

    /// Words for an adjustment, for reports: `02:30 is skipped in Europe/Berlin (clocks go forward): moved forward 60 min`.
    public func explain(_ adjustment: Adjustment, local: String) -> String {
        switch adjustment {
        case .ambiguous: return "\(local) occurs twice in \(self) (clocks go back): the earlier one was taken"
        case .skipped(let gap):
            return "\(local) does not exist in \(self) (clocks go forward): moved forward \(gap) min"
        }
    }
}
