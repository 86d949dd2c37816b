// The calendar arithmetic every layer shares (the log names its repair backups by UTC time; the domain's local
// dates use the same day numbers), in one file of its own.

/// Formats instants as UTC text without Foundation.
package enum UTCTimestamp {
    /// `yyyyMMdd'T'HHmmss'Z'`.
    package static func compact(microseconds: Int64) -> String {
        let seconds = microseconds >= 0 ? microseconds / 1_000_000 : (microseconds - 999_999) / 1_000_000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilCalendar.date(daysSinceEpoch: days)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return pad(year, 4) + pad(month, 2) + pad(day, 2) + "T" + pad(secondOfDay / 3600, 2)
            + pad(secondOfDay % 3600 / 60, 2) + pad(secondOfDay % 60, 2) + "Z"
    }
}

/// The proleptic Gregorian calendar by day number (Howard Hinnant's algorithms), shared by every layer.
public enum CivilCalendar {
    /// (year, month 1–12, day 1–31) of a day counted from 1970-01-01.
    public static func date(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
