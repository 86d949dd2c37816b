import Foundation
import Platform
import Synchronization
import TestSupport
import Testing

@testable import EventLog
@testable import EventLogFormat

/// `redactInPlace` (`Specs/log-format.md`, *Redacting in place*): records change where they are, through a redo
/// journal that an open finishes after a crash at any point, and that is refused when it does not fit the log.
@Suite("Redacting records in place")
struct RedactInPlaceTests {
    /// Every third record's payload replaced by zeros of the same length.
    static func zeroed(_ view: RecordView) -> [UInt8]? {
        view.seq % 3 == 0 ? [UInt8](repeating: 0, count: view.payload.count) : nil
    }

    /// The payloads the log should hold after ``zeroed(_:)`` ran over `payloads`.
    static func expected(_ payloads: [[UInt8]]) -> [[UInt8]] {
        payloads.enumerated().map { index, payload in
            (index + 1) % 3 == 0 ? [UInt8](repeating: 0, count: payload.count) : payload
        }
    }

    @Test("Only the chosen records change; offsets, seqs and the file stay; the journal is gone; verify passes")
    func redacts() throws {
        let dir = TemporaryDirectory()
        let payloads = try makeLog(at: dir.path, count: 20, payloadSize: { 8 + $0 })
        let (log, _) = try readPayloads(dir.path)
        let before = try log.records()
        let identity = try SystemIO().identity(SystemIO().open(dir.sub("events.log"), .readOnly))
        var first: UInt64?
        let report = try #require(try log.redactInPlace(Self.zeroed, beforeWriting: { first = $0 }))
        #expect(report.recordsRewritten == 6 && first == 3)
        let after = try log.records()
        #expect(after.map(\.offset) == before.map(\.offset) && after.map(\.seq) == before.map(\.seq))
        #expect(after.map(\.payload) == Self.expected(payloads))
        #expect(try log.append(type: 1, payload: [1, 2, 3]) == 21, "appends go on")
        log.close()
        #expect(!FileManager.default.fileExists(atPath: dir.sub(EventLog.redoFileName)))
        #expect(SystemIO().identity(ofPath: dir.sub("events.log")) == identity, "the same file, not a copy")
        let (reopened, read) = try readPayloads(dir.path)
        #expect(read == Self.expected(payloads) + [[1, 2, 3]])
        #expect(reopened.recoveryNotice == nil)
        reopened.close()
    }

    @Test("A payload of another length is refused and nothing is written")
    func lengthKept() throws {
        let dir = TemporaryDirectory()
        let payloads = try makeLog(at: dir.path, count: 4)
        let (log, _) = try readPayloads(dir.path)
        #expect(throws: EventLogError.self) { try log.redactInPlace({ _ in [1] }) }
        #expect(try log.records().map(\.payload) == payloads)
        log.close()
    }

    @Test("Past the byte budget nothing is written and the caller is told to rewrite")
    func budget() throws {
        let dir = TemporaryDirectory()
        let payloads = try makeLog(at: dir.path, count: 50, payloadSize: { _ in 100 })
        let (log, _) = try readPayloads(dir.path)
        #expect(try log.redactInPlace(maximumBytes: 1000, { [UInt8](repeating: 0, count: $0.payload.count) }) == nil)
        #expect(try log.records().map(\.payload) == payloads)
        log.close()
    }

    /// The journal a redaction of ``zeroed(_:)`` writes, built as the log would, and the log's bytes.
    static func journal(_ dir: TemporaryDirectory) throws -> (journal: [UInt8], payloads: [[UInt8]]) {
        let payloads = try makeLog(at: dir.path, count: 12, payloadSize: { 10 + $0 })
        let (log, _) = try readPayloads(dir.path)
        defer { log.close() }
        var patches: [(offset: Int64, bytes: [UInt8])] = []
        try log.forEach(from: 1) { view in
            if let payload = zeroed(view) {
                patches.append(
                    (
                        view.offset,
                        LogFormat.encodeRecord(
                            seq: view.seq, type: view.type, recordedAt: view.recordedAt, payload: payload)
                    ))
            }
            return true
        }
        return (EventLog.encodeRedo(fileID: log.fileID, patches), payloads)
    }

    @Test(
        "A crash after the journal was durable, at any byte of the records' writing: the next open writes them whole",
        arguments: [0, 1, 7, 40])
    func crashMidWrite(tornBytes: Int) throws {
        let dir = TemporaryDirectory()
        let (journal, payloads) = try Self.journal(dir)
        Bytes.write(journal, to: dir.sub(EventLog.redoFileName))
        // The first patched record half written, as a crash would leave it.
        var log = Bytes.read(dir.sub("events.log"))
        let patches = try EventLog.decodeRedo(
            journal, fileID: Array(log[16..<32]), maxPayload: 1 << 20, logSize: Int64(log.count), path: "j")
        let first = patches[0]
        for index in 0..<min(tornBytes, first.bytes.count) { log[Int(first.offset) + index] = first.bytes[index] }
        Bytes.write(log, to: dir.sub("events.log"))
        let (reopened, read) = try readPayloads(dir.path)
        #expect(read == Self.expected(payloads))
        reopened.close()
        #expect(!FileManager.default.fileExists(atPath: dir.sub(EventLog.redoFileName)))
    }

    @Test("A walk that meets a record this process is redacting in place, half written, reads it again once done")
    func walkDuringRedaction() throws {
        let dir = TemporaryDirectory()
        // Records of 400 KB: the walk's first 1 MiB read holds records 1 and 2, and record 3 is read afresh.
        let size = 400_000
        let payloads = try makeLog(at: dir.path, count: 6, payloadSize: { _ in size })
        let io = FaultInjectingIO()
        var configuration = EventLog.Configuration()
        configuration.io = io
        let log = try EventLog.open(directory: dir.path, configuration: configuration)
        defer { log.close() }
        let atTwo = DispatchSemaphore(value: 0)
        let halfWritten = DispatchSemaphore(value: 0)
        let resume = DispatchSemaphore(value: 0)
        io.plan.withLock {
            $0.halfWriteOfBytes = LogFormat.recordHeaderSize + size
            $0.pausedWrite = {
                halfWritten.signal()
                resume.wait()
            }
        }
        // The walk reaches record 2, the redaction writes half of record 3 and pauses, the walk reads record 3 half
        // written and waits for the redaction (its lock), which then finishes; the walk reads record 3 again.
        let walked = Mutex<Result<[[UInt8]], any Error>?>(nil)
        Thread {
            let result = Result {
                var read: [[UInt8]] = []
                try log.forEach(from: 1) { view in
                    if view.seq == 2 {
                        atTwo.signal()
                        halfWritten.wait()
                    }
                    read.append(Array(view.payload))
                    return true
                }
                return read
            }
            walked.withLock { $0 = result }
        }.start()
        atTwo.wait()
        Thread { _ = try? log.redactInPlace(Self.zeroed) }.start()
        Thread.sleep(forTimeInterval: 0.3)
        resume.signal()
        waitUntil(seconds: 20) { walked.withLock { $0 } != nil }
        let read = try #require(try walked.withLock { $0 }?.get())
        #expect(read.count == 6)
        #expect(read.dropFirst(2) == Self.expected(payloads).dropFirst(2), "the records from 3 on, redacted, whole")
    }

    /// A log whose journal is durable and whose first patched record is half written, as a crash leaves it.
    static func interrupted(_ dir: TemporaryDirectory) throws -> (journal: [UInt8], payloads: [[UInt8]]) {
        let (journal, payloads) = try Self.journal(dir)
        Bytes.write(journal, to: dir.sub(EventLog.redoFileName))
        var log = Bytes.read(dir.sub("events.log"))
        let first = try EventLog.decodeRedo(
            journal, fileID: Array(log[16..<32]), maxPayload: 1 << 20, logSize: Int64(log.count), path: "j")[0]
        for index in 0..<20 { log[Int(first.offset) + index] = first.bytes[index] }
        Bytes.write(log, to: dir.sub("events.log"))
        return (journal, payloads)
    }

    @Test("verify of an interrupted redaction: no damage, the unfinished redaction named; nothing changed")
    func verifyInterrupted() throws {
        let dir = TemporaryDirectory()
        _ = try Self.interrupted(dir)
        let before = Bytes.read(dir.sub("events.log"))
        let report = try EventLog.verify(directory: dir.path)
        #expect(report.ok, "\(report.problems)")
        #expect(report.unfinishedRedaction?.problem.contains("4 record(s)") == true, "\(report)")
        #expect(report.unfinishedRedaction?.seq == 3)
        #expect(Bytes.read(dir.sub("events.log")) == before)
        #expect(FileManager.default.fileExists(atPath: dir.sub(EventLog.redoFileName)))
    }

    @Test("repair writes a journal that fits before it looks (nothing to repair); one that does not is kept aside")
    func repairAndJournal() throws {
        let dir = TemporaryDirectory()
        let (_, payloads) = try Self.interrupted(dir)
        let report = try EventLog.repair(directory: dir.path, mode: .salvage)
        #expect(report.backupPath == nil && report.problems.isEmpty && report.lostSeqs.isEmpty)
        #expect(try readPayloads(dir.path).1 == Self.expected(payloads))

        let other = TemporaryDirectory()
        var (journal, _) = try Self.journal(other)
        journal[8] ^= 0xFF
        journal.removeLast(4)
        journal.appendLittleEndian(CRC32C.mask(CRC32C.checksum(journal)))
        Bytes.write(journal, to: other.sub(EventLog.redoFileName))
        // 0600, as the writer makes every journal.
        try FileManager.default.setAttributes(
            [.posixPermissions: 0o600], ofItemAtPath: other.sub(EventLog.redoFileName))
        let refused = try EventLog.repair(directory: other.path, mode: .salvage)
        #expect(refused.problems.first?.problem.contains("kept as") == true, "\(refused.problems)")
        #expect(!FileManager.default.fileExists(atPath: other.sub(EventLog.redoFileName)))
        let names = try FileManager.default.contentsOfDirectory(atPath: other.path)
        let aside = try #require(names.first { $0.hasPrefix(EventLog.redoFileName + ".broken-") })
        #expect(
            try FileManager.default.attributesOfItem(atPath: other.sub(aside))[.posixPermissions] as? Int == 0o600,
            "kept aside 0600, like every file of a ledger directory")
        let reopened = try EventLog.open(directory: other.path)
        #expect(try reopened.records().count == 12, "the log itself opens again")
        reopened.close()
    }

    @Test("A reader that finds a journal and a free writer lock finishes it, and reads the redacted records")
    func readerFinishes() throws {
        let dir = TemporaryDirectory()
        let (journal, payloads) = try Self.journal(dir)
        Bytes.write(journal, to: dir.sub(EventLog.redoFileName))
        let (reader, read) = try readPayloads(dir.path, access: .readOnly)
        #expect(read == Self.expected(payloads))
        reader.close()
        #expect(!FileManager.default.fileExists(atPath: dir.sub(EventLog.redoFileName)))
    }

    @Test("A reader waits while a writer holds the lock and the journal is there, then reads the redacted records")
    func readerWaits() throws {
        let dir = TemporaryDirectory()
        let (journal, payloads) = try Self.journal(dir)
        let writer = try EventLog.open(directory: dir.path)
        Bytes.write(journal, to: dir.sub(EventLog.redoFileName))
        // The writer's own redaction of the same records finishes the work while the reader waits.
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) {
            _ = try? writer.redactInPlace(Self.zeroed)
            writer.close()
            done.signal()
        }
        var configuration = EventLog.Configuration()
        configuration.access = .readOnly
        configuration.lockWaitMilliseconds = 5000
        let reader = try EventLog.open(directory: dir.path, configuration: configuration)
        #expect(try reader.records().map(\.payload) == Self.expected(payloads))
        reader.close()
        done.wait()
    }

    @Test("A journal whose record headers disagree with the log's: verify and the open give one verdict, damage")
    func verifyAgreesWithOpen() throws {
        let dir = TemporaryDirectory()
        _ = try makeLog(at: dir.path, count: 12, payloadSize: { 10 + $0 })
        let (log, _) = try readPayloads(dir.path)
        var patches: [(offset: Int64, bytes: [UInt8])] = []
        try log.forEach(from: 1) { view in
            if let payload = Self.zeroed(view) {
                // A whole, valid record — but its recorded_at is not the one of the record at its offset.
                patches.append(
                    (
                        view.offset,
                        LogFormat.encodeRecord(
                            seq: view.seq, type: view.type, recordedAt: view.recordedAt + 1, payload: payload)
                    ))
            }
            return true
        }
        let fileID = log.fileID
        log.close()
        Bytes.write(EventLog.encodeRedo(fileID: fileID, patches), to: dir.sub(EventLog.redoFileName))
        let original = Bytes.read(dir.sub("events.log"))
        let report = try EventLog.verify(directory: dir.path)
        #expect(!report.ok && report.unfinishedRedaction == nil, "\(report)")
        #expect(report.problems.contains { $0.problem.contains("not the record at its offset") }, "\(report.problems)")
        #expect {
            try EventLog.open(directory: dir.path)
        } throws: { error in
            (error as? EventLogError)?.code == .corrupted && "\(error)".contains("not the record at its offset")
        }
        #expect(Bytes.read(dir.sub("events.log")) == original)
    }

    @Test("A journal that does not fit the log is refused as damage, naming it; the log is untouched")
    func foreignJournal() throws {
        let dir = TemporaryDirectory()
        var (journal, _) = try Self.journal(dir)
        let original = Bytes.read(dir.sub("events.log"))
        // Another file's id (the checksum made to match, as a journal of another log would have it).
        journal[8] ^= 0xFF
        journal.removeLast(4)
        journal.appendLittleEndian(CRC32C.mask(CRC32C.checksum(journal)))
        Bytes.write(journal, to: dir.sub(EventLog.redoFileName))
        #expect {
            try EventLog.open(directory: dir.path)
        } throws: { error in
            (error as? EventLogError)?.code == .corrupted
                && "\(error)".contains(EventLog.redoFileName) && "\(error)".contains("another log file")
        }
        #expect(Bytes.read(dir.sub("events.log")) == original)
        // A flipped byte in a patch fails the journal's checksum.
        var flipped = try Self.journal(TemporaryDirectory()).journal
        flipped[60] ^= 1
        Bytes.write(flipped, to: dir.sub(EventLog.redoFileName))
        #expect(throws: EventLogError.self) { try EventLog.open(directory: dir.path) }
    }
}

extension Array where Element == UInt8 {
    fileprivate mutating func appendLittleEndian(_ value: UInt32) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}
