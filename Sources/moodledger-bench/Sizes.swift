import MoodLedger

enum Sizes {
    static func report() -> String {
        "MoodEntry \(MemoryLayout<MoodEntry>.size)/\(MemoryLayout<MoodEntry>.stride), LoggedAt \(MemoryLayout<LoggedAt>.size), MoodLabel \(MemoryLayout<MoodLabel>.stride), MoodEvent \(MemoryLayout<MoodEvent>.size), RecordedEvent \(MemoryLayout<RecordedEvent>.size), DayAggregate \(MemoryLayout<DayAggregate>.size), OutboxRecord \(MemoryLayout<OutboxRecord>.size), WordStat \(MemoryLayout<WordStat>.stride)"
    }
}
