import Foundation
import MoodInterchange
import MoodLedger
import MoodLedgerSync
import Synchronization
import TestSupport
import Testing

/// What an app writes against the package, as its documentation shows it: compiled here as written, and run
/// against the reference server.
func appContract(
    directory: URL, server: URL, tokens: @escaping @Sendable () async throws -> SyncCredentials
) async throws {
    let ledger = try Ledger.open(at: directory.appendingPathComponent("mood.ledger"))
    let draft = MoodDraft(
        valence: 0.4, labels: ["calm"], associations: ["friends"], notes: "a quiet morning",
        loggedAt: LoggedAt(Date(), timeZone: TimeZone(identifier: "Europe/Berlin")!))
    let entry = try await ledger.log(draft).entry!
    precondition(entry.valence == 0.4)  // exactly as written
    let copy = try JSONDecoder().decode(MoodEntry.self, from: JSONEncoder().encode(entry))
    precondition(copy == entry)  // Codable

    _ = try await ledger.replace(
        entry.id,
        with: MoodReplacement(
            valence: 0.6, labels: ["happy"], associations: [],
            tags: [], notes: nil))  // one commit
    try await ledger.log(contentsOf: [MoodDraft(score: 7), MoodDraft(valence: -0.2, labels: ["stressed"])])

    var seen = 0
    for try await page in ledger.observe(EntryQuery(limit: 30)) {  // current value first, then per commit
        seen = page.total
        break
    }
    precondition(seen == 3)

    try await ledger.setRemote(server, dialect: .moodAPI)
    let engine = try SyncEngine(ledger: ledger, credentials: { try await tokens() })
    let report = try await engine.run()
    _ = report
    for conflict in try await ledger.conflicts() {
        try await ledger.resolveConflict(conflict.entryID, take: .server)
    }

    do {
        try await ledger.delete(EntryID.random())
    } catch {
        precondition(!error.localizedDescription.contains("could not be completed"))  // a sentence a person can read
    }
}

/// A transport that holds every write until the gate opens (a request caught in flight); reads go through.
final class GatedTransport: SyncTransport, @unchecked Sendable {
    let inner: any SyncTransport
    let gate = DispatchSemaphore(value: 0)
    let requests = Atomic<Int>(0)
    let open = Atomic<Bool>(false)
    init(_ inner: any SyncTransport) { self.inner = inner }
    func perform(_ request: SyncRequest, credentials: SyncCredentials) -> SyncExchange {
        guard request.method != "GET" else { return inner.perform(request, credentials: credentials) }
        requests.add(1, ordering: .relaxed)
        if !open.load(ordering: .relaxed) {
            gate.wait()
            gate.signal()
        }
        return inner.perform(request, credentials: credentials)
    }
    func release() {
        open.store(true, ordering: .relaxed)
        gate.signal()
    }
}

@Suite("An app's API, as its documentation shows it")
struct AppContractTests {
    @Test("The app contract compiles as written and does what its comments say against the reference server")
    func contract() async throws {
        let dir = TemporaryDirectory("app-contract")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let credentials = server.credentials
        try await appContract(
            directory: URL(fileURLWithPath: dir.sub("app")), server: URL(string: server.url)!,
            tokens: { credentials })
        let ledger = try Ledger.open(at: URL(fileURLWithPath: dir.sub("app")).appendingPathComponent("mood.ledger"))
        defer { ledger.close() }
        let entries = ledger.read { $0.entries.all }
        #expect(entries.count == 3)
        #expect(Set(entries.compactMap(\.valence)) == [0.6, Valence.display(Valence.from(score: 7)), -0.2])
        #expect(try server.entries().count == 3, "all three reached the server")
        #expect(ledger.read { $0.outboxItems(destination: .backend) }.isEmpty, "nothing left to send")
    }

    @Test("The app contract against the built moodledger serve, a process of its own, as an app meets it")
    func contractAgainstBinary() async throws {
        let dir = TemporaryDirectory("app-contract-binary")
        // The data directory and alice's credentials are made once; the server that answers is the built binary.
        let setup = try SyncServer(dir: dir.sub("server"))
        let credentials = setup.credentials
        setup.stop()
        let (process, port) = try ServeProcess.start(dir.sub("server"))
        defer { ServeProcess.stop(process) }
        try await appContract(
            directory: URL(fileURLWithPath: dir.sub("app")), server: URL(string: "http://127.0.0.1:\(port)")!,
            tokens: { credentials })
        let ledger = try Ledger.open(at: URL(fileURLWithPath: dir.sub("app")).appendingPathComponent("mood.ledger"))
        defer { ledger.close() }
        #expect(ledger.read { $0.entries.count } == 3)
        #expect(ledger.read { $0.outboxItems(destination: .backend) }.isEmpty, "nothing left to send")
        #expect(ServeProcess.stop(process), "the server stops cleanly")
        #expect(try setup.entries().count == 3, "all three reached the server's ledger")
    }

    @Test("A replacement is one batch; an invalid one appends nothing and names the field")
    func replaceIsOneCommit() throws {
        let dir = TemporaryDirectory("replace")
        let ledger = try Ledger.open(at: dir.path)
        defer { ledger.close() }
        let id = try ledger.log(MoodDraft(valence: 0.1, labels: ["calm"], notes: "x")).entry!.id
        let before = ledger.lastSeq
        let result = try ledger.replace(
            id,
            with: MoodReplacement(
                score: 8, labels: ["happy", "grateful"], associations: ["work"], tags: ["t"], notes: nil,
                kind: .dailyMood))
        #expect(result.appendedEvents == 4)
        let events = try ledger.events(after: before)
        #expect(Set(events.map(\.commandID)).count == 1, "one command")
        let entry = try #require(result.entry)
        #expect(entry.enteredScore == 8 && entry.labels.map(\.wireName) == ["happy", "grateful"])
        #expect(entry.notes == nil && entry.tags == ["t"] && entry.kind == .dailyMood)
        let seq = ledger.lastSeq
        #expect {
            try ledger.replace(
                id, with: MoodReplacement(valence: 3, labels: ["calm"], associations: [], tags: [], notes: "y"))
        } throws: { ($0 as? MoodError)?.field == "valence" }
        #expect(ledger.lastSeq == seq, "nothing appended")
        #expect(ledger.entry(id) == entry)
    }

    @Test("log(contentsOf:) is one batch decided in order; one invalid draft appends none of them")
    func logContentsOf() throws {
        let dir = TemporaryDirectory("log-batch")
        let ledger = try Ledger.open(at: dir.path)
        defer { ledger.close() }
        let day = LoggedAt(milliseconds: 1_780_000_000_000, utcOffsetMinutes: 60)
        let entries = try ledger.log(contentsOf: [
            MoodDraft(score: 3, kind: .dailyMood, loggedAt: day),
            MoodDraft(valence: 0.5, labels: ["calm"], sourceID: "s1"),
            MoodDraft(score: 9, kind: .dailyMood, loggedAt: day),
            MoodDraft(valence: 0.7, sourceID: "s1")
        ])
        #expect(entries.count == 4)
        #expect(entries[0].id == entries[2].id && entries[0].enteredScore == 9, "the day's second mood merged")
        #expect(entries[1].id == entries[3].id && entries[3].valence == 0.5, "a repeated source id names the first")
        #expect(ledger.read { $0.entries.count } == 2)
        #expect(Set(try ledger.events().map(\.commandID)).count == 1)
        let seq = ledger.lastSeq
        #expect { try ledger.log(contentsOf: [MoodDraft(valence: 0.2), MoodDraft(score: 11)]) } throws: {
            ($0 as? MoodError)?.field == "score"
        }
        #expect(ledger.lastSeq == seq)
    }

    @Test("setRemote and removeRemote: the same server twice appends once; removal forgets what was delivered")
    func remotes() async throws {
        let dir = TemporaryDirectory("remote")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let ledger = try Ledger.open(at: dir.sub("app"))
        defer { ledger.close() }
        #expect(throws: SyncError.self) { try SyncEngine(ledger: ledger, credentials: { server.credentials }) }
        #expect {
            try ledger.setRemote(URL(string: "ftp://example.com")!)
        } throws: { ($0 as? MoodError)?.field == "url" }
        try await ledger.log(contentsOf: [MoodDraft(valence: 0.1), MoodDraft(valence: 0.2)])
        try await ledger.setRemote(URL(string: server.url)!)
        let seq = ledger.lastSeq
        try await ledger.setRemote(URL(string: server.url)!, dialect: .moodAPI)
        #expect(ledger.lastSeq == seq, "the same server: nothing appended")
        let credentials = server.credentials
        let report = try await SyncEngine(ledger: ledger, credentials: { credentials }).run()
        #expect(report.delivered == 2)
        #expect(ledger.read { $0.outboxItems(destination: .backend) }.isEmpty)
        try await ledger.removeRemote()
        #expect(ledger.remote == nil)
        #expect(throws: SyncError.self) { try SyncEngine(ledger: ledger, credentials: { credentials }) }
        let removed = ledger.lastSeq
        try await ledger.removeRemote()
        #expect(ledger.lastSeq == removed, "no backend: nothing to remove")
        // A fresh replay agrees with the live fold.
        let replayed = try Ledger.open(
            at: dir.sub("app"),
            options: {
                var o = Ledger.Options(); o.readOnly = true; o.useSnapshots = false; return o
            }())
        defer { replayed.close() }
        #expect(replayed.read { $0 } == ledger.read { $0 })
        try ledger.setRemote(server.url)
        #expect(ledger.read { $0.outboxItems(destination: .backend) }.count == 2, "both are sent again")
    }

    @Test("Errors read as sentences about the user's data, never the system's placeholder")
    func readableErrors() throws {
        let dir = TemporaryDirectory("errors")
        let ledger = try Ledger.open(at: dir.path)
        defer { ledger.close() }
        var errors: [any Error] = []
        do { try ledger.delete(EntryID.random()) } catch { errors.append(error) }
        do { try ledger.log(MoodDraft(valence: 2, notes: "private words")) } catch { errors.append(error) }
        do {
            _ = try Ledger.open(
                at: dir.sub("missing"),
                options: {
                    var o = Ledger.Options(); o.readOnly = true; return o
                }())
        } catch { errors.append(error) }
        do { _ = try SyncEngine(ledger: ledger, credentials: { SyncCredentials() }) } catch { errors.append(error) }
        #expect(errors.count == 4)
        for error in errors {
            let text = error.localizedDescription
            #expect(!text.contains("could not be completed") && !text.contains("private words"), "\(text)")
            #expect(text.hasSuffix("."), "\(text)")
        }
        #expect((errors[0] as? MoodError)?.code == .notFound)
        #expect(errors[0].localizedDescription.contains("no longer exists"))
        #expect(errors[1].localizedDescription.contains("valence"))
        #expect(errors[2] is EventLogError, "caught with `import MoodLedger` alone")
    }

    @Test("Two runs of one ledger at once are one run; a cancelled run records every request it sent, and no more")
    func concurrentAndCancelled() async throws {
        let dir = TemporaryDirectory("async-run")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let ledger = try Ledger.open(at: dir.sub("app"))
        defer { ledger.close() }
        try await ledger.log(contentsOf: (0..<40).map { MoodDraft(valence: Double($0) / 100) })
        try ledger.setRemote(server.url)
        let credentials = server.credentials
        var configuration = SyncEngine.Configuration()
        configuration.batchSize = 5
        configuration.concurrency = 2
        let gated = GatedTransport(HTTPTransport(url: try RemoteURL(server.url)))
        let engine = try SyncEngine(
            ledger: ledger, transport: gated, credentials: { credentials }, configuration: configuration)
        let ended = Atomic<Bool>(false)
        let run = Task {
            defer { ended.store(true, ordering: .relaxed) }
            return try await engine.run()
        }
        // The first writes are held in flight; then the task is cancelled and they are let through.
        #expect(
            waitUntil(seconds: 60) {
                gated.requests.load(ordering: .relaxed) >= 1 || ended.load(ordering: .relaxed)
            })
        if ended.load(ordering: .relaxed) {
            Issue.record("the run ended before its first write: \(String(describing: await run.result))")
            return
        }
        run.cancel()
        gated.release()
        await #expect(throws: CancellationError.self) { try await run.value }
        let attempted = try ledger.events(filter: EventFilter(type: .syncAttempted)).count
        let answered =
            try ledger.events(filter: EventFilter(type: .syncSucceeded)).count
            + ledger.events(filter: EventFilter(type: .syncFailed)).count
        #expect(attempted > 0 && attempted < 40, "stopped before sending everything: \(attempted)")
        #expect(answered == attempted, "every request sent was answered and recorded")
        #expect(try server.entries().count == attempted)

        // Two runs at once, through two engines: the second, started while the first is held mid-request, sends
        // nothing of its own and answers with the first's report.
        let held = GatedTransport(HTTPTransport(url: try RemoteURL(server.url)))
        let first = try SyncEngine(
            ledger: ledger, transport: held, credentials: { credentials }, configuration: configuration)
        let second = try SyncEngine(ledger: ledger, credentials: { credentials }, configuration: configuration)
        let a = Task { try await first.run() }
        #expect(waitUntil(seconds: 30) { held.requests.load(ordering: .relaxed) >= 1 })
        let b = Task { try await second.run() }
        #expect(waitUntil(seconds: 30) { second.joinedRuns.load(ordering: .relaxed) == 1 })
        let sentBefore = try ledger.events(filter: EventFilter(type: .syncAttempted)).count
        held.release()
        let (ra, rb) = (try await a.value, try await b.value)
        #expect(ra == rb, "one run, one report")
        #expect(ra.delivered == 40 - attempted, "it delivered the rest")
        #expect(sentBefore > attempted)
        #expect(try ledger.events(filter: EventFilter(type: .syncAttempted)).count == 40, "each entry sent once")
        #expect(try server.entries().count == 40)
    }
}

@Suite("A source record the server already holds under another id")
struct SourceLinkTests {
    @Test("Two devices log one HealthKit sample: the second links to the first's record, nothing parked or doubled")
    func linkedBySourceKey() async throws {
        let dir = TemporaryDirectory("source-link")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let credentials = server.credentials
        let logged = LoggedAt(milliseconds: 1_779_000_000_000, utcOffsetMinutes: 60)
        var ids: [EntryID] = []
        for device in ["a", "b"] {
            let ledger = try Ledger.open(at: dir.sub(device))
            defer { ledger.close() }
            ids.append(
                try await ledger.log(
                    MoodDraft(
                        valence: 0.3, labels: ["calm"], loggedAt: logged, source: .healthkit,
                        sourceID: "HK-MOOD-sample-1")
                ).entry.id)
            try await ledger.setRemote(URL(string: server.url)!)
            let report = try await SyncEngine(ledger: ledger, credentials: { credentials }).run()
            #expect(report.delivered == 1 && report.retrying == 0 && report.parked == 0, "device \(device)")
            let record = ledger.read { $0.outbox.record(OutboxKey(entryID: ids.last!, destination: .backend)) }
            #expect(record?.remoteID == ids[0].description, "device \(device) names the first record")
            #expect(record?.operation == nil, "in step")
        }
        #expect(ids[0] != ids[1])
        #expect(try server.entries().map(\.id) == [ids[0]], "one record on the server")
    }

    @Test("Two devices sharing one Health store and one backend: one entry each side per mood, one record each")
    func sharedHealthAndBackend() async throws {
        let dir = TemporaryDirectory("shared-health")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let credentials = server.credentials
        let health = FileHealthStore(path: dir.sub("health.json"))
        let phone = try Ledger.open(at: dir.sub("phone"))
        defer { phone.close() }
        let pad = try Ledger.open(at: dir.sub("pad"))
        defer { pad.close() }
        for ledger in [phone, pad] { try await ledger.setRemote(URL(string: server.url)!) }
        func sync(_ ledger: Ledger) async throws -> SyncReport {
            try await SyncEngine(ledger: ledger, credentials: { credentials }).run()
        }
        let now = { Int64(Date().timeIntervalSince1970 * 1000) + 1 }
        // Logged on the phone: to Health and to the backend.
        let mood = try await phone.log(MoodDraft(valence: 0.3, labels: ["calm"], notes: "on the phone")).entry.id
        #expect(try await phone.pushToHealthKit(health, now: now()).saved == 1)
        #expect(try await sync(phone).delivered == 1)
        // Logged in the Health app (another app's sample): both devices pull it.
        try await health.save(
            StateOfMindSample(
                uuid: EntryID.random(), date: LoggedAt(milliseconds: now() - 60_000, utcOffsetMinutes: 0),
                kind: .momentaryEmotion, valence: -0.2, labels: [try MoodLabel.parse("stressed")], associations: []))
        #expect(try await phone.pullFromHealthKit(health).pulled == 1, "only the Health app's sample")
        #expect(try await pad.pullFromHealthKit(health).pulled == 1, "the phone's copy is not a second entry")
        for ledger in [phone, pad, phone] { _ = try await sync(ledger) }
        for (name, ledger) in [("phone", phone), ("pad", pad)] {
            let entries = ledger.read { $0.entries.all }
            #expect(entries.count == 2, "\(name): one entry per mood")
            #expect(entries.contains { $0.id == mood && $0.notes == "on the phone" }, "\(name)")
            #expect(ledger.read { $0.outboxItems(destination: .backend) }.isEmpty, "\(name): nothing left to send")
        }
        server.stop()
        #expect(try server.entries().count == 2, "one record per mood on the server")
    }
}
