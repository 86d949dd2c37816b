import MoodLedger

/// The demo's year: realistic days with a gentle seasonal curve, a few edits and deletes, and syncs that sometimes
/// fail and are retried.
enum DemoStory {
    struct Summary {
        var events: UInt64 = 0
        var entries = 0
        var edits = 0
        var deletes = 0
        var failedSyncs = 0
        var auditedEntry = ""
        var beforeRetrySeq: UInt64 = 0
        var lastDay = ""
        var lastMonthStart = ""
    }

    static let moods: [(labels: [String], notes: [String])] = [
        (["sad", "lonely"], ["Quiet evening on my own", "Missed the group call"]),
        (["anxious", "stressed"], ["Deadline moved up again", "Too many meetings", "Bills piling up"]),
        (["drained", "indifferent"], ["Slept badly", "Long commute in the rain"]),
        (["calm", "content"], ["Read a book in the garden", "Slow Sunday", "Cooked dinner"]),
        (["happy", "grateful"], ["Lunch with a friend", "Family video call", "Good workout at the gym"]),
        (["joyful", "excited"], ["Concert tonight!", "Trip booked", "Finished the project"])
    ]
    static let associations = [
        "work", "family", "friends", "fitness", "health", "hobbies", "weather", "partner", "money"
    ]

    static func build(_ ledger: Ledger, clock: DemoClock) throws -> Summary {
        var random = SplitMix64(seed: 7)
        var summary = Summary()
        let day0 = clock.now - 7 * 3_600_000  // midnight UTC, 365 days before the day the demo is built
        var logged: [EntryID] = []
        var retried: EntryID?
        for day in 0..<365 {
            let midnight = day0 + Int64(day) * 86_400_000
            // Seasonal drift plus noise: winter a little lower, summer a little higher.
            let season = -cos(Double(day) / 365 * 2 * .pi) * 0.25
            for slot in 0..<Int.random(in: 1...3, using: &random) {
                let hour = Int64([8, 13, 20][slot]) + Int64.random(in: -1...1, using: &random)
                let at = midnight + hour * 3_600_000 - 60 * 60_000 + Int64.random(in: 0...3_599_999, using: &random)
                clock.set(at + Int64.random(in: 0...600_000, using: &random))
                let valence = max(-1, min(1, season + Double.random(in: -0.6...0.6, using: &random)))
                let band = min(5, max(0, Int((valence + 1) / 2 * 6)))
                var draft = MoodDraft(
                    valence: (valence * 1000).rounded() / 1000,
                    labels: Array(
                        moods[band].labels.shuffled(using: &random).prefix(Int.random(in: 1...2, using: &random))),
                    associations: [associations.randomElement(using: &random)!],
                    loggedAt: LoggedAt(milliseconds: at, utcOffsetMinutes: 60))
                if Int.random(in: 0..<3, using: &random) == 0 {
                    draft.notes = moods[band].notes.randomElement(using: &random)
                }
                if slot == 0 && Int.random(in: 0..<5, using: &random) == 0 {
                    draft.source = .healthkit
                    draft.sourceID = "HK-MOOD-\(day)"
                }
                let outcome = try ledger.log(draft)
                if outcome.created, let entry = outcome.entry, entry.source == .manual { logged.append(entry.id) }
            }
            if day % 9 == 4, let id = logged.randomElement(using: &random) {
                try ledger.update(id, MoodChanges(notes: .set("Edited: felt better after a walk")))
                try ledger.editLabels(id, .add("relieved"))
                summary.edits += 2
            }
            if day % 47 == 20, let id = logged.popLast() {
                try ledger.delete(id)
                summary.deletes += 1
            }
            if day % 7 == 6 {
                // The weekly sync round: try what is pending; the backend is down one week in five.
                clock.set(midnight + 23 * 3_600_000)
                let down = (day / 7) % 5 == 2
                let pending = ledger.read { state in
                    state.outboxItems(destination: .backend).filter { $0.status == "pending" }.prefix(40)
                }
                for item in pending {
                    try ledger.recordSyncAttempt(item.entryID, to: .backend)
                    if down {
                        try ledger.recordSyncFailure(
                            item.entryID, to: .backend,
                            SyncFailure(status: 503, error: "Service Unavailable", retryable: true))
                        summary.failedSyncs += 1
                        if retried == nil {
                            retried = item.entryID
                            summary.beforeRetrySeq = ledger.lastSeq
                        }
                    } else {
                        try ledger.recordSyncSuccess(
                            item.entryID, to: .backend, remoteID: "srv-\(item.entryID.description.prefix(8))")
                    }
                }
            }
        }
        summary.events = ledger.lastSeq
        let (entries, lastDay) = ledger.read { ($0.entries.count, $0.entries.activeDays.last!) }
        summary.entries = entries
        summary.lastDay = lastDay.description
        summary.lastMonthStart = lastDay.advanced(by: -29).description
        let audited = retried ?? logged.first!
        summary.auditedEntry = audited.description
        if summary.beforeRetrySeq == 0 { summary.beforeRetrySeq = summary.events / 2 }
        return summary
    }
}

private func cos(_ x: Double) -> Double {
    // A short Taylor series around the nearest multiple of 2π is plenty for a demo curve (no Foundation needed).
    var y = x.truncatingRemainder(dividingBy: 2 * .pi)
    if y > .pi { y -= 2 * .pi }
    var term = 1.0
    var sum = 1.0
    for n in 1...10 {
        term *= -y * y / Double((2 * n - 1) * (2 * n))
        sum += term
    }
    return sum
}
