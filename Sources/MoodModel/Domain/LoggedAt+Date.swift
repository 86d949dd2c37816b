import Foundation  // Date and TimeZone: the app's own types for an instant and a zone.

extension LoggedAt {
    /// The instant `date` (to the millisecond, earlier fractions dropped), with the UTC offset `timeZone` had then
    /// (daylight saving time included): what a form's date picker and the user's zone give.
    /// - Parameters:
    ///   - date: the instant.
    ///   - timeZone: the zone it happened in; default: the device's current zone.
    public init(_ date: Date, timeZone: TimeZone = .current) {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let seconds = timeZone.secondsFromGMT(for: date)
        self.init(milliseconds: milliseconds, utcOffsetMinutes: Int((Double(seconds) / 60).rounded()))
    }

    /// The instant as a `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
