import Foundation
@testable import MoodLedger
import TestSupport
import Testing

@Suite("Listing pages")
struct ListPagingTests {
    @Test("Every page of every date range equals a brute-force sort of the entries, with crowded days")
    func pagesMatchBruteForce() throws {
        var random = SeededRandom()
        let dir = TemporaryDirectory("list")
        let clock = TestClock()
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock))
        defer { ledger.close() }
        let base: Int64 = 1_760_000_000_000
        var plan = ImportPlan(format: .moodAPI)
        for i in 0..<600 {
            // Half the entries crowd two days (hundreds per day: the selection path), the rest spread out.
            let day = i % 2 == 0 ? Int64(i % 4 == 0 ? 3 : 4) : Int64.random(in: 0..<40, using: &random)
            let ms = base + day * 86_400_000 + Int64.random(in: 0..<86_000_000, using: &random) / 1000 * 1000
            plan.rows.append(ImportRow(line: i + 1, draft: MoodDraft(
                valence: Double(Int.random(in: -100...100, using: &random)) / 100, labels: ["calm"],
                loggedAt: LoggedAt(milliseconds: ms), source: .import, sourceID: "s\(i)", suggestLabels: false)))
        }
        _ = try ledger.importPlan(plan)
        for id in ledger.state.entries.all.shuffled(using: &random).prefix(50).map(\.id) { try ledger.delete(id) }
        let state = ledger.state
        let all = state.entries.all.sorted(by: MoodEntry.newestFirst)
        let days = state.entries.activeDays
        for _ in 0..<150 {
            var query = EntryQuery()
            if Bool.random(using: &random) { query.from = days.randomElement(using: &random) }
            if Bool.random(using: &random) { query.to = days.randomElement(using: &random) }
            if let from = query.from, let to = query.to, from > to { (query.from, query.to) = (to, from) }
            query.limit = Int.random(in: 1...100, using: &random)
            query.offset = Int.random(in: 0...600, using: &random)
            let matching = all.filter { entry in
                (query.from.map { entry.localDate >= $0 } ?? true) && (query.to.map { entry.localDate <= $0 } ?? true)
            }
            let page = try state.list(query)
            #expect(page.total == matching.count)
            #expect(page.entries.map(\.id) == Array(matching.dropFirst(query.offset).prefix(query.limit)).map(\.id),
                    "from \(String(describing: query.from)) to \(String(describing: query.to)) offset \(query.offset) limit \(query.limit)")
        }
    }
}
