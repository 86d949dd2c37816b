import Foundation
import TestSupport
import Testing

@testable import MoodInterchange
@testable import MoodLedger
@testable import MoodModel

@Suite("Listing pages")
struct ListPagingTests {
    @Test("Every page of every date range equals a brute-force sort of the entries, with crowded days")
    func pagesMatchBruteForce() throws {
        var random = SeededRandom()
        let dir = TemporaryDirectory("list")
        let clock = ManualClock()
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock))
        defer { ledger.close() }
        let base: Int64 = 1_760_000_000_000
        var plan = ImportPlan(format: .moodAPI)
        for i in 0..<600 {
            // Half the entries crowd two days (hundreds per day: the selection path), the rest spread out.
            let day = i % 2 == 0 ? Int64(i % 4 == 0 ? 3 : 4) : Int64.random(in: 0..<40, using: &random)
            let ms = base + day * 86_400_000 + Int64.random(in: 0..<86_000_000, using: &random) / 1000 * 1000
            plan.rows.append(
                ImportRow(
                    line: i + 1,
                    draft: MoodDraft(
                        valence: Double(Int.random(in: -100...100, using: &random)) / 100, labels: ["calm"],
                        loggedAt: LoggedAt(milliseconds: ms), source: .import, sourceID: "s\(i)", suggestLabels: false))
            )
        }
        _ = try ledger.importPlan(plan)
        for id in ledger.state.entries.all.shuffled(using: &random).prefix(50).map(\.id) { try ledger.delete(id) }
        // Moves within and between days (a day's ids are kept in order: removed from one place, inserted at another).
        for id in ledger.state.entries.all.shuffled(using: &random).prefix(40).map(\.id) {
            var changes = MoodChanges()
            let day = Int64([3, 4, 7].randomElement(using: &random)!)
            changes.loggedAt = LoggedAt(
                milliseconds: base + day * 86_400_000 + Int64.random(in: 0..<86_000, using: &random) * 1000)
            try ledger.update(id, changes)
        }
        let state = ledger.state
        let all = state.entries.all.sorted(by: MoodEntry.newestFirst)
        let days = state.entries.activeDays
        for day in days {
            let brute = all.filter { $0.localDate == day }
            #expect(state.entries.entries(on: day).map(\.id) == brute.map(\.id), "\(day)")
            #expect(state.entries.newest(7, on: day).map(\.id) == brute.prefix(7).map(\.id), "\(day)")
        }
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
            #expect(
                page.entries.map(\.id) == Array(matching.dropFirst(query.offset).prefix(query.limit)).map(\.id),
                "from \(String(describing: query.from)) to \(String(describing: query.to)) offset \(query.offset) limit \(query.limit)"
            )
            // listAll: the whole match from the offset in one pass, as every page to the end would give it.
            let everything = try state.listAll(query)
            #expect(everything.total == matching.count)
            #expect(everything.entries.map(\.id) == Array(matching.dropFirst(query.offset)).map(\.id))
            if Bool.random(using: &random) {
                // With a filter too (the selection path): the label every entry has, and a valence floor.
                var filtered = query
                filtered.label = try MoodLabel.parse("calm")
                filtered.minValence = 0
                let expected = matching.filter { ($0.valence ?? -2) >= 0 }.dropFirst(query.offset)
                #expect(try state.listAll(filtered).entries.map(\.id) == expected.map(\.id))
            }
        }
    }
}

@Suite("Listing with every filter")
struct ListFilterTests {
    @Test("Every filter, alone and combined, and every paging edge equal a brute-force filter of the entries")
    func filtersMatchBruteForce() throws {
        var random = SeededRandom()
        let dir = TemporaryDirectory("list-filters")
        let clock = ManualClock()
        let ledger = try Ledger.open(at: dir.path, options: ledgerOptions(clock: clock))
        defer { ledger.close() }
        let labels = ["calm", "happy", "stressed", "my word"]
        let associations = ["work", "family", "fitness"]
        let tags = ["Garden", "office", "rain"]
        var plan = ImportPlan(format: .moodAPI)
        for i in 0..<400 {
            var draft = MoodDraft(
                loggedAt: LoggedAt(milliseconds: 1_760_000_000_000 + Int64(i) * 7_200_000 / 3),
                source: [.manual, .import, .healthkit, .backend][i % 4], sourceID: "s\(i)")
            if i % 5 != 0 { draft.valence = Double(Int.random(in: -100...100, using: &random)) / 100 }
            draft.labels = Array(
                labels.shuffled(using: &random).prefix(Int.random(in: i % 5 == 0 ? 1...2 : 0...2, using: &random)))
            draft.associations = Array(
                associations.shuffled(using: &random).prefix(Int.random(in: 0...2, using: &random)))
            draft.tags = Array(tags.shuffled(using: &random).prefix(Int.random(in: 0...2, using: &random)))
            draft.notes = i % 3 == 0 ? "Walked in the Garden \(i)" : nil
            plan.rows.append(ImportRow(line: i + 1, draft: draft))
        }
        _ = try ledger.importPlan(plan)
        let state = ledger.state
        let all = state.entries.all.sorted(by: MoodEntry.newestFirst)
        let days = state.entries.activeDays
        for round in 0..<300 {
            var query = EntryQuery()
            if Bool.random(using: &random) { query.from = days.randomElement(using: &random) }
            if Bool.random(using: &random) { query.to = days.randomElement(using: &random) }
            if let from = query.from, let to = query.to, from > to { (query.from, query.to) = (to, from) }
            if Int.random(in: 0..<3, using: &random) == 0 {
                query.source = MoodSource.allCases.randomElement(using: &random)
            }
            if Int.random(in: 0..<3, using: &random) == 0 {
                query.label = try MoodLabel.parse(labels.randomElement(using: &random)!)
            }
            if Int.random(in: 0..<3, using: &random) == 0 {
                query.association = try MoodAssociation.parse(associations.randomElement(using: &random)!)
            }
            if Int.random(in: 0..<4, using: &random) == 0 {
                query.tag = tags.randomElement(using: &random)!.uppercased()
            }
            if Int.random(in: 0..<5, using: &random) == 0 { query.search = "garden" }
            if Int.random(in: 0..<4, using: &random) == 0 {
                query.minValence = Double.random(in: -1...0.5, using: &random)
            }
            if Int.random(in: 0..<4, using: &random) == 0 {
                query.maxValence = Double.random(in: -0.5...1, using: &random)
            }
            query.limit = [1, 2, 30, 100].randomElement(using: &random)!
            query.offset = [0, 1, 29, 30, 399, 400, 1000].randomElement(using: &random)!
            let matching = all.filter { e in
                (query.from.map { e.localDate >= $0 } ?? true) && (query.to.map { e.localDate <= $0 } ?? true)
                    && (query.source.map { e.source == $0 } ?? true)
                    && (query.label.map { e.labels.contains($0) } ?? true)
                    && (query.association.map { e.associations.contains($0) } ?? true)
                    && (query.tag.map { t in e.tags.contains { $0.lowercased() == t.lowercased() } } ?? true)
                    && (query.search.map { s in e.notes?.lowercased().contains(s) ?? false } ?? true)
                    && (query.minValence.map { m in e.valence.map { Valence.fixed($0) >= Valence.fixed(m) } ?? false }
                        ?? true)
                    && (query.maxValence.map { m in e.valence.map { Valence.fixed($0) <= Valence.fixed(m) } ?? false }
                        ?? true)
            }
            let page = try state.list(query)
            #expect(page.total == matching.count, "round \(round)")
            #expect(
                page.entries.map(\.id) == Array(matching.dropFirst(query.offset).prefix(query.limit)).map(\.id),
                "round \(round)")
            #expect(page.hasMore == (query.offset + page.entries.count < matching.count))
        }
        #expect(throws: MoodError.self) {
            var q = EntryQuery(); q.limit = 0; _ = try state.list(q)
        }
        #expect(throws: MoodError.self) {
            var q = EntryQuery(); q.offset = -1; _ = try state.list(q)
        }
    }
}
