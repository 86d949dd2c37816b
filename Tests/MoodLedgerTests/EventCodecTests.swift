import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// Seeded random events covering every case and optional field.
struct EventFactory {
    var random: SeededRandom

    mutating func word<D>(_: D.Type) -> VocabularyWord<D> {
        if Int.random(in: 0..<8, using: &random) == 0 {
            return VocabularyWord(custom: "custom \(Int.random(in: 0..<99, using: &random))")
        }
        return VocabularyWord(appleRawValue: Int.random(in: 1...D.canonicalNames.count, using: &random))!
    }

    mutating func entry(id: EntryID? = nil) -> MoodEntry {
        let hasValence = Bool.random(using: &random)
        return MoodEntry(
            id: id ?? EntryID.random(using: &random),
            loggedAt: LoggedAt(
                milliseconds: Int64.random(in: 946_684_800_000...1_900_000_000_000, using: &random),
                utcOffsetMinutes: Int.random(in: -840...840, using: &random)),
            kind: Bool.random(using: &random) ? .momentaryEmotion : .dailyMood,
            valence: hasValence ? Valence.quantized(Double.random(in: -1...1, using: &random)) : nil,
            enteredScore: Bool.random(using: &random) ? Int.random(in: 1...10, using: &random) : nil,
            labels: (0..<Int.random(in: 0...4, using: &random)).map { _ in word(LabelDomain.self) },
            associations: (0..<Int.random(in: 0...3, using: &random)).map { _ in word(AssociationDomain.self) },
            tags: (0..<Int.random(in: 0...3, using: &random)).map { "tag \($0) ✓" },
            notes: Bool.random(using: &random) ? "notes 😀 עברית \(Int.random(in: 0..<1000, using: &random))" : nil,
            source: MoodSource.allCases.randomElement(using: &random)!,
            sourceID: Bool.random(using: &random) ? "SRC-\(Int.random(in: 0..<1000, using: &random))" : nil)
    }

    mutating func event() -> MoodEvent {
        let id = EntryID.random(using: &random)
        let destination = SyncDestination.allCases.randomElement(using: &random)!
        switch Int.random(in: 0..<23, using: &random) {
        case 0: return .created(entry(id: id))
        case 1:
            var update = MoodUpdate()
            if Bool.random(using: &random) { update.loggedAt = entry().loggedAt }
            if Bool.random(using: &random) { update.kind = .dailyMood }
            update.valence = [nil, .clear, .set(Valence.quantized(Double.random(in: -1...1, using: &random)))]
                .randomElement(using: &random)!
            update.enteredScore = [nil, .clear, .set(Int.random(in: 1...10, using: &random))].randomElement(
                using: &random)!
            update.notes = [nil, .clear, .set("new notes")].randomElement(using: &random)!
            return .updated(id, update)
        case 2: return .labelsEdited(id, (0..<3).map { _ in word(LabelDomain.self) })
        case 3: return .associationsEdited(id, (0..<2).map { _ in word(AssociationDomain.self) })
        case 4: return .tagsEdited(id, ["a", "b c"])
        case 5: return .deleted(id)
        case 6:
            return .syncAttempted(
                id, destination, SyncOperation.allCases.randomElement(using: &random)!,
                key: Bool.random(using: &random) ? "\(id).\(Int.random(in: 1..<99, using: &random))" : "")
        case 7:
            return .syncSucceeded(
                id, destination, remoteID: "remote-\(Int.random(in: 0..<99, using: &random))",
                revision: UInt64.random(in: 0...UInt64(Int64.max), using: &random))
        case 8:
            return .syncFailed(
                id, destination,
                SyncFailure(
                    status: Bool.random(using: &random) ? 503 : nil,
                    error: "Service Unavailable", retryable: Bool.random(using: &random),
                    nextAttemptAt: Bool.random(using: &random)
                        ? Int64.random(in: 1...1_900_000_000_000, using: &random) : nil))
        case 9:
            return .remoteApplied(
                RemoteChange(
                    origin: destination, remoteID: "r1", entry: entry(id: id), entryID: id,
                    revision: UInt64.random(in: 0...1000, using: &random),
                    conflict: Bool.random(using: &random)))
        case 10: return .remoteApplied(RemoteChange(origin: destination, remoteID: nil, entry: nil, entryID: id))
        case 11:
            return .syncPulled(
                SyncPull(
                    destination: destination, cursor: UInt64.random(in: 0...99, using: &random),
                    serverRevision: UInt64.random(in: 0...99, using: &random),
                    applied: Int.random(in: 0...9, using: &random), serverWentBack: Bool.random(using: &random)))
        case 12:
            return .remoteConfigured(
                RemoteConfig(
                    url: "http://127.0.0.1:\(Int.random(in: 1...65535, using: &random))",
                    dialect: RemoteDialect.allCases.randomElement(using: &random)!,
                    capabilities: RemoteCapabilities(rawValue: UInt8.random(in: 0...31, using: &random)),
                    source: [CapabilitySource.unknown, .probed, .set].randomElement(using: &random)!))
        case 13: return .syncRequeued(id, destination, reason: "the server lost it")
        case 14:
            return .entryErased(
                id,
                Erasure(
                    reason: Bool.random(using: &random) ? "asked" : "", requestedBy: "cli",
                    complete: Bool.random(using: &random)))
        case 15:
            // Any combination of versions but "deleted on both sides" (no merge).
            let here: MoodEntry? = Bool.random(using: &random) ? entry(id: id) : nil
            let theirs: MoodEntry? = here == nil || Bool.random(using: &random) ? entry(id: id) : nil
            return .syncMerged(
                SyncMerge(
                    destination: destination, entryID: id,
                    remoteID: Bool.random(using: &random) ? "r-\(Int.random(in: 0..<99, using: &random))" : nil,
                    serverRevision: UInt64.random(in: 0...UInt64(Int64.max), using: &random),
                    baseRevision: UInt64.random(in: 0...99, using: &random),
                    base: Bool.random(using: &random) ? entry(id: id) : nil, here: here, theirs: theirs,
                    merged: Bool.random(using: &random) ? entry(id: id) : nil))
        case 17:
            return .ledgerErased(
                Erasure(
                    reason: Bool.random(using: &random) ? "asked" : "", requestedBy: "cli",
                    complete: Bool.random(using: &random), keepsHealthKit: Bool.random(using: &random)))
        case 18: return .syncReleased(id, destination)
        case 19:
            return .healthKitAnchored(
                (0..<Int.random(in: 0...300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
        case 20:
            return .requestKeyed(
                RequestKey(
                    key: "POST /api/v1/mood k-\(UInt32.random(in: 0...UInt32.max, using: &random))",
                    fingerprint: String(repeating: "ab", count: 32),
                    status: [200, 201, 204].randomElement(using: &random)!,
                    entryID: Bool.random(using: &random) ? id : nil))
        case 21:
            return .editReplaced(
                id, revision: UInt64.random(in: 1...UInt64(Int64.max), using: &random),
                fields: MergeFields(rawValue: UInt8.random(in: 1...255, using: &random)))
        case 16:
            return .conflictResolved(
                id, MergeFields(rawValue: UInt8.random(in: 1...255, using: &random)),
                Bool.random(using: &random) ? .here : .server)
        default:
            let type = EventType.allCases.randomElement(using: &random)!
            let sync: Set<EventType> = [.syncAttempted, .syncSucceeded, .syncFailed, .syncRequeued, .syncReleased]
            // Events about no entry keep the all-zero id when redacted.
            let named = type.namesNoEntry ? EntryID.none : id
            return .redacted(named, Redaction(type: type, destination: sync.contains(type) ? destination : nil))
        }
    }
}

@Suite("Event codec")
struct EventCodecTests {
    @Test("decode(encode(e)) == e for seeded random events of every type")
    func roundTrip() throws {
        var factory = EventFactory(random: SeededRandom())
        var seen = Set<String>()
        for _ in 0..<3000 {
            let event = factory.event()
            seen.insert(event.type.name)
            let command = EntryID.random(using: &factory.random)
            let bytes = EventCodec.encode(event, commandID: command)
            let decoded = try bytes.withUnsafeBytes { try EventCodec.decode(type: event.type.rawValue, payload: $0) }
            #expect(decoded.event == event)
            #expect(decoded.commandID == command)
        }
        #expect(seen.count == EventType.allCases.count)
    }

    @Test("Every truncation and trailing byte of a payload is refused, never trapped")
    func malformed() throws {
        var factory = EventFactory(random: SeededRandom())
        for _ in 0..<200 {
            let event = factory.event()
            let bytes = EventCodec.encode(event, commandID: .random())
            for cut in 0..<bytes.count {
                #expect(throws: MoodError.self) {
                    _ = try Array(bytes[0..<cut]).withUnsafeBytes {
                        try EventCodec.decode(type: event.type.rawValue, payload: $0)
                    }
                }
            }
            #expect(throws: MoodError.self) {
                _ = try (bytes + [0]).withUnsafeBytes { try EventCodec.decode(type: event.type.rawValue, payload: $0) }
            }
        }
        #expect { _ = try [UInt8]([9]).withUnsafeBytes { try EventCodec.decode(type: 1, payload: $0) } } throws: {
            ($0 as! MoodError).rule.contains("version 9")
        }
        #expect { _ = try [UInt8]([1]).withUnsafeBytes { try EventCodec.decode(type: 77, payload: $0) } } throws: {
            ($0 as! MoodError).code == .newerVersion
        }
    }

    /// Fixed sample events, one per type, for the golden file.
    static var samples: [(String, MoodEvent)] {
        let id = EntryID("6f1c2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b")!
        let entry = MoodEntry(
            id: id, loggedAt: LoggedAt(milliseconds: 1_780_000_000_000, utcOffsetMinutes: -300),
            kind: .dailyMood, valence: Valence.from(score: 8), enteredScore: 8,
            labels: [.named("happy"), .named("confident"), try! .parse("cozy")],
            associations: [.named("family"), .named("selfCare")], tags: ["walk"],
            notes: "Dinner with my sister", source: .healthkit, sourceID: "HK-MOOD-1")
        return [
            ("created", .created(entry)),
            (
                "updated",
                .updated(
                    id,
                    MoodUpdate(
                        loggedAt: LoggedAt(milliseconds: 1_780_000_360_000, utcOffsetMinutes: 60),
                        kind: .momentaryEmotion, valence: .set(-0.25), enteredScore: .clear,
                        notes: .clear))
            ),
            ("labels_edited", .labelsEdited(id, [.named("calm"), try! .parse("Cozy Vibes")])),
            ("associations_edited", .associationsEdited(id, [.named("currentEvents")])),
            ("tags_edited", .tagsEdited(id, ["Reading", "walk"])),
            ("deleted", .deleted(id)),
            ("sync_attempted", .syncAttempted(id, .backend, .create, key: "\(id).17")),
            ("sync_succeeded", .syncSucceeded(id, .backend, remoteID: "srv-42", revision: 18)),
            (
                "sync_failed",
                .syncFailed(
                    id, .healthkit,
                    SyncFailure(
                        status: 403, error: "authorization denied", retryable: true,
                        nextAttemptAt: 1_780_000_030_000))
            ),
            (
                "remote_applied",
                .remoteApplied(
                    RemoteChange(
                        origin: .backend, remoteID: "srv-42", entry: entry, entryID: id,
                        revision: 19, conflict: true))
            ),
            ("sync_pulled", .syncPulled(SyncPull(cursor: 19, serverRevision: 21, applied: 1))),
            (
                "remote_configured",
                .remoteConfigured(
                    RemoteConfig(
                        url: "http://127.0.0.1:8080", dialect: .moodAPI,
                        capabilities: [.update, .delete], source: .probed))
            ),
            (
                "sync_requeued",
                .syncRequeued(id, .backend, reason: "the server lacks it (revision went back from 21 to 12)")
            ),
            ("entry_erased", .entryErased(id, Erasure(reason: "GDPR art. 17", requestedBy: "cli", complete: true))),
            (
                "sync_merged",
                .syncMerged(
                    SyncMerge(
                        entryID: id, remoteID: "srv-42", serverRevision: 23, baseRevision: 18,
                        base: mergeVersion(entry, notes: "base", labels: ["calm"]),
                        here: mergeVersion(entry, notes: "here", labels: ["calm", "grateful"]),
                        theirs: mergeVersion(entry, notes: "theirs", labels: ["calm", "hopeful"]),
                        merged: mergeVersion(entry, notes: "here", labels: ["calm", "grateful", "hopeful"])))
            ),
            ("conflict_resolved", .conflictResolved(id, [.notes], .server)),
            (
                "ledger_erased",
                .ledgerErased(Erasure(reason: "moving on", requestedBy: "cli", complete: true, keepsHealthKit: true))
            ),
            ("redacted_created", .redacted(id, Redaction(type: .created))),
            ("redacted_sync_failed", .redacted(id, Redaction(type: .syncFailed, destination: .healthkit))),
            // JSON rendering: capability and field names are listed in bit order, `[]` when there are none.
            (
                "remote_configured_no_capabilities",
                .remoteConfigured(
                    RemoteConfig(url: "https://example.org/api", dialect: .wellness, capabilities: [], source: .set))
            ),
            (
                "remote_configured_every_capability",
                .remoteConfigured(
                    RemoteConfig(
                        url: "http://[::1]:8080", dialect: .moodAPI,
                        capabilities: [.batch, .delete, .changes, .extensions, .update, .revisions], source: .probed))
            ),
            ("conflict_resolved_fields_in_bit_order", .conflictResolved(id, [.tags, .existence, .mood, .notes], .here)),
            (
                "sync_pulled_account_changed",
                .syncPulled(
                    SyncPull(
                        cursor: 0, serverRevision: 0, applied: 0, serverWentBack: true,
                        account: "00112233445566778899aabbccddeeff"))
            ),
            ("sync_released", .syncReleased(id, .backend)),
            ("healthkit_anchored", .healthKitAnchored([0, 0, 0, 0, 0, 0, 0, 42])),
            (
                "request_keyed",
                .requestKeyed(
                    RequestKey(
                        key: "POST /api/v1/mood 7c1d0b2e-5a43-4f0e-9d8a-2b6c1e0f3a91",
                        fingerprint: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", status: 201,
                        entryID: id))
            ),
            ("edit_replaced", .editReplaced(id, revision: 27, fields: [.mood, .notes]))
        ]
    }

    /// A version of `entry` with other notes and labels (the sides of a merge).
    static func mergeVersion(_ entry: MoodEntry, notes: String, labels: [String]) -> MoodEntry {
        var version = entry
        version.notes = notes
        version.labels = labels.map { try! MoodLabel.parse($0) }
        return version
    }

    @Test("Golden encodings: Specs/vectors/events.json")
    func golden() throws {
        let command = EntryID("00112233-4455-6677-8899-aabbccddeeff")!
        let path = Repository.root + "/Specs/vectors/events.json"
        let rendered: [JSONValue] = Self.samples.map { name, event in
            let hex = EventCodec.encode(event, commandID: command).map { String(format: "%02x", $0) }.joined()
            return .object([
                ("name", .string(name)), ("type", .string(event.type.name)),
                ("code", .int(Int64(event.type.rawValue))), ("version", .int(Int64(event.type.currentVersion))),
                ("hex", .string(hex)), ("json", event.json)
            ])
        }
        if Repository.recordGolden {
            try (JSONValue.array(rendered).serialized(pretty: true) + "\n").write(
                toFile: path, atomically: true, encoding: .utf8)
        }
        let stored = try vector("events.json").arrayValue!
        #expect(stored.count == rendered.count)
        for (expected, actual) in zip(stored, rendered) {
            #expect(
                expected == actual,
                "\(expected["name"]!) — re-record with MOODLEDGER_RECORD_GOLDEN=1 only for an intended format change")
        }
        // And the stored bytes decode back to the same events.
        for (item, (_, event)) in zip(stored, Self.samples) {
            let bytes = Bytes.unhex(
                item["hex"]!.stringValue!.enumerated().map { $0.offset % 2 == 1 ? "\($0.element) " : "\($0.element)" }
                    .joined())
            let decoded = try bytes.withUnsafeBytes { try EventCodec.decode(type: event.type.rawValue, payload: $0) }
            #expect(decoded.event == event)
        }
    }

    @Test("Stored version-1 events (mood.created without tags, the sync events, remote.configured) are upcast")
    func upcastV1() throws {
        for item in try vector("events-v1.json").arrayValue! {
            let hex = item["hex"]!.stringValue!
            let bytes = stride(from: 0, to: hex.count, by: 2).map {
                UInt8(
                    hex[hex.index(hex.startIndex, offsetBy: $0)..<hex.index(hex.startIndex, offsetBy: $0 + 2)],
                    radix: 16)!
            }
            let type = UInt16(item["type"]!.intValue!)
            let (command, event) = try bytes.withUnsafeBytes { try EventCodec.decode(type: type, payload: $0) }
            if let data = item["expected_data"] {
                // A version-1 sync event: upcast with the version-2 fields absent; re-encoded as version 2.
                #expect(event.json == data, "\(event.json.serialized())")
                let current = EventCodec.encode(event, commandID: command)
                #expect(current[0] == 2)
                #expect(try current.withUnsafeBytes { try EventCodec.decode(type: type, payload: $0) }.event == event)
                continue
            }
            let expected = item["expected"]!
            #expect(command.description == expected["command_id"]!.stringValue!)
            #expect(event.entryID.description == expected["entry_id"]!.stringValue!)
            guard case .created(let entry) = event else { Issue.record("not a created event"); continue }
            var json = entry.creationJSON
            if case .object(let pairs) = json {
                json = .object(
                    [("command_id", .string(command.description)), ("entry_id", .string(entry.id.description))] + pairs)
            }
            #expect(json == expected, "\(json.serialized())")
            // Re-encoding writes the current version (2), which decodes to the same event.
            let current = EventCodec.encode(event, commandID: command)
            #expect(current[0] == 2)
            #expect(try current.withUnsafeBytes { try EventCodec.decode(type: 1, payload: $0) }.event == event)
        }
    }
}
