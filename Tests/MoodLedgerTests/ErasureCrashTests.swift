import EventLog
import Foundation
import Platform
import Synchronization
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// A ``PlatformIO`` that "crashes" at one of its calls that change the disk: it copies the ledger's directory as it
/// is at that moment — what a process killed there leaves, since its page cache survives it — and from then on
/// refuses every call that would change the disk, so the running command changes nothing more. A write can also be
/// cut in half first (a record torn by the crash).
final class CrashingIO: PlatformIO, @unchecked Sendable {  // every variable is under `state`
    struct State {
        var armed = false
        var calls = 0
        var crashAt: Int?
        var tearWrite = false
        var crashed = false
        var steps: [String] = []
    }
    let state = Mutex(State())
    let system = SystemIO()
    let directory: String
    let image: String

    init(directory: String, image: String) {
        self.directory = directory
        self.image = image
    }

    /// Counts one call that changes the disk; `true` when it must not happen (the crash is now, or was before).
    private func step(_ name: String, torn: (() throws -> Void)? = nil) throws {
        let crashNow = state.withLock { state -> Bool? in
            if state.crashed { return nil }
            guard state.armed else { return false }
            defer { state.calls += 1 }
            state.steps.append(name)
            return state.calls == state.crashAt
        }
        guard let crashNow else { throw Errno.ioError }
        guard crashNow else { return }
        if state.withLock({ $0.tearWrite }), let torn { try torn() }
        try? FileManager.default.removeItem(atPath: image)
        try FileManager.default.copyItem(atPath: directory, toPath: image)
        state.withLock { $0.crashed = true }
        throw Errno.ioError
    }

    func open(_ path: String, _ mode: OpenMode) throws -> Int32 {
        if mode != .readOnly, !system.exists(path) { try step("create \(path.split(separator: "/").last ?? "")") }
        return try system.open(path, mode)
    }
    func close(_ fd: Int32) { system.close(fd) }
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        try system.read(fd, into: buffer, at: offset)
    }
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        try step("write \(bytes.count) at \(offset)") {
            try self.system.write(fd, UnsafeRawBufferPointer(rebasing: bytes[0..<(bytes.count / 2)]), at: offset)
        }
        try system.write(fd, bytes, at: offset)
    }
    func syncData(_ fd: Int32) throws {
        try step("sync")
        try system.syncData(fd)
    }
    func syncDirectory(_ path: String) throws {
        try step("sync directory")
        try system.syncDirectory(path)
    }
    func truncate(_ fd: Int32, to size: Int64) throws {
        try step("truncate")
        try system.truncate(fd, to: size)
    }
    func size(_ fd: Int32) throws -> Int64 { try system.size(fd) }
    func tryLock(_ fd: Int32) throws -> Bool { try system.tryLock(fd) }
    func unlock(_ fd: Int32) { system.unlock(fd) }
    func rename(_ from: String, _ to: String) throws {
        try step("rename to \(to.split(separator: "/").last ?? "")")
        try system.rename(from, to)
    }
    func remove(_ path: String) throws {
        try step("remove \(path.split(separator: "/").last ?? "")")
        try system.remove(path)
    }
    func removeDirectory(_ path: String) throws {
        try step("remove directory")
        try system.removeDirectory(path)
    }
    func makeDirectory(_ path: String) throws -> Bool {
        if !system.exists(path) { try step("make directory") }
        return try system.makeDirectory(path)
    }
    func isDirectoryNotLink(_ path: String) -> Bool { system.isDirectoryNotLink(path) }
    func exists(_ path: String) -> Bool { system.exists(path) }
    func contents(ofDirectory path: String) throws -> [String] { try system.contents(ofDirectory: path) }
    func randomBytes(_ count: Int) -> [UInt8] { system.randomBytes(count) }
    func nowMicroseconds() -> Int64 { system.nowMicroseconds() }
    func processID() -> Int32 { system.processID() }
    func sleep(milliseconds: Int) { system.sleep(milliseconds: milliseconds) }
    func map(_ fd: Int32, length: Int) throws -> MappedFile { try system.map(fd, length: length) }
    func identity(_ fd: Int32) throws -> FileIdentity { try system.identity(fd) }
    func status(ofPath path: String) -> FileStatus? { system.status(ofPath: path) }
}

@Suite("An in-place erasure cut by a crash at every step")
struct ErasureCrashTests {
    /// A ledger with snapshots that hold the secret entry, ready for `erase` through `io`; the seq of the secret
    /// entry's creation.
    private func prepared(_ dir: TemporaryDirectory, io: CrashingIO) throws -> (Ledger, EntryID, [String], UInt64) {
        let clock = ManualClock()
        var options = ledgerOptions(clock: clock, snapshotInterval: 15)
        options.io = io
        let ledger = try Ledger.open(at: dir.sub("ledger"), options: options)
        for i in 0..<40 { _ = try ledger.log(MoodDraft(valence: 0.1, labels: ["calm"], notes: "before \(i)")) }
        let (secret, needles) = try ErasureTests.populate(ledger)
        let created = try #require(try ledger.history(of: secret).first?.event.seq)
        for i in 0..<20 { _ = try ledger.log(MoodDraft(valence: 0.2, notes: "after \(i)")) }
        _ = try ledger.snapshot()
        #expect(!ErasureTests.containing(needles, in: dir.sub("ledger")).isEmpty, "snapshots hold the secret")
        return (ledger, secret, needles, created)
    }

    /// Erases the secret with a crash at call `crashAt` (`nil`: no crash, to count the calls); the steps seen. The
    /// snapshots as they were before the erasure are copied to `keepSnapshots` if given.
    private func run(
        crashAt: Int?, tear: Bool, in dir: TemporaryDirectory, keepSnapshots: String? = nil
    ) throws -> (
        steps: [String], secret: EntryID, needles: [String], points: [UInt64], crashed: Bool
    ) {
        let io = CrashingIO(directory: dir.sub("ledger"), image: dir.sub("image"))
        let (ledger, secret, needles, created) = try prepared(dir, io: io)
        let points = [created, (created + ledger.lastSeq) / 2, ledger.lastSeq]
        if let keepSnapshots {
            try FileManager.default.copyItem(atPath: dir.sub("ledger/snapshots"), toPath: keepSnapshots)
        }
        io.state.withLock {
            $0.armed = true
            $0.crashAt = crashAt
            $0.tearWrite = tear
        }
        _ = try? ledger.erase([secret], ignoringDestinations: true)
        io.state.withLock { $0.armed = false }
        ledger.close()
        let (steps, crashed) = io.state.withLock { ($0.steps, $0.crashed) }
        return (steps, secret, needles, points, crashed)
    }

    /// What every crash image must satisfy once opened: first read-only, as `moodledger list --at POINT` opens it,
    /// then writable; it verifies; once the erasure is recorded, no file holds the secret — checked right after the
    /// open, before a close could write a snapshot — and time travel to any point before it shows nothing of it.
    private func check(image: String, secret: EntryID, needles: [String], points: [UInt64], label: String) throws {
        var readOnly = Ledger.Options()
        readOnly.readOnly = true
        let reader = try Ledger.open(at: image, options: readOnly)
        let erased = reader.entry(secret) == nil
        let earlier = try points.map { try reader.state(at: .seq($0)).entries[secret] }
        let holding = ErasureTests.containing(needles, in: image)
        reader.close()
        if erased {
            #expect(earlier.allSatisfy { $0 == nil }, "\(label): time travel shows erased data")
            #expect(holding.isEmpty, "\(label): \(holding)")
        } else {
            #expect(earlier.allSatisfy { $0 != nil }, "\(label): a crash before the erasure was recorded keeps it")
        }
        let writer = try Ledger.open(at: image)
        #expect((writer.entry(secret) == nil) == erased, "\(label): the writer's open agrees")
        if erased {
            #expect(try points.allSatisfy { try writer.state(at: .seq($0)).entries[secret] == nil }, "\(label)")
            #expect(ErasureTests.containing(needles, in: image).isEmpty, "\(label): after the writer's open")
        }
        writer.close()
        #expect(try Ledger.verify(at: image).ok, "\(label): verify")
    }

    @Test("A crash before each call that changes the disk, and inside each write: no file keeps the erased data")
    func crashAtEveryStep() throws {
        let dry = TemporaryDirectory("erase-crash-dry")
        let plan = try run(crashAt: nil, tear: false, in: dry)
        #expect(plan.steps.contains { $0.hasPrefix("rename to events.log.redo") }, "an in-place erasure: \(plan.steps)")
        #expect(plan.steps.contains { $0.hasPrefix("remove snapshot-") }, "snapshots removed: \(plan.steps)")
        print("erasure steps: \(plan.steps.joined(separator: ", "))")
        for index in plan.steps.indices {
            for tear in plan.steps[index].hasPrefix("write") ? [false, true] : [false] {
                let dir = TemporaryDirectory("erase-crash")
                let run = try self.run(crashAt: index, tear: tear, in: dir)
                try #require(run.crashed, "step \(index) was reached")
                try check(
                    image: dir.sub("image"), secret: run.secret, needles: run.needles, points: run.points,
                    label: "crash at \(index) (\(plan.steps[index]))\(tear ? ", torn" : "")")
            }
        }
    }

    @Test("A journal beside snapshots that still hold its records (left by an order that removed them later)")
    func journalBesideStaleSnapshots() throws {
        let dry = TemporaryDirectory("erase-crash-dry")
        let plan = try run(crashAt: nil, tear: false, in: dry)
        let rename = try #require(plan.steps.firstIndex { $0.hasPrefix("rename to events.log.redo") })
        let dir = TemporaryDirectory("erase-crash-stale")
        // The crash comes after the journal's rename and its directory sync, before any record is written.
        let run = try self.run(crashAt: rename + 2, tear: false, in: dir, keepSnapshots: dir.sub("kept"))
        let image = dir.sub("image")
        #expect(FileManager.default.fileExists(atPath: image + "/events.log.redo"))
        // Put back every snapshot of this ledger the erasure removed, as an erasure that removed them after the
        // journal's rename would have left them: no open may read them or keep them.
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.sub("kept"))
        where !FileManager.default.fileExists(atPath: image + "/snapshots/" + name) {
            try FileManager.default.copyItem(atPath: dir.sub("kept/" + name), toPath: image + "/snapshots/" + name)
        }
        #expect(!ErasureTests.containing(run.needles, in: image).isEmpty, "the stale snapshots hold the secret")
        try check(image: image, secret: run.secret, needles: run.needles, points: run.points, label: "stale snapshots")
    }
}
