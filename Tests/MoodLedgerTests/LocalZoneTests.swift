import Foundation
import Testing

@testable import MoodLedger
@testable import MoodModel

/// Zones, not offsets (`Specs/mood-model.md`, *Local times and zones*), with fixed zone names so the machine's
/// zone never matters.
@Suite("Local times in IANA zones")
struct LocalZoneTests {
    func local(_ text: String) -> Int64 { ISO8601.parse(text + "Z")!.milliseconds }

    @Test("A local time gets the zone's offset at that instant: DST and half-hour zones")
    func offsets() throws {
        let newYork = try #require(LocalZone(identifier: "America/New_York"))
        let lordHowe = try #require(LocalZone(identifier: "Australia/Lord_Howe"))
        let kolkata = try #require(LocalZone(identifier: "Asia/Kolkata"))
        let cases: [(LocalZone, String, Int)] = [
            (newYork, "2026-05-16T08:30:00", -240), (newYork, "2026-01-16T08:30:00", -300),
            (lordHowe, "2026-07-10T12:00:00", 630), (lordHowe, "2026-01-10T12:00:00", 660),
            (kolkata, "2026-07-10T12:00:00", 330)
        ]
        for (zone, text, offset) in cases {
            let (loggedAt, adjustment) = zone.resolve(localMilliseconds: local(text))
            #expect(loggedAt.utcOffsetMinutes == offset, "\(zone) \(text)")
            #expect(adjustment == nil)
            #expect(
                loggedAt.iso8601.hasPrefix(String(text.prefix(16))), "the local time reads back: \(loggedAt.iso8601)")
        }
    }

    @Test("The repeated hour takes the earlier instant; the skipped hour moves forward by the gap")
    func transitions() throws {
        let newYork = try #require(LocalZone(identifier: "America/New_York"))
        let (back, ambiguous) = newYork.resolve(localMilliseconds: local("2026-11-01T01:30:00"))
        #expect(ambiguous == .ambiguous && back.iso8601 == "2026-11-01T01:30:00-04:00", "\(back.iso8601)")
        let (forward, skipped) = newYork.resolve(localMilliseconds: local("2026-03-08T02:30:00"))
        #expect(
            skipped == .skipped(gapMinutes: 60) && forward.iso8601 == "2026-03-08T03:30:00-04:00", "\(forward.iso8601)")
        let lordHowe = try #require(LocalZone(identifier: "Australia/Lord_Howe"))  // a 30-minute DST shift
        let (gap, lordSkipped) = lordHowe.resolve(localMilliseconds: local("2026-10-04T02:10:00"))
        #expect(lordSkipped == .skipped(gapMinutes: 30) && gap.iso8601 == "2026-10-04T02:40:00+11:00", "\(gap.iso8601)")
    }

    @Test("An instant keeps its instant and takes the zone's offset, landing on the user's local day")
    func instants() throws {
        let newYork = try #require(LocalZone(identifier: "America/New_York"))
        let now = ISO8601.parse("2026-11-21T12:00:00Z")!.milliseconds
        let (utc, _) = try newYork.parseTime("2026-11-20T03:00:00Z", now: now)
        #expect(utc.milliseconds == ISO8601.parse("2026-11-20T03:00:00Z")!.milliseconds)
        #expect(utc.iso8601 == "2026-11-19T22:00:00-05:00" && utc.localDate == LocalDate("2026-11-19"))
        #expect(try newYork.parseDate("today", now: now, field: "d") == LocalDate("2026-11-21"))
        #expect(try newYork.parseDate("yesterday", now: now, field: "d") == LocalDate("2026-11-20"))
        #expect(try newYork.parseDate("2026-11-20T03:00:00Z", now: now, field: "d") == LocalDate("2026-11-19"))
        let (yesterday, _) = try newYork.parseTime("yesterday", now: now)
        #expect(yesterday.iso8601 == "2026-11-20T07:00:00-05:00")
        #expect(try newYork.parseTime("2026-11-16", now: now).0.iso8601 == "2026-11-16T12:00:00-05:00")
        #expect(throws: MoodError.self) { try newYork.parseTime("soon", now: now) }
        #expect(LocalZone(identifier: "Mars/Olympus") == nil)
        #expect(LocalZone.fixed(minutes: 330).description == "UTC+05:30")
    }
}
