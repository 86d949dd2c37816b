import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

@Suite("Insights equal brute force over the entries")
struct InsightsTests {
    @Test(
        "Random workloads with updates and deletes: every insight equals a brute-force computation", arguments: [1, 2])
    func bruteForce(round: Int) throws {
        let dir = TemporaryDirectory("insights")
        let clock = ManualClock()
        var workload = Workload(random: SeededRandom(), clock: clock)
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock))
        defer { ledger.close() }
        for step in 0..<600 {
            try workload.step(ledger)
            guard step % 150 == 149 else { continue }
            let state = ledger.state
            let entries = state.entries.all
            guard let first = entries.map(\.loggedAt.localDate).min(),
                let last = entries.map(\.loggedAt.localDate).max()
            else { continue }
            let from = first.advanced(by: 2)
            let to = last
            let report = try state.insights(from: from, to: to)
            let inRange = entries.filter { $0.loggedAt.localDate >= from && $0.loggedAt.localDate <= to }
            // Buckets.
            for index in 0..<7 {
                let these = inRange.filter { $0.loggedAt.localDate.weekdayIndex == index }
                check(report.weekdays[index], these)
            }
            for index in 0..<4 {
                let these = inRange.filter {
                    let local = ($0.loggedAt.milliseconds + Int64($0.loggedAt.utcOffsetMinutes) * 60_000) % 86_400_000
                    return Int((local + 86_400_000) % 86_400_000 / 3_600_000) / 6 == index
                }
                check(report.timesOfDay[index], these)
            }
            // Streaks.
            let days = Set(inRange.map(\.loggedAt.localDate))
            var longest = 0
            for day in days where !days.contains(day.advanced(by: -1)) {
                var length = 1
                while days.contains(day.advanced(by: length)) { length += 1 }
                longest = max(longest, length)
            }
            #expect(report.longestStreak == longest)
            var current = 0
            var cursor = days.contains(to) ? to : to.advanced(by: -1)
            while days.contains(cursor) { current += 1; cursor = cursor.advanced(by: -1) }
            #expect(report.currentStreak == current)
            // Factors: per day, the mean valence and the words.
            var byDay: [LocalDate: [MoodEntry]] = [:]
            for entry in inRange { byDay[entry.loggedAt.localDate, default: []].append(entry) }
            let means = byDay.compactMapValues { list -> Double? in
                let valences = list.compactMap(\.valence)
                return valences.isEmpty ? nil : valences.reduce(0, +) / Double(valences.count)
            }
            for factor in report.factors {
                let has: (MoodEntry) -> Bool = { entry in
                    switch factor.kind {
                    case "label": return entry.labels.contains { $0.wireName == factor.word }
                    case "association": return entry.associations.contains { $0.wireName == factor.word }
                    default: return entry.tags.contains { $0.lowercased() == factor.word }
                    }
                }
                let with = means.filter { byDay[$0.key]!.contains(where: has) }.map(\.value)
                let without = means.filter { !byDay[$0.key]!.contains(where: has) }.map(\.value)
                #expect(factor.daysWith == with.count && factor.daysWithout == without.count, "\(factor.word)")
                if let interval = factor.interval {
                    #expect(with.count >= 3 && without.count >= 3)
                    let difference =
                        with.reduce(0, +) / Double(with.count) - without.reduce(0, +) / Double(without.count)
                    #expect(abs(interval.difference - difference) < 1e-9, "\(factor.word)")
                } else {
                    #expect(with.count < 3 || without.count < 3)
                }
            }
            // Often together.
            let wordSets = inRange.map { entry in
                Set(
                    entry.labels.map { "label:" + $0.wireName }
                        + entry.associations.map { "association:" + $0.wireName }
                        + entry.tags.map { "tag:" + $0.lowercased() })
            }
            for pair in report.pairs {
                let both = wordSets.filter { $0.contains(pair.first) && $0.contains(pair.second) }.count
                let a = wordSets.filter { $0.contains(pair.first) }.count
                let b = wordSets.filter { $0.contains(pair.second) }.count
                #expect(pair.count == both && both >= 3)
                #expect(abs(pair.lift - Double(both) * Double(wordSets.count) / Double(a * b)) < 1e-9)
            }
        }
    }

    func check(_ bucket: InsightsReport.Bucket, _ entries: [MoodEntry]) {
        #expect(bucket.entries == entries.count, "\(bucket.name)")
        let valences = entries.compactMap(\.valence)
        #expect(bucket.valenceCount == valences.count)
        if let average = bucket.averageValence {
            #expect(abs(average - valences.reduce(0, +) / Double(valences.count)) < 1e-9)
        }
        let scores = entries.compactMap(\.score)
        #expect(bucket.scoreCount == scores.count && bucket.scoreSum == scores.reduce(0, +))
    }

    @Test("Welch: the hand-computed example of Specs/analytics.md, and t quantiles against the table")
    func welch() throws {
        let interval = try #require(WelchInterval.of([0.5, 0.7, 0.9], [0.1, 0.2, 0.3, 0.4]))
        #expect(abs(interval.difference - 0.45) < 1e-12)
        #expect(abs(interval.degreesOfFreedom - 3.2347) < 1e-4)
        #expect(abs(interval.low - 0.0458) < 1e-4, "\(interval.low)")
        #expect(abs(interval.high - 0.8542) < 1e-4, "\(interval.high)")
        for (df, t) in [(1.0, 12.7062), (2, 4.3027), (3, 3.1824), (10, 2.2281), (30, 2.0423), (1000, 1.9623)] {
            #expect(abs(WelchInterval.studentQuantile(0.975, degreesOfFreedom: df) - t) < 1e-4, "df \(df)")
        }
        #expect(WelchInterval.of([1, 2], [3]) == nil)
    }
}
