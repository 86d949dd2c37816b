import MoodLedger

enum Sizes {
    static func report() -> String {
        "MoodEntry \(MemoryLayout<MoodEntry>.size)/\(MemoryLayout<MoodEntry>.stride), LoggedAt \(MemoryLayout<LoggedAt>.size), MoodLabel \(MemoryLayout<MoodLabel>.stride), MoodEvent \(MemoryLayout<MoodEvent>.size), RecordedEvent \(MemoryLayout<RecordedEvent>.size), DayAggregate \(MemoryLayout<DayAggregate>.size), OutboxRecord \(MemoryLayout<OutboxRecord>.size), WordStat \(MemoryLayout<WordStat>.stride)"
            + " | SyncMerge \(MemoryLayout<SyncMerge>.size) RemoteChange \(MemoryLayout<RemoteChange>.size) RemoteConfig \(MemoryLayout<RemoteConfig>.size) SyncPull \(MemoryLayout<SyncPull>.size) Erasure \(MemoryLayout<Erasure>.size) Redaction \(MemoryLayout<Redaction>.size) MergeFields \(MemoryLayout<MergeFields>.size) MoodUpdate \(MemoryLayout<MoodUpdate>.size) SyncFailure \(MemoryLayout<SyncFailure>.size) RequestKey \(MemoryLayout<RequestKey>.size) SyncDestination \(MemoryLayout<SyncDestination>.size)"
    }
}
