import Foundation
import TestSupport
import Testing

@testable import EventLog
@testable import MoodLedger
@testable import MoodModel

/// `Specs/vectors/rules.json`: the rules a second reader needs beyond the formats — the printed valence, the order of
/// custom words, the fold's corners, the redo journal's header checks — each run against the ledger.
@Suite("Rule vectors (Specs/vectors/rules.json)")
struct RuleVectorTests {
    static func rules() throws -> JSONValue {
        try JSONParser.parse(String(contentsOfFile: Repository.root + "/Specs/vectors/rules.json", encoding: .utf8))
    }

    @Test("The printed valence of each grid point is the vector's text")
    func valenceDisplay() throws {
        let cases = try #require(try Self.rules()["valence_display"]?.arrayValue)
        #expect(cases.count >= 10)
        for item in cases {
            let q = Int64(try #require(item["q"]?.intValue))
            let text = JSONValue.double(Valence.display(Valence.value(q))).serialized()
            #expect(text == item["json"]?.stringValue, "q = \(q): \(item["why"]?.stringValue ?? "")")
            #expect(Valence.fixed(Double(text)!) == q, "q = \(q): the text reads back as the same grid point")
        }
    }

    @Test("Custom words: one word per NFC form, listed by count then by their NFC forms' scalar values")
    func customWordOrder() throws {
        let vector = try #require(try Self.rules()["custom_word_order"])
        let dir = TemporaryDirectory("rules-words")
        let ledger = try Ledger.open(at: dir.path)
        defer { ledger.close() }
        for word in try #require(vector["labels"]?.arrayValue).compactMap(\.stringValue) {
            _ = try ledger.log(MoodDraft(valence: 0.1, labels: [word]))
        }
        let words = ledger.read { $0.labelAnalytics() }.words
        #expect(words.map(\.word) == vector["ordered"]?.arrayValue?.compactMap(\.stringValue))
        for (word, count) in try #require(vector["counts"]?.objectValue) {
            #expect(words.first { $0.word == word }?.count == count.intValue, "\(word)")
        }
    }

    /// Runs one scenario's steps on a fresh ledger.
    private final class Scenario {
        let ledger: Ledger
        var ids: [String: EntryID] = [:]
        var original: [String: MoodEntry] = [:]

        init(_ dir: TemporaryDirectory) throws { ledger = try Ledger.open(at: dir.path) }

        func id(_ step: JSONValue, _ key: String = "entry") throws -> EntryID {
            let name = try #require(step[key]?.stringValue)
            return try #require(ids[name], "entry \(name)")
        }

        func version(_ name: String?, of id: EntryID, entry: String) throws -> MoodEntry? {
            switch name {
            case "original": return original[entry]
            case "current": return ledger.entry(id)
            case "changed":
                var theirs = try #require(original[entry])
                theirs.notes = "theirs"
                return theirs
            default: return nil
            }
        }

        func run(_ step: JSONValue) throws {
            let source = step["source"]?.stringValue.flatMap(MoodSource.init(rawValue:))
            switch step["do"]?.stringValue {
            case "log":
                let entry = try ledger.log(
                    MoodDraft(
                        valence: 0.3, labels: ["calm"], notes: "first", source: source ?? .manual,
                        sourceID: step["source_id"]?.stringValue)
                ).entry!
                let name = try #require(step["as"]?.stringValue)
                ids[name] = entry.id
                original[name] = entry
            case "pull_new":
                let id = EntryID.random()
                var entry = MoodEntry(
                    id: id, loggedAt: LoggedAt(milliseconds: 1_780_000_000_000), kind: .momentaryEmotion,
                    valence: 0.2, enteredScore: nil, tags: [], notes: "pulled", source: source ?? .backend,
                    sourceID: step["source_id"]?.stringValue)
                entry.labels = []
                try ledger.applyRemote(
                    RemoteChange(
                        origin: .backend, remoteID: step["remote_id"]?.stringValue, entry: entry, entryID: id,
                        revision: 1))
                let name = try #require(step["as"]?.stringValue)
                ids[name] = id
            case "update":
                _ = try ledger.update(
                    try id(step), MoodChanges(notes: .set("changed \(UInt64.random(in: 0...1 << 40))")))
            case "delete": try ledger.delete(try id(step))
            case "attempt":
                try ledger.recordSyncAttempt(
                    try id(step), to: .backend,
                    operation: step["operation"]?.stringValue.flatMap(SyncOperation.init(rawValue:)), key: "k")
            case "succeed":
                try ledger.recordSyncSuccess(
                    try id(step), to: .backend, remoteID: try #require(step["remote_id"]?.stringValue),
                    revision: UInt64(step["revision"]?.intValue ?? 0))
            case "fail":
                try ledger.recordSyncFailure(
                    try id(step), to: .backend,
                    SyncFailure(
                        status: 500, error: step["error"]?.stringValue ?? "server error",
                        retryable: step["retryable"]?.boolValue == true))
            case "merge":
                let id = try id(step)
                let name = try #require(step["entry"]?.stringValue)
                let here = try version(step["here"]?.stringValue, of: id, entry: name)
                let theirs = try version(step["theirs"]?.stringValue, of: id, entry: name)
                let merged =
                    step["merged"]?.stringValue == "here"
                    ? here : step["merged"]?.stringValue == "theirs" ? theirs : nil
                let merge = SyncMerge(
                    entryID: id, remoteID: step["remote_id"]?.stringValue,
                    serverRevision: UInt64(step["revision"]?.intValue ?? 0), baseRevision: 2,
                    base: try version(step["base"]?.stringValue, of: id, entry: name), here: here, theirs: theirs,
                    merged: merged)
                _ = try ledger.execute { _, _ in ([.syncMerged(merge)], id, false) }
            case "erase": _ = try ledger.erase([try id(step)], ignoringDestinations: true)
            default: Issue.record("unknown step \(step.serialized())")
            }
        }

        func check(_ expectation: JSONValue, _ name: String) throws {
            let state = ledger.state
            if let entry = expectation["outbox"]?.stringValue {
                let record = state.outbox.record(OutboxKey(entryID: try #require(ids[entry]), destination: .backend))
                if expectation["op"]?.stringValue == "absent" {
                    #expect(record == nil, "\(name): no record")
                    return
                }
                let found = try #require(record, "\(name): a record")
                if let op = expectation["op"] {
                    #expect(found.operation?.rawValue == op.stringValue, "\(name): op")
                }
                if let parked = expectation["parked"]?.boolValue {
                    #expect(found.parked == parked, "\(name): parked")
                }
                if let changed = expectation["changed_since_attempt"]?.boolValue {
                    #expect(found.changedSinceAttempt == changed, "\(name): changed since attempt")
                }
                if let attempts = expectation["attempts"]?.intValue {
                    #expect(found.attempts == attempts, "\(name): attempts")
                }
            }
            if let entry = expectation["exists"]?.stringValue {
                #expect((state.entries[try #require(ids[entry])] != nil) == expectation["value"]?.boolValue, "\(name)")
            }
            if let entry = expectation["source_id"]?.stringValue {
                #expect(
                    state.entries[try #require(ids[entry])]?.sourceID == expectation["value"]?.stringValue,
                    "\(name): source id of \(entry)")
            }
            if let entry = expectation["notes"]?.stringValue {
                #expect(state.entries[try #require(ids[entry])]?.notes == expectation["value"]?.stringValue, "\(name)")
            }
            if let text = expectation["last_error"]?.stringValue {
                #expect(state.outbox.progress(.backend).lastError == text, "\(name): last error")
            }
            if let entry = expectation["conflicts"]?.stringValue {
                let id = try #require(ids[entry])
                let open = try ledger.conflicts().filter { $0.entryID == id }
                for (field, won) in try #require(expectation["won"]?.objectValue) {
                    let conflict = open.first { MergeFields.named.first { $0.name == field }?.field == $0.field }
                    #expect(
                        conflict.map { $0.winner == ConflictChoice.here ? "here" : "server" } == won.stringValue,
                        "\(name): \(field) won by \(won)")
                }
            }
        }
    }

    @Test("Each scenario folds as the Specs say, live and after a full replay")
    func scenarios() throws {
        let scenarios = try #require(try Self.rules()["scenarios"]?.arrayValue)
        #expect(scenarios.count >= 10)
        for item in scenarios {
            let name = item["name"]?.stringValue ?? "?"
            let dir = TemporaryDirectory("rules-\(name)")
            let scenario = try Scenario(dir)
            for step in try #require(item["steps"]?.arrayValue) { try scenario.run(step) }
            for expectation in try #require(item["expect"]?.arrayValue) { try scenario.check(expectation, name) }
            let live = scenario.ledger.state
            scenario.ledger.close()
            var cold = Ledger.Options()
            cold.useSnapshots = false
            cold.readOnly = true
            let replayed = try Ledger.open(at: dir.path, options: cold)
            #expect(replayed.state == live, "\(name): full replay == live")
            replayed.close()
        }
    }

    @Test("The redo journal's header checks: the open and verify give the vector's verdict")
    func redoJournal() throws {
        let vector = try #require(try Self.rules()["redo_journal"])
        let logHex = try String(
            contentsOfFile: Repository.root + "/Specs/vectors/" + (try #require(vector["log"]?.stringValue)),
            encoding: .utf8)
        let log = Bytes.unhex(logHex)
        // The record patched: the log's record of that seq with the vector's payload (same length).
        let payloadHex = Array(try #require(vector["patch"]?["payload_hex"]?.stringValue))
        let payload = stride(from: 0, to: payloadHex.count, by: 2).map {
            UInt8(String(payloadHex[$0...$0 + 1]), radix: 16)!
        }
        let offset = 48 + 37
        let record = LogFormat.encodeRecord(seq: 2, type: 2, recordedAt: 1_700_000_000_000_001, payload: payload)
        #expect(Array(log[offset..<(offset + 32)])[4...] == record[4..<32], "the patch fits the log's record")
        let fileID = Array(log[16..<32])
        for item in try #require(vector["cases"]?.arrayValue) {
            let name = item["name"]?.stringValue ?? "?"
            var journal = EventLog.encodeRedo(fileID: fileID, [(Int64(offset), record)])
            journal.removeLast(4)
            if let set = item["set_u32"] {
                let at = try #require(set["at"]?.intValue)
                let value = UInt32(try #require(set["value"]?.intValue))
                for i in 0..<4 { journal[at + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
            }
            if let set = item["set_u64"] {
                let at = try #require(set["at"]?.intValue)
                let value = UInt64(try #require(set["value"]?.intValue))
                for i in 0..<8 { journal[at + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
            }
            if item["reseal_record"]?.boolValue == true {
                // The record whole and valid on its own again: only its header's fields differ from the log's.
                let start = 32 + 12
                let resealed = journal[start..<journal.count].withUnsafeBytes { bytes in
                    LogFormat.checksums(
                        header: UnsafeRawBufferPointer(rebasing: bytes[8..<32]),
                        payload: UnsafeRawBufferPointer(rebasing: bytes[32...]))
                }
                for (index, value) in [resealed.0, resealed.1].enumerated() {
                    for i in 0..<4 {
                        journal[start + 4 * index + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i)))
                    }
                }
            }
            let crc = CRC32C.mask(CRC32C.checksum(journal))
            for i in 0..<4 { journal.append(UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i)))) }
            let dir = TemporaryDirectory("rules-redo")
            Bytes.write(log, to: dir.sub("events.log"))
            Bytes.write(journal, to: dir.sub(EventLog.redoFileName))
            let report = try EventLog.verify(directory: dir.path)
            let verifyVerdict = item["verify"]?.stringValue ?? "?"
            if verifyVerdict == "ok" {
                #expect(report.ok && report.unfinishedRedaction != nil, "\(name): \(report)")
            } else {
                #expect(
                    !report.ok && report.problems.contains { $0.problem.contains(verifyVerdict) }, "\(name): \(report)")
            }
            let openVerdict = item["open"]?.stringValue ?? "?"
            do {
                let opened = try EventLog.open(directory: dir.path)
                let payloads = try opened.records().map(\.payload)
                opened.close()
                #expect(openVerdict == "applies", "\(name): opened although the vector refuses it")
                #expect(payloads.last == payload, "\(name): the journal's record was written")
            } catch {
                #expect("\(error)".contains(openVerdict), "\(name): \(error)")
            }
        }
    }
}

extension JSONValue {
    fileprivate var boolValue: Bool? { if case .bool(let value) = self { return value } else { return nil } }
    fileprivate var objectValue: [(String, JSONValue)]? {
        if case .object(let pairs) = self { return pairs } else { return nil }
    }
}
