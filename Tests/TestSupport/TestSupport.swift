import EventLog
import Foundation
import MoodLedger
import Platform
import Synchronization

/// A fresh temporary directory, removed when the value is dropped by the test's end (best effort).
public final class TemporaryDirectory: @unchecked Sendable {
    public let path: String
    public init(_ name: String = "eventlog") {
        let base = FileManager.default.temporaryDirectory.path
        path = base + "/\(name)-\(UUID().uuidString.prefix(8))"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// A path inside this directory.
    public func sub(_ name: String) -> String { path + "/" + name }
}

/// Paths of the repository, found from this source file.
public enum Repository {
    public static let root: String = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url.path
            }
        }
        fatalError("no Package.swift above \(#filePath)")
    }()

    /// An executable built beside the test bundle; for `moodledger`, the binary `MOODLEDGER_BINARY` names when set
    /// (CI runs the HTTPS tests against the release build, whose libcurl is opened on first use).
    public static func executable(_ name: String) -> String {
        if name == "moodledger", let chosen = ProcessInfo.processInfo.environment["MOODLEDGER_BINARY"], !chosen.isEmpty
        {
            return chosen
        }
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for dir in [beside.path, beside.deletingLastPathComponent().path, root + "/.build/debug"] {
            let candidate = dir + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        fatalError("cannot find the executable \(name) near \(beside.path)")
    }

    /// Whether golden files should be re-recorded instead of compared.
    public static var recordGolden: Bool { ProcessInfo.processInfo.environment["MOODLEDGER_RECORD_GOLDEN"] == "1" }
}

/// Seeded randomness (SplitMix64), so failures can be replayed from the printed seed.
public struct SeededRandom: RandomNumberGenerator {
    private var generator: SplitMix64
    public let seed: UInt64
    public init(seed: UInt64? = nil, test: String = #function) {
        let env = ProcessInfo.processInfo.environment["MOODLEDGER_SEED"].flatMap { UInt64($0) }
        self.seed = seed ?? env ?? UInt64.random(in: 1...UInt64.max)
        generator = SplitMix64(seed: self.seed)
        print("[\(test)] seed \(self.seed) (set MOODLEDGER_SEED to replay)")
    }
    public mutating func next() -> UInt64 { generator.next() }
}

/// A ``PlatformIO`` that passes calls to the system and injects faults on demand.
public final class FaultInjectingIO: PlatformIO, @unchecked Sendable {
    public struct Plan: Sendable {
        /// Fail the next `syncData` with this error.
        public var failNextSync: Errno?
        /// Fail the next data `write` with this error after writing `bytesBeforeFailure` bytes.
        public var failNextWrite: Errno?
        public var bytesBeforeFailure = 0
        /// Deterministic "random" bytes (the file id), if set.
        public var fixedRandom: [UInt8]?
        public var fixedClock: Int64?
        public var syncs = 0
        public var writes = 0
        /// Let this many writes / syncs through before `failNextWrite` / `failNextSync` fires.
        public var writesBeforeFailure = 0
        public var syncsBeforeFailure = 0
        /// Fail the next `rename` / `syncDirectory` with this error.
        public var failNextRename: Errno?
        public var failNextDirectorySync: Errno?
        /// The next `write` of exactly this many bytes writes its first half, calls ``pausedWrite``, then the rest: a
        /// record caught half written (by a crash, or by a reader).
        public var halfWriteOfBytes: Int?
        /// Called between the two halves of that write.
        public var pausedWrite: (@Sendable () -> Void)?
        /// Fail the next `map` with this error (no address space, a file that cannot be mapped).
        public var failNextMap: Errno?
        /// Make every `syncData` take at least this long (a slow disk).
        public var syncDelayMicroseconds: UInt32 = 0
        /// Called (once) by the next `syncData`, before it syncs: a sync caught under way.
        public var pausedSync: (@Sendable () -> Void)?
    }
    public let plan = Mutex(Plan())
    public init() {}
    public let system = SystemIO()

    /// Descriptors of `LOCK` files: their writes (the writer's pid and clean/dirty line, around each write when
    /// processes write in turn) are never faulted or counted, so a plan names the log's and the files' own writes.
    private let lockFiles = Mutex<Set<Int32>>([])
    public func open(_ path: String, _ mode: OpenMode) throws -> Int32 {
        let fd = try system.open(path, mode)
        if path.hasSuffix("/LOCK") { lockFiles.withLock { _ = $0.insert(fd) } }
        return fd
    }
    public func close(_ fd: Int32) {
        lockFiles.withLock { _ = $0.remove(fd) }
        system.close(fd)
    }
    public func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        try system.read(fd, into: buffer, at: offset)
    }
    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        if lockFiles.withLock({ $0.contains(fd) }) { return try system.write(fd, bytes, at: offset) }
        let failure: (Errno, Int)? = plan.withLock { plan in
            plan.writes += 1
            guard let error = plan.failNextWrite else { return nil }
            if plan.writesBeforeFailure > 0 {
                plan.writesBeforeFailure -= 1
                return nil
            }
            plan.failNextWrite = nil
            return (error, plan.bytesBeforeFailure)
        }
        if let (error, partial) = failure {
            if partial > 0 {
                try system.write(fd, UnsafeRawBufferPointer(rebasing: bytes[0..<min(partial, bytes.count)]), at: offset)
            }
            throw error
        }
        let pause = plan.withLock { plan -> (@Sendable () -> Void)? in
            guard plan.halfWriteOfBytes == bytes.count else { return nil }
            plan.halfWriteOfBytes = nil
            return plan.pausedWrite
        }
        if let pause {
            let half = bytes.count / 2
            try system.write(fd, UnsafeRawBufferPointer(rebasing: bytes[0..<half]), at: offset)
            pause()
            try system.write(fd, UnsafeRawBufferPointer(rebasing: bytes[half...]), at: offset + Int64(half))
            return
        }
        try system.write(fd, bytes, at: offset)
    }
    public func syncData(_ fd: Int32) throws {
        let failure: Errno? = plan.withLock { plan in
            plan.syncs += 1
            guard plan.failNextSync != nil else { return nil }
            if plan.syncsBeforeFailure > 0 {
                plan.syncsBeforeFailure -= 1
                return nil
            }
            defer { plan.failNextSync = nil }
            return plan.failNextSync
        }
        if let failure { throw failure }
        if let pause = plan.withLock({ plan -> (@Sendable () -> Void)? in
            defer { plan.pausedSync = nil }
            return plan.pausedSync
        }) {
            pause()
        }
        let delay = plan.withLock { $0.syncDelayMicroseconds }
        if delay > 0 { usleep(delay) }
        try system.syncData(fd)
    }
    public func syncDirectory(_ path: String) throws {
        if let failure = plan.withLock({ plan -> Errno? in
            defer { plan.failNextDirectorySync = nil }; return plan.failNextDirectorySync
        }) {
            throw failure
        }
        try system.syncDirectory(path)
    }
    public func truncate(_ fd: Int32, to size: Int64) throws { try system.truncate(fd, to: size) }
    public func isDirectoryNotLink(_ path: String) -> Bool { system.isDirectoryNotLink(path) }
    public func map(_ fd: Int32, length: Int) throws -> MappedFile {
        if let failure = plan.withLock({ plan -> Errno? in
            defer { plan.failNextMap = nil }; return plan.failNextMap
        }) {
            throw failure
        }
        return try system.map(fd, length: length)
    }
    public func identity(_ fd: Int32) throws -> FileIdentity { try system.identity(fd) }
    public func status(ofPath path: String) -> FileStatus? { system.status(ofPath: path) }
    public func size(_ fd: Int32) throws -> Int64 { try system.size(fd) }
    public func tryLock(_ fd: Int32) throws -> Bool { try system.tryLock(fd) }
    public func unlock(_ fd: Int32) { system.unlock(fd) }
    public func rename(_ from: String, _ to: String) throws {
        if let failure = plan.withLock({ plan -> Errno? in
            defer { plan.failNextRename = nil }; return plan.failNextRename
        }) {
            throw failure
        }
        try system.rename(from, to)
    }
    public func remove(_ path: String) throws { try system.remove(path) }
    public func makeDirectory(_ path: String) throws -> Bool { try system.makeDirectory(path) }
    public func removeDirectory(_ path: String) throws { try system.removeDirectory(path) }
    public func exists(_ path: String) -> Bool { system.exists(path) }
    public func contents(ofDirectory path: String) throws -> [String] { try system.contents(ofDirectory: path) }
    public func randomBytes(_ count: Int) -> [UInt8] {
        plan.withLock { $0.fixedRandom }.map { Array($0.prefix(count)) } ?? system.randomBytes(count)
    }
    public func nowMicroseconds() -> Int64 { plan.withLock { $0.fixedClock } ?? system.nowMicroseconds() }
    public func processID() -> Int32 { system.processID() }
    public func sleep(milliseconds: Int) { system.sleep(milliseconds: milliseconds) }
}

/// Byte-level helpers for damaging files.
public enum Bytes {
    public static func read(_ path: String) -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path)!) }
    public static func write(_ bytes: [UInt8], to path: String) {
        try! Data(bytes).write(to: URL(fileURLWithPath: path))
    }
    /// A little-endian UInt64 from the first 8 bytes.
    public static func u64(_ bytes: [UInt8]) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[$1]) << (8 * UInt64($1)) }
    }
    public static func hex(_ bytes: [UInt8]) -> String {
        stride(from: 0, to: bytes.count, by: 16).map { start in
            bytes[start..<min(start + 16, bytes.count)].map { String(format: "%02x", $0) }.joined(separator: " ")
        }.joined(separator: "\n") + "\n"
    }
    public static func unhex(_ text: String) -> [UInt8] {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { UInt8($0, radix: 16)! }
    }
}

/// Writes a log with `count` records whose payloads are derived from their index, and returns the payloads.
@discardableResult
public func makeLog(
    at directory: String, count: Int, payloadSize: (Int) -> Int = { 5 + ($0 * 7) % 40 },
    configuration: EventLog.Configuration = .init()
) throws -> [[UInt8]] {
    var configuration = configuration
    configuration.lockWaitMilliseconds = 2000
    let log = try EventLog.open(directory: directory, configuration: configuration)
    defer { log.close() }
    var payloads: [[UInt8]] = []
    for i in 0..<count {
        let payload = (0..<payloadSize(i)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }
        payloads.append(payload)
        try log.append(type: UInt16(1 + i % 3), payload: payload)
    }
    return payloads
}

/// The payloads of every record in the log (opening it with the given configuration).
public func readPayloads(_ directory: String, access: EventLog.Access = .readWrite) throws -> (EventLog, [[UInt8]]) {
    var configuration = EventLog.Configuration()
    configuration.access = access
    configuration.createIfMissing = false
    // Other tests spawn child processes; for a moment after fork a child holds inherited lock descriptors.
    configuration.lockWaitMilliseconds = 2000
    let log = try EventLog.open(directory: directory, configuration: configuration)
    return (log, try log.records().map(\.payload))
}

/// The tests' one hand-moved clock, in milliseconds since 1970 (what `Ledger.Options.clock` and the server's
/// configuration take).
public final class ManualClock: Sendable {
    private let milliseconds: Mutex<Int64>
    /// A clock at `milliseconds` (default 2026-01-01T00:00:00Z).
    public init(milliseconds: Int64 = 1_767_225_600_000) { self.milliseconds = Mutex(milliseconds) }
    /// The time now.
    public var now: Int64 { milliseconds.withLock { $0 } }
    /// Moves the clock on by `ms`.
    public func advance(_ ms: Int64) { milliseconds.withLock { $0 += ms } }
    /// Moves the clock on by `ms` and returns the new time (a clock that ticks at every reading).
    public func tick(_ ms: Int64) -> Int64 {
        milliseconds.withLock {
            $0 += ms
            return $0
        }
    }
}

/// Waits until `condition` holds, looking every 5 ms, for at most `seconds`.
/// - Returns: whether it held (a caller expects it, so a condition that never comes fails the test, not hangs it).
@discardableResult
public func waitUntil(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        if try condition() { return true }
        if Date() >= deadline { return false }
        Thread.sleep(forTimeInterval: 0.005)
    }
}

extension Process {
    /// Waits until the process has exited, by Foundation's word or by the kernel's (a zombie, or no such process),
    /// for at most `seconds`: Foundation's exit monitor on Linux can miss a child's exit under load, and
    /// `waitUntilExit()` then never returns. For a process the test killed, whose status it does not read.
    /// - Returns: whether it is gone.
    @discardableResult
    public func waitUntilGone(seconds: Double = 120) -> Bool {
        let pid = processIdentifier
        return waitUntil(seconds: seconds) {
            guard isRunning else { return true }
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
            // The state is the field after the command's closing parenthesis: Z (zombie) or X (dead).
            guard let close = stat.lastIndex(of: ")") else { return false }
            let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
            return state == "Z" || state == "X"
        }
    }
}
