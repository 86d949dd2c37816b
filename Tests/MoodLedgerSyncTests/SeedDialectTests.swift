import Foundation
import MoodLedger
import MoodLedgerSync
import TestSupport
import Testing

/// Sync against backends that are exactly the seed documents (`SeedBackend`, schemas in `Tests/Seed/schemas`).
@Suite("Seed backends as documented")
struct SeedDialectTests {
    /// Entries that exercise every translation: a typed score, a valence with labels and two-word associations, labels
    /// only, custom words and tags, a daily mood.
    static func fill(_ device: Device) throws -> [String: EntryID] {
        var ids: [String: EntryID] = [:]
        ids["score"] = try device.ledger.log(MoodDraft(score: 8)).entry.id
        ids["score5"] = try device.ledger.log(MoodDraft(score: 5, notes: "five")).entry.id
        ids["valence"] = try device.ledger.log(
            MoodDraft(
                valence: 0.35, labels: ["happy", "calm"],
                associations: ["current events", "self care"], notes: "walk")
        ).entry.id
        ids["labelsOnly"] = try device.ledger.log(MoodDraft(labels: ["grateful"])).entry.id
        ids["custom"] = try device.ledger.log(
            MoodDraft(
                valence: -0.2, labels: ["sad", "homesick"], associations: ["garden"],
                tags: ["rainy"])
        ).entry.id
        ids["daily"] = try device.ledger.log(MoodDraft(valence: 0.9, kind: .dailyMood)).entry.id
        return ids
    }

    /// What a seed backend must hold for an entry, field by field, per the translation table of `Specs/sync.md`.
    static func expected(_ entry: MoodEntry, _ dialect: RemoteDialect) -> [String: JSONValue] {
        let valence: JSONValue =
            entry.enteredScore.map { .double((Double($0) - 5.5) / 4.5) }
            ?? entry.valence.map { .double(Valence.display($0)) } ?? .null
        switch dialect {
        case .progress:
            return [
                "type": .string("mood_score"), "quantity": .int(Int64(entry.enteredScore ?? entry.score!)),
                "logged_at": .string(entry.loggedAt.iso8601), "notes": entry.notes.map { .string($0) } ?? .null
            ]
        case .moodAPI:
            return [
                "valence": valence,
                "labels": entry.labels.isEmpty ? .null : .array(entry.labels.map { .string($0.wireName) }),
                "associations": .array(entry.associations.map { .string($0.wireName) }),
                "logged_at": .string(entry.loggedAt.iso8601), "source": .string("manual"),
                "source_id": .string(entry.id.description), "notes": entry.notes.map { .string($0) } ?? .null
            ]
        case .wellness:
            return [
                "valence": valence,
                "labels": .array(
                    entry.labels.filter { !$0.isCustom }.map { .string(SyncDialect.wellnessSpelling($0.name)) }),
                "associations": .array(
                    entry.associations.filter { !$0.isCustom }.map { .string(SyncDialect.wellnessSpelling($0.name)) }),
                "logged_at": .string(entry.loggedAt.iso8601), "source": .string("manual"),
                "notes": entry.notes.map { .string($0) } ?? .null
            ]
        }
    }

    static func checkStored(_ device: Device, _ backend: SeedBackend, skipping held: Set<EntryID>) throws {
        let state = device.ledger.state
        let stored = backend.entries
        let sent = state.entries.all.filter { !held.contains($0.id) }
        #expect(stored.count == sent.count, "one record per entry, nothing duplicated")
        for entry in sent {
            let remoteID = try #require(
                state.outbox.record(OutboxKey(entryID: entry.id, destination: .backend))?.remoteID)
            let record = try #require(stored.first { $0.id == remoteID }?.body, "\(entry.id) not stored")
            for (field, value) in expected(entry, backend.dialect) {
                #expect((record[field] ?? .null) == value, "\(backend.dialect.rawValue) \(field) of \(entry.id)")
            }
        }
    }

    static func status(_ device: Device) -> SyncStatus {
        SyncStatus.of(device.ledger.state, now: device.ledger.options.clock()).first { $0.destination == .backend }!
    }

    @Test(
        "mood-api (seed 001): documented bodies only, valence from the score by the seed's formula, edits held",
        arguments: [false, true])
    func moodAPI(overHTTP: Bool) throws {
        let dir = TemporaryDirectory("seed-mood-api")
        let backend = try SeedBackend(.moodAPI)
        let http = overHTTP ? try FaultProxy(handler: backend.handle) : nil
        defer { http?.stop() }
        let device = try Device(dir.sub("d"), remote: http?.url ?? "http://seed.invalid", capabilities: nil)
        let transport: (any SyncTransport)? = overHTTP ? nil : backend
        let ids = try Self.fill(device)
        let credentials = SyncCredentials(apiKey: "k", token: "t")
        let first = try device.sync(credentials, transport: transport)
        #expect(first.isComplete && first.delivered == ids.count, "\(first)")
        #expect(
            first.pullSkipped == nil && first.pulled == 0, "no changes feed: the list is read, our own records found")
        let config = try #require(device.ledger.state.outbox.progress(.backend).remote)
        #expect(config.capabilitySource == .probed && config.capabilities.isEmpty)
        #expect(backend.requests.first?.method == "GET" && backend.requests.first?.path == "/api/v1/mood?limit=1")
        try Self.checkStored(device, backend, skipping: [])

        // Seed 001 documents no update or delete route: both are held, listed with their reasons, and not failures.
        _ = try device.ledger.update(ids["valence"]!, MoodChanges(notes: .set("changed")))
        try device.ledger.delete(ids["score"]!)
        let before = backend.requests.count
        let second = try device.sync(credentials, transport: transport)
        #expect(second.isComplete && second.sent == 0 && second.heldAfter == 2 && second.pulled == 0, "\(second)")
        #expect(
            backend.requests.dropFirst(before).map(\.method) == ["GET"],
            "nothing sent: no probe again, no PUT, no DELETE; the list read once")
        let status = Self.status(device)
        #expect(Set(status.held.map(\.entryID)) == [ids["valence"]!, ids["score"]!])
        #expect(status.held.allSatisfy { $0.text.contains("no update route") || $0.text.contains("no delete route") })
        #expect(status.notCarried.map(\.entryID) == [ids["custom"]!] && status.notCarried[0].text == "tags")
        #expect(status.pending == 0)
        let story = try SyncExplanation.explain(ids["valence"]!, in: device.ledger)
        #expect(story.status == "held" && story.next.contains("no update route"), "\(story.text)")
        #expect(backend.violations.isEmpty, "\(backend.violations)")
    }

    @Test(
        "wellness (seed 002): CreateMoodRequest with its enum spellings; labels-only held; custom words said; edits and deletes"
    )
    func wellness() throws {
        let dir = TemporaryDirectory("seed-wellness")
        let backend = try SeedBackend(.wellness)
        let device = try Device(dir.sub("d"), remote: "http://seed.invalid", dialect: .wellness, capabilities: nil)
        let ids = try Self.fill(device)
        let credentials = SyncCredentials(apiKey: "k", token: "t")
        let first = try device.sync(credentials, transport: backend)
        #expect(first.isComplete && first.delivered == ids.count - 1 && first.heldAfter == 1, "\(first)")
        #expect(device.ledger.state.outbox.progress(.backend).remote?.capabilities == [.update, .delete])
        try Self.checkStored(device, backend, skipping: [ids["labelsOnly"]!])
        let posted = backend.requests.compactMap(\.body)
        #expect(posted.contains { $0["associations"] == .array([.string("currentEvents"), .string("selfCare")]) })
        var status = Self.status(device)
        #expect(
            status.held.map(\.entryID) == [ids["labelsOnly"]!] && status.held[0].text.contains("requires a valence"))
        #expect(
            status.notCarried.first { $0.entryID == ids["custom"]! }?.text
                == "1 custom label (the seed's labels are a fixed list), 1 custom association (the seed's associations are a fixed list), tags"
        )

        _ = try device.ledger.update(ids["valence"]!, MoodChanges(score: 3, notes: .clear))
        try device.ledger.delete(ids["score"]!)
        let second = try device.sync(credentials, transport: backend)
        #expect(second.isComplete && second.delivered == 2, "\(second)")
        try Self.checkStored(device, backend, skipping: [ids["labelsOnly"]!])
        #expect(
            try SyncExplanation.explain(ids["valence"]!, in: device.ledger).text.contains(
                "Unconditional: the remote has no revisions"))

        // Deleted on another client of the seed: the PUT's 404 means the entry is gone there (the route exists), so
        // the edit creates it again — one record, not two.
        let remoteID = try #require(
            device.ledger.state.outbox.record(OutboxKey(entryID: ids["daily"]!, destination: .backend))?.remoteID)
        #expect(backend.handle("DELETE", "/api/v1/wellness/mood-entries/\(remoteID)", nil).0 == 204)
        _ = try device.ledger.update(ids["daily"]!, MoodChanges(valence: 0.5))
        let third = try device.sync(credentials, transport: backend)
        #expect(third.isComplete && third.delivered == 1)
        try Self.checkStored(device, backend, skipping: [ids["labelsOnly"]!])

        let before = backend.requests.count
        let again = try device.sync(credentials, transport: backend)
        #expect(again.isComplete && again.sent == 0 && again.pulled == 0)
        #expect(backend.requests.dropFirst(before).allSatisfy { $0.method == "GET" }, "only the list read")
        status = Self.status(device)
        #expect(status.pending == 0 && status.held.count == 1)
        #expect(backend.violations.isEmpty, "\(backend.violations)")
    }

    @Test("progress (seed 004): 1–10 quantities; labels-only, updates and deletes held, never failures")
    func progress() throws {
        let dir = TemporaryDirectory("seed-progress")
        let backend = try SeedBackend(.progress)
        let device = try Device(dir.sub("d"), remote: "http://seed.invalid", dialect: .progress, capabilities: nil)
        let ids = try Self.fill(device)
        let credentials = SyncCredentials(apiKey: "k", token: "t")
        let first = try device.sync(credentials, transport: backend)
        #expect(first.isComplete && first.delivered == ids.count - 1 && first.heldAfter == 1, "\(first)")
        try Self.checkStored(device, backend, skipping: [ids["labelsOnly"]!])
        _ = try device.ledger.update(ids["score"]!, MoodChanges(score: 3))
        let before = backend.requests.count
        let second = try device.sync(credentials, transport: backend)
        #expect(second.isComplete && second.sent == 0 && second.heldAfter == 2 && backend.requests.count == before)
        #expect(Self.status(device).held.contains { $0.entryID == ids["score"]! && $0.text.contains("cannot update") })
        #expect(backend.violations.isEmpty, "\(backend.violations)")
    }

    @Test("The reference server says what it can do on a documented read; the client records it once")
    func probesReferenceServer() throws {
        let dir = TemporaryDirectory("seed-probe")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let device = try Device(dir.sub("d"), remote: server.url, capabilities: nil)
        try device.log(0.2)
        #expect(try device.sync(server.credentials).isComplete)
        let configured = try device.ledger.events(ofType: .remoteConfigured)
        #expect(configured.count == 2, "the configuration, then what the probe learned")
        let config = try #require(device.ledger.state.outbox.progress(.backend).remote)
        #expect(config.capabilitySource == .probed && config.capabilities == .all)
        #expect(try device.replayed().outbox.progress(.backend).remote == config)
        try device.log(0.3)
        try device.sync(server.credentials)
        #expect(try device.ledger.events(ofType: .remoteConfigured).count == 2, "asked once")
    }

    @Test("A 405 on an update is never re-sent as a create; a 404 is only where the remote is known to have the route")
    func methodNotAllowedIsNotACreate() throws {
        let dir = TemporaryDirectory("seed-405")
        let backend = try SeedBackend(.moodAPI)
        // The user claimed an update route this seed does not have; it answers 404 (no such route) or 405.
        let device = try Device(dir.sub("d"), remote: "http://seed.invalid", capabilities: [.update])
        let id = try device.log(0.4)
        let credentials = SyncCredentials(apiKey: "k", token: "t")
        try device.sync(credentials, transport: backend)
        _ = try device.ledger.update(id, MoodChanges(valence: 0.1))
        let refusing = FaultyTransport(backend) { _, request in
            request.method == "PUT" ? .answer(405, [], #"{"error":"method not allowed"}"#) : nil
        }
        let report = try device.sync(credentials, transport: refusing)
        #expect(report.parked == 1 && !refusing.requests.contains { $0.0.method == "POST" })
        #expect(backend.entries.count == 1)
    }

    @Test("Every word of every vocabulary survives every dialect's spelling")
    func vocabularyRoundTrip() throws {
        for label in MoodLabel.allCanonical {
            for spelling in [label.wireName, label.name, label.name.lowercased()] {
                #expect(try MoodLabel.parse(spelling) == label, "\(spelling)")
            }
        }
        for association in MoodAssociation.allCanonical {
            for spelling in [association.wireName, association.name] {
                #expect(try MoodAssociation.parse(spelling) == association, "\(spelling)")
            }
        }
        // Through the bodies: a wellness body's words are its enum's; a mood-api body's parse back to the same words.
        let wellness = SyncDialect(RemoteConfig(url: "http://x", dialect: .wellness, capabilities: [], source: .probed))
        let moodAPI = SyncDialect(RemoteConfig(url: "http://x", dialect: .moodAPI, capabilities: [], source: .probed))
        let schema = try JSONSchema.seed("wellness-mood-request")
        let labels = MoodLabel.allCanonical.map(\.wireName)
        let associations = MoodAssociation.allCanonical.map(\.wireName)
        let associationChunks = [Array(associations.prefix(10)), Array(associations.dropFirst(10))]
        for (index, chunk) in stride(from: 0, to: labels.count, by: 10).map({
            Array(labels[$0..<min($0 + 10, labels.count)])
        }).enumerated() {
            let entry = try MoodRules.validate(
                MoodDraft(valence: 0.1, labels: chunk, associations: associationChunks[index % 2]),
                now: 0, bounds: .storage, newID: { EntryID.random() })
            for dialect in [wellness, moodAPI] {
                let body = try JSONParser.parse(
                    String(
                        decoding: dialect.request(
                            .create, entryID: entry.id, entry: entry,
                            remoteID: nil, key: "k"
                        ).body!, as: UTF8.self))
                // Seed 002's fixed lists spell three Apple words with its own (drained as tired, friends as social,
                // money as finances): a documented translation, read back as those words (`Specs/sync.md`).
                let translated = ["tired": "drained", "social": "friends", "finances": "money"]
                let words = try body["labels"]!.arrayValue!.map {
                    try MoodLabel.parse(
                        dialect.dialect == .wellness ? translated[$0.stringValue!] ?? $0.stringValue! : $0.stringValue!)
                }
                #expect(words == entry.labels)
                let associationWords = try body["associations"]!.arrayValue!.map {
                    try MoodAssociation.parse(
                        dialect.dialect == .wellness ? translated[$0.stringValue!] ?? $0.stringValue! : $0.stringValue!)
                }
                #expect(associationWords == entry.associations)
                if dialect.dialect == .wellness {
                    #expect(schema.violations(of: body).isEmpty, "\(schema.violations(of: body))")
                }
            }
        }
    }
}

@Suite("Seed schemas")
struct SeedSchemaTests {
    @Test("The seed schemas refuse the reference server's extended bodies (the checks can fail)")
    func refuseExtensions() throws {
        let entry = try MoodRules.validate(
            MoodDraft(score: 10, labels: ["happy"], associations: ["current events"], tags: ["x"]),
            now: 0, bounds: .storage, newID: { EntryID.random() })
        for (dialect, schema) in [(RemoteDialect.moodAPI, "mood-api-create"), (.wellness, "wellness-mood-request")] {
            let extended = SyncDialect(
                RemoteConfig(url: "http://x", dialect: dialect, capabilities: .all, source: .set))
            let body = try JSONParser.parse(
                String(
                    decoding: extended.request(
                        .create, entryID: entry.id, entry: entry,
                        remoteID: nil, key: "k"
                    ).body!, as: UTF8.self))
            let violations = try JSONSchema.seed(schema).violations(of: body)
            #expect(
                violations.contains("$: unknown field id") && violations.contains("$: unknown field tags"),
                "\(violations)")
        }
        let wellness = try JSONSchema.seed("wellness-mood-request")
        #expect(
            !wellness.violations(
                of: try JSONParser.parse(
                    #"{"valence": 0.1, "labels": ["happy"], "associations": ["current_events"], "logged_at": "2025-01-15T14:30:00Z", "source": "manual"}"#
                )
            ).isEmpty,
            "snake_case associations are not the seed's enum")
        #expect(
            !(try JSONSchema.seed("mood-api-create")).violations(of: try JSONParser.parse(#"{"labels": []}"#)).isEmpty)
    }
}
