import EventLog
import Foundation
import Platform
import TestSupport
import Testing

@Suite("Injected I/O faults")
struct FaultTests {
    func open(_ dir: String, _ io: FaultInjectingIO, durability: EventLog.Durability = .always) throws -> EventLog {
        var configuration = EventLog.Configuration()
        configuration.io = io
        configuration.durability = durability
        configuration.lockWaitMilliseconds = 2000
        return try EventLog.open(directory: dir, configuration: configuration)
    }

    @Test(
        "EIO on fdatasync: no ack, failed state, appends refused, reopen recovers",
        arguments: [Errno.ioError, Errno.noSpace])
    func fsyncFailure(errno: Errno) throws {
        let dir = TemporaryDirectory()
        let io = FaultInjectingIO()
        let log = try open(dir.path, io)
        for i in 0..<5 { try log.append(type: 1, payload: [UInt8(i)]) }
        io.plan.withLock { $0.failNextSync = errno }
        #expect { try log.append(type: 1, payload: [99]) } throws: {
            ($0 as! EventLogError).code == .io && ($0 as! EventLogError).errno == errno
        }
        #expect(log.failure != nil)
        #expect(log.lastSeq == 5, "nothing acknowledged")
        // The failed sync is never retried: the next append is refused without touching the disk.
        let syncsBefore = io.plan.withLock { $0.syncs }
        #expect { try log.append(type: 1, payload: [100]) } throws: { ($0 as! EventLogError).code == .failedState }
        #expect { try log.sync() } throws: { ($0 as! EventLogError).code == .failedState }
        #expect(io.plan.withLock { $0.syncs } == syncsBefore)
        log.close()
        let (reopened, payloads) = try readPayloads(dir.path)
        #expect(payloads == (0..<5).map { [UInt8($0)] })
        #expect(try reopened.append(type: 1, payload: [6]) == 6)
        reopened.close()
    }

    @Test(
        "ENOSPC part-way through a write: no ack, failed state, reopen trims the partial record",
        arguments: [0, 1, 20, 33, 40])
    func shortWriteThenENOSPC(bytesWritten: Int) throws {
        let dir = TemporaryDirectory()
        let io = FaultInjectingIO()
        let log = try open(dir.path, io)
        try log.append(type: 1, payload: Array("kept".utf8))
        io.plan.withLock {
            $0.failNextWrite = .noSpace; $0.bytesBeforeFailure = bytesWritten
        }
        #expect {
            try log.append([
                PendingRecord(type: 1, payload: Array("lost one".utf8)),
                PendingRecord(type: 1, payload: Array("lost two".utf8))
            ])
        } throws: { ($0 as! EventLogError).errno == .noSpace }
        #expect(log.lastSeq == 1)
        #expect { try log.append(type: 1, payload: [1]) } throws: { ($0 as! EventLogError).code == .failedState }
        log.close()
        let (reopened, payloads) = try readPayloads(dir.path)
        #expect(payloads == [Array("kept".utf8)])
        reopened.close()
    }

    @Test("A batch is one write and one sync (group commit); batched durability syncs only on sync()")
    func groupCommit() throws {
        let dir = TemporaryDirectory()
        let io = FaultInjectingIO()
        let log = try open(dir.path, io)
        let before = io.plan.withLock { ($0.writes, $0.syncs) }
        let seqs = try log.append((0..<100).map { PendingRecord(type: 1, payload: [UInt8($0)]) })
        #expect(seqs == 1...100)
        #expect(io.plan.withLock { ($0.writes, $0.syncs) } == (before.0 + 1, before.1 + 1))
        log.close()

        let batched = try open(dir.path, io, durability: .batched)
        let syncs = io.plan.withLock { $0.syncs }
        for i in 0..<10 { try batched.append(type: 1, payload: [UInt8(i)]) }
        #expect(io.plan.withLock { $0.syncs } == syncs)
        #expect(batched.durableSeq == 100)
        #expect(try batched.sync() == 110)
        #expect(io.plan.withLock { $0.syncs } == syncs + 1)
        batched.close()
    }

    @Test("A failed sync in batched mode is not retried and acknowledges nothing more")
    func batchedSyncFailure() throws {
        let dir = TemporaryDirectory()
        let io = FaultInjectingIO()
        let log = try open(dir.path, io, durability: .batched)
        try log.append(type: 1, payload: [1])
        io.plan.withLock { $0.failNextSync = .ioError }
        #expect(throws: EventLogError.self) { try log.sync() }
        #expect(log.durableSeq == 0)
        #expect { try log.sync() } throws: { ($0 as! EventLogError).code == .failedState }
    }

    @Test("Open syncs only after a writer that may have left bytes undurable: LOCK says clean after a durable close")
    func syncOnOpenOnlyWhenDirty() throws {
        let dir = TemporaryDirectory()
        let lockPath = dir.path + "/LOCK"
        func lockText() -> String {
            String(decoding: FileManager.default.contents(atPath: lockPath) ?? Data(), as: UTF8.self)
        }
        func syncsDuringOpen(
            _ io: FaultInjectingIO, durability: EventLog.Durability = .always
        ) throws -> (EventLog, Int) {
            let before = io.plan.withLock { $0.syncs }
            let log = try open(dir.path, io, durability: durability)
            return (log, io.plan.withLock { $0.syncs } - before)
        }
        let pid = String(ProcessInfo.processInfo.processIdentifier)
        let padded = String(repeating: " ", count: 10 - pid.count) + pid

        // A new log, then a close with every append durable: clean.
        let io = FaultInjectingIO()
        var (log, _) = try syncsDuringOpen(io)
        try log.append(type: 1, payload: [1])
        #expect(lockText() == padded + "\ndirty\n", "marked dirty before the first write")
        log.close()
        #expect(lockText() == padded + "\nclean\n")

        // Reopened after a clean close: no sync; opening and reading alone write nothing to LOCK.
        let writesBefore = io.plan.withLock { $0.writes }
        var synced = 0
        (log, synced) = try syncsDuringOpen(io)
        #expect(synced == 0)
        #expect(io.plan.withLock { $0.writes } == writesBefore, "same pid, clean: LOCK untouched")
        log.close()
        #expect(lockText() == padded + "\nclean\n")

        // Batched appends closed without a sync: not everything is durable, so LOCK stays dirty and the next open syncs.
        (log, _) = try syncsDuringOpen(io, durability: .batched)
        try log.append(type: 1, payload: [2])
        log.close()
        #expect(lockText() == padded + "\ndirty\n")
        (log, synced) = try syncsDuringOpen(io)
        #expect(synced == 1)
        log.close()

        // A failed sync never leaves it clean.
        (log, _) = try syncsDuringOpen(io)
        io.plan.withLock { $0.failNextSync = .ioError }
        #expect(throws: EventLogError.self) { try log.append(type: 1, payload: [3]) }
        log.close()
        #expect(lockText() == padded + "\ndirty\n")
        (log, synced) = try syncsDuringOpen(io)
        #expect(synced == 1)
        log.close()

        // A writer that died with LOCK dirty (another pid), or an older LOCK of a pid alone: the open syncs and
        // writes its own pid, keeping the state.
        for old in ["     99999\ndirty\n", "12345\n"] {
            try Data(old.utf8).write(to: URL(fileURLWithPath: lockPath))
            (log, synced) = try syncsDuringOpen(io)
            #expect(synced == 1, "\(old)")
            #expect(lockText() == padded + "\ndirty\n")
            log.close()
            #expect(lockText() == padded + "\nclean\n", "opened and synced: everything is durable")
        }
        // Another pid's clean close: no sync; our pid is written, the state kept.
        try Data("     99999\nclean\n".utf8).write(to: URL(fileURLWithPath: lockPath))
        (log, synced) = try syncsDuringOpen(io)
        #expect(synced == 0)
        #expect(lockText() == padded + "\nclean\n")
        log.close()
    }
}
