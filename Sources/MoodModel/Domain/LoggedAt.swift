import EventLogFormat

/// An instant (milliseconds since 1970-01-01T00:00:00Z) plus the UTC offset it was logged in, so that
/// "which day" is the user's local day.
public struct LoggedAt: Hashable, Sendable, Comparable {
    /// Milliseconds since the Unix epoch, UTC.
    public var milliseconds: Int64
    /// Stored in 16 bits: entries are held by the million, and every byte of them counts.
    private var offset: Int16

    /// The user's UTC offset when logging, in minutes (−840…+840; the codec accepts up to ±1440).
    public var utcOffsetMinutes: Int {
        get { Int(offset) }
        set { offset = Int16(clamping: newValue) }
    }

    /// Creates a logged-at time.
    public init(milliseconds: Int64, utcOffsetMinutes: Int = 0) {
        self.milliseconds = milliseconds
        self.offset = Int16(clamping: utcOffsetMinutes)
    }

    /// The user's local calendar day.
    public var localDate: LocalDate {
        let local = milliseconds + Int64(utcOffsetMinutes) * 60_000
        return LocalDate(daysSinceEpoch: Int32(local.floorDivided(by: 86_400_000)))
    }

    /// Ordered by instant, then offset.
    public static func < (a: LoggedAt, b: LoggedAt) -> Bool {
        (a.milliseconds, a.utcOffsetMinutes) < (b.milliseconds, b.utcOffsetMinutes)
    }

    /// ISO 8601 in the logged offset, e.g. `2026-03-01T08:15:00.250+01:00` (milliseconds only when non-zero).
    public var iso8601: String { ISO8601.format(milliseconds: milliseconds, offsetMinutes: utcOffsetMinutes) }
}

/// A calendar day (proleptic Gregorian), counted from 1970-01-01.
public struct LocalDate: Hashable, Sendable, Comparable, Strideable, CustomStringConvertible {
    /// Days since 1970-01-01 (negative before).
    public var daysSinceEpoch: Int32

    /// Creates a date from its day number.
    public init(daysSinceEpoch: Int32) { self.daysSinceEpoch = daysSinceEpoch }

    /// Creates a date from year (1…9999), month (1–12) and day (1–31); `nil` if no such day exists. (The year is
    /// bounded first: a crafted file's year of 10¹⁸ must not overflow the arithmetic.)
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1,
            day <= LocalDate.daysIn(month: month, year: year)
        else { return nil }
        // Howard Hinnant's days_from_civil.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        daysSinceEpoch = Int32(era * 146_097 + doe - 719_468)
    }

    /// Parses `yyyy-MM-dd`.
    public init?(_ text: String) {
        // Ten ASCII bytes, digits around two dashes (what files hold): read from the bytes, without splitting.
        if let fast = text.utf8.withContiguousStorageIfAvailable(Self.digits) ?? nil {
            self.init(year: fast.year, month: fast.month, day: fast.day)
            return
        }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2])
        else { return nil }
        self.init(year: y, month: m, day: d)
    }

    /// `yyyy-MM-dd` in plain digits, or nil (the general parse decides).
    private static func digits(_ bytes: UnsafeBufferPointer<UInt8>) -> (year: Int, month: Int, day: Int)? {
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                guard (48...57).contains(bytes[index]) else { return nil }
                value = value * 10 + Int(bytes[index] - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10) else { return nil }
        return (year, month, day)
    }

    /// (year, month, day).
    public var components: (year: Int, month: Int, day: Int) {
        let (year, month, day) = CivilCalendar.date(daysSinceEpoch: Int64(daysSinceEpoch))
        return (Int(year), Int(month), Int(day))
    }

    /// Midnight UTC of this day, in milliseconds since the epoch.
    public var utcMidnightMilliseconds: Int64 { Int64(daysSinceEpoch) * 86_400_000 }

    /// `yyyy-MM-dd`.
    public var description: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(10)
        write(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// ``description`` appended as UTF-8 bytes.
    public func write(into out: inout [UInt8]) {
        let (y, m, d) = components
        ISO8601.digits(y, 4, &out)
        out.append(UInt8(ascii: "-"))
        ISO8601.digits(m, 2, &out)
        out.append(UInt8(ascii: "-"))
        ISO8601.digits(d, 2, &out)
    }

    public static func < (a: LocalDate, b: LocalDate) -> Bool { a.daysSinceEpoch < b.daysSinceEpoch }
    public func distance(to other: LocalDate) -> Int { Int(other.daysSinceEpoch - daysSinceEpoch) }
    public func advanced(by n: Int) -> LocalDate { LocalDate(daysSinceEpoch: daysSinceEpoch + Int32(n)) }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

extension Int64 {
    /// Division rounding toward negative infinity.
    package func floorDivided(by divisor: Int64) -> Int64 {
        let q = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? q - 1 : q
    }
}
