import EventLog
import Foundation
import Platform
import TestSupport
import Testing

@testable import MoodInterchange
@testable import MoodLedger
@testable import MoodModel

/// The libFuzzer corpora kept in the repository (`Tests/Fuzz/Seeds`, and every crash found, once fixed, in
/// `Tests/Fuzz/Regressions`) replayed through the harnesses' checks on every `swift test`.
@Suite("Fuzz corpora replayed")
struct FuzzCorpusTests {
    static func inputs(_ target: String) -> [(String, [UInt8])] {
        var found: [(String, [UInt8])] = []
        for folder in ["Seeds", "Regressions"] {
            let dir = Repository.root + "/Tests/Fuzz/\(folder)/\(target)"
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted()
            where name != ".keep" {
                found.append(("\(folder)/\(target)/\(name)", Bytes.read(dir + "/" + name)))
            }
        }
        return found
    }

    @Test("Event codec: nothing traps; whatever decodes re-encodes to the same event")
    func codec() throws {
        let inputs = Self.inputs("codec")
        #expect(!inputs.isEmpty)
        for (name, bytes) in inputs where bytes.count >= 2 {
            let type = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
            let payload = Array(bytes[2...])
            guard
                let (command, event) = try? payload.withUnsafeBytes({ try EventCodec.decode(type: type, payload: $0) })
            else {
                continue
            }
            let again = EventCodec.encode(event, commandID: command)
            let decoded = try again.withUnsafeBytes { try EventCodec.decode(type: type, payload: $0) }
            #expect(decoded.event == event && decoded.commandID == command, "\(name)")
        }
    }

    @Test("Snapshot files: nothing traps when every row, day and aggregate is read")
    func snapshot() throws {
        let dir = TemporaryDirectory("fuzz-snapshot")
        #expect(!Self.inputs("snapshot").isEmpty, "the snapshot corpus is there")
        for (_, bytes) in Self.inputs("snapshot") {
            let store = SnapshotStore(ledgerDirectory: dir.path, io: SystemIO())
            try? FileManager.default.createDirectory(atPath: store.directory, withIntermediateDirectories: true)
            let seq = SnapshotStore.claimedSeq(bytes)
            Bytes.write(bytes, to: store.path(for: seq))
            _ = store.loadAndReadAll(seq: seq)
            try? FileManager.default.removeItem(atPath: store.path(for: seq))
        }
    }

    @Test("CSV and JSON importers: nothing traps on the corpora")
    func importers() {
        #expect(!Self.inputs("csv").isEmpty && !Self.inputs("json").isEmpty, "the importer corpora are there")
        for (_, bytes) in Self.inputs("csv") {
            let text = String(decoding: bytes, as: UTF8.self)
            _ = try? Importer.plan(text, format: .daylio)
            _ = try? Importer.plan(text, format: .csv)
        }
        for (_, bytes) in Self.inputs("json") {
            let text = String(decoding: bytes, as: UTF8.self)
            for format in [ImportFormat.progress, .legacyMood, .moodAPI, .healthkit] {
                _ = try? Importer.plan(text, format: format)
            }
        }
    }

    @Test(
        "Log files: verify, open and salvage never trap; an open's visitor sees the log's records; a salvaged log verifies"
    )
    func logs() throws {
        #expect(!Self.inputs("log").isEmpty, "the log corpus is there")
        for (name, bytes) in Self.inputs("log") {
            let dir = TemporaryDirectory("fuzz-log")
            try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
            Bytes.write(bytes, to: dir.sub("events.log"))
            _ = try? EventLog.verify(directory: dir.path)
            // An open's visitor gets exactly the log's records, and past its last seq only a torn batch's.
            var readOnly = EventLog.Configuration()
            readOnly.access = .readOnly
            var visited: [(seq: UInt64, payload: [UInt8])] = []
            if let log = try? EventLog.open(
                directory: dir.path, configuration: readOnly, visiting: { visited.append(($0.seq, Array($0.payload))) })
            {
                let records = try log.records()
                #expect(visited.prefix { $0.seq <= log.lastSeq }.map(\.payload) == records.map(\.payload), "\(name)")
                #expect(visited.allSatisfy { $0.seq <= log.lastSeq } || log.recoveryNotice != nil, "\(name)")
                log.close()
            }
            if (try? EventLog.repair(directory: dir.path, mode: .salvage)) != nil {
                #expect(try EventLog.verify(directory: dir.path).ok, "\(name)")
            }
        }
    }
}
