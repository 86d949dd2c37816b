import Platform
import Synchronization

/// The data directory's `SERVER.LOCK` (0600): an exclusive `flock` held for the server's life, so one directory has
/// one server (`Specs/server.md`, *Data directory*). It holds the holder's pid; taking it also proves the directory
/// writable, so a read-only directory is refused at start, not one request at a time.
final class ServerLock: Sendable {
    static let fileName = "SERVER.LOCK"

    private let fd: Int32
    private let io: any PlatformIO
    private let released = Atomic<Bool>(false)

    /// Takes the lock on `directory`.
    /// - Throws: ``ServerError`` `locked` naming the holder's pid when another server has it; `not_writable` when the
    ///   lock file cannot be created or written.
    init(directory: String, io: any PlatformIO) throws {
        let path = directory + "/" + Self.fileName
        let fd: Int32
        do { fd = try io.open(path, .readWriteCreate) } catch let error as Errno {
            throw ServerError("cannot write the data directory \(directory): \(error)", code: "not_writable")
        }
        var content = [UInt8](repeating: 0, count: 32)
        let count = (try? content.withUnsafeMutableBytes { try io.read(fd, into: $0, at: 0) }) ?? 0
        content.removeSubrange(max(0, min(count, content.count))...)
        var locked: Bool
        do { locked = try io.tryLock(fd) } catch {
            io.close(fd)
            throw ServerError("cannot lock \(path): \(error)", code: "not_writable")
        }
        // A lock this process released a moment ago (a server stopped and started again in one process) can still be
        // held for an instant by a child forked meanwhile by another thread, whose copy of the descriptor lives until
        // its exec closes it: when the file names this process, the lock is asked for again for up to a second.
        let holderDigits = content.prefix { $0 != UInt8(ascii: "\n") }
        if !locked, Int32(String(decoding: holderDigits, as: UTF8.self)) == io.processID() {
            for _ in 0..<200 where !locked {
                io.sleep(milliseconds: 5)
                locked = (try? io.tryLock(fd)) ?? false
            }
        }
        guard locked else {
            io.close(fd)
            let digits = content.prefix { $0 != UInt8(ascii: "\n") }
            let holder = Int32(String(decoding: digits, as: UTF8.self))
            throw ServerError(
                "another moodledger serve\(holder.map { " (pid \($0))" } ?? "") is serving \(directory); "
                    + "one data directory has one server", code: "locked")
        }
        let ours = Array("\(io.processID())\n".utf8)
        do {
            try ours.withUnsafeBytes { try io.write(fd, $0, at: 0) }
            try io.truncate(fd, to: Int64(ours.count))
        } catch {
            io.close(fd)
            throw ServerError("cannot write the data directory \(directory): \(error)", code: "not_writable")
        }
        // The lock file may be left from a run when the directory was writable: prove it still is (users'
        // ledgers, snapshots and erasures create files in it).
        let probe = directory + "/.write-probe-" + io.randomBytes(6).map { String($0, radix: 16) }.joined()
        do {
            io.close(try io.open(probe, .createExclusive))
            try io.remove(probe)
        } catch {
            io.close(fd)
            throw ServerError("cannot write the data directory \(directory): \(error)", code: "not_writable")
        }
        self.fd = fd
        self.io = io
    }

    deinit { release() }

    /// Releases the lock (closing the descriptor drops the `flock`).
    func release() {
        guard !released.exchange(true, ordering: .acquiringAndReleasing) else { return }
        io.close(fd)
    }
}
