import Foundation
import MoodLedger

/// The benchmark's deterministic workload (`Specs/benchmark.md`): one user, ten years, N events.
struct BenchWorkload {
    var random: SplitMix64
    let events: Int
    let start: Int64 = 1_483_228_800_000  // 2017-01-01T00:00:00Z
    let span: Int64 = 10 * 365 * 86_400_000
    private(set) var live: [EntryID] = []
    private var liveIndex: [EntryID: Int] = [:]
    private var produced = 0

    static let labels = [
        "calm", "happy", "indifferent", "stressed", "content", "surprised", "drained", "anxious",
        "grateful", "joyful", "peaceful", "excited", "worried", "proud", "sad", "hopeful"
    ]
    static let associations = [
        "work", "family", "friends", "fitness", "health", "hobbies", "weather", "partner",
        "money", "travel"
    ]
    static let words = [
        "walk", "coffee", "rain", "late", "meeting", "call", "mum", "gym", "book", "music", "tired",
        "sun", "dinner", "train", "deadline", "garden"
    ]

    init(events: Int, seed: UInt64 = 20_261_122) {
        self.events = events
        random = SplitMix64(seed: seed)
    }

    /// Skewed pick: earlier elements far more likely (a realistic vocabulary).
    mutating func skewed(_ count: Int) -> Int {
        let u = Double(random.next() >> 11) / Double(1 << 53)
        return min(count - 1, Int(Double(count) * u * u))
    }

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }

    /// The next event (nil after N), with the time it is recorded at (ms).
    mutating func next() -> (MoodEvent, Int64)? {
        guard produced < events else { return nil }
        let time = start + span * Int64(produced) / Int64(events)
        produced += 1
        let roll = int(0...99)
        if roll < 70 || live.count < 10 { return (.created(entry(at: time)), time) }
        let id = live[int(0...(live.count - 1))]
        switch roll {
        case 70..<79:
            return (.updated(id, MoodUpdate(valence: .set(valence()))), time)
        case 79..<85:
            return (.labelsEdited(id, labelList()), time)
        case 85..<88:
            remove(id)
            return (.deleted(id), time)
        case 88..<96:
            return (.syncSucceeded(id, .backend, remoteID: "srv-\(int(1...9_999_999))", revision: 0), time)
        default:
            return (
                .syncFailed(
                    id, .backend,
                    SyncFailure(
                        status: 503, error: "Service Unavailable",
                        retryable: true)), time
            )
        }
    }

    mutating func valence() -> Double { Valence.quantized(Double(int(-1000...1000)) / 1000) }

    mutating func labelList() -> [MoodLabel] {
        var labels: [MoodLabel] = []
        for _ in 0..<int(1...3) {
            let label = try! MoodLabel.parse(Self.labels[skewed(Self.labels.count)])
            if !labels.contains(label) { labels.append(label) }
        }
        return labels
    }

    mutating func entry(at time: Int64) -> MoodEntry {
        let id = EntryID.random(using: &random)
        live.append(id)
        liveIndex[id] = live.count - 1
        var associations: [MoodAssociation] = []
        for _ in 0..<int(0...2) {
            let association = try! MoodAssociation.parse(Self.associations[skewed(Self.associations.count)])
            if !associations.contains(association) { associations.append(association) }
        }
        var notes: String?
        if int(0...2) == 0 {
            var text = ""
            let limit = int(10...120)
            while text.count < limit { text += Self.words[skewed(Self.words.count)] + " " }
            notes = String(text.prefix(limit)).trimmingCharacters(in: .whitespaces)
        }
        let fromHealthKit = int(0...9) == 0
        return MoodEntry(
            id: id, loggedAt: LoggedAt(milliseconds: time - Int64(int(0...3_600_000)), utcOffsetMinutes: 60),
            kind: int(0...9) == 0 ? .dailyMood : .momentaryEmotion, valence: valence(),
            labels: labelList(), associations: associations, notes: notes,
            source: fromHealthKit ? .healthkit : .manual,
            sourceID: fromHealthKit ? "HK-MOOD-\(id)" : nil)
    }

    private mutating func remove(_ id: EntryID) {
        guard let index = liveIndex.removeValue(forKey: id) else { return }
        let last = live.removeLast()
        if last != id {
            live[index] = last
            liveIndex[last] = index
        }
    }
}
