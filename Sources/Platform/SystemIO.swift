import CPlatform

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#else
    #error("EventLog needs Darwin or Glibc")
#endif

/// The real ``PlatformIO``: thin wrappers over POSIX calls with EINTR and short-transfer loops.
public struct SystemIO: PlatformIO {
    /// Creates the system implementation.
    public init() {}

    /// Runs `call` until it does not fail with EINTR.
    ///
    /// EBADF and EFAULT stop the process, as swift-nio's `System.swift` does: they are the caller's bug (a descriptor
    /// used after its close, a bad buffer), never the disk's, and carrying on could write a ledger's bytes into
    /// whatever file was since given that descriptor number.
    @inline(__always)
    private func retrying<T: BinaryInteger>(_ call: () -> T) throws -> T {
        while true {
            let result = call()
            if result >= 0 { return result }
            let error = Self.failure()
            if error != .interrupted { throw error }
        }
    }

    /// The error of the call that just failed, after the checks that make EBADF and EFAULT stop the process.
    @inline(__always)
    private static func failure() -> Errno {
        let error = Errno.current
        precondition(error.rawValue != EBADF, "a system call was given a descriptor that is not open (EBADF)")
        precondition(error.rawValue != EFAULT, "a system call was given a buffer outside memory (EFAULT)")
        return error
    }

    public func open(_ path: String, _ mode: OpenMode) throws -> Int32 {
        var flags: Int32 = O_CLOEXEC
        switch mode {
        case .readOnly: flags |= O_RDONLY
        case .readWrite: flags |= O_RDWR
        case .readWriteCreate: flags |= O_RDWR | O_CREAT
        case .createExclusive: flags |= O_RDWR | O_CREAT | O_EXCL
        }
        // An existing file's access time is not ours to keep current: updating it turns every read of a ledger into
        // an inode write. The kernel allows O_NOATIME only to the file's owner (else EPERM): then open as asked.
        if mode == .readOnly || mode == .readWrite, LibC.noAccessTime != 0 {
            do {
                return try retrying { LibC.open(path, flags | LibC.noAccessTime, 0o600) }
            } catch let error as Errno where error == .notPermitted {}
        }
        return try retrying { LibC.open(path, flags, 0o600) }
    }

    public func close(_ fd: Int32) {
        // POSIX leaves the descriptor state unspecified after EINTR; Linux always closes it. Never retry.
        _ = LibC.close(fd)
    }

    public func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = try retrying {
                pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    public func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        var done = 0
        while done < bytes.count {
            let n = try retrying {
                pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            }
            if n == 0 { throw Errno.noSpace }
            done += n
        }
    }

    public func syncData(_ fd: Int32) throws {
        #if canImport(Darwin)
            try Self.fullSync(fd)
        #else
            // One call, never retried: after a failed fdatasync the dirty pages may already be dropped.
            if fdatasync(fd) != 0 { throw Self.failure() }
        #endif
    }

    public func syncDirectory(_ path: String) throws {
        let fd = try retrying { LibC.open(path, O_RDONLY | O_CLOEXEC | O_DIRECTORY, 0) }
        defer { close(fd) }
        #if canImport(Darwin)
            // A rename is as durable as the data renamed: the drive's cache is flushed for the directory too.
            try Self.fullSync(fd)
        #else
            if LibC.fsync(fd) != 0 { throw Self.failure() }
        #endif
    }

    #if canImport(Darwin)
        /// `F_FULLFSYNC` (the drive's cache flushed too); `fsync` once only where the file system does not support it
        /// (`ENOTSUP`, `EINVAL`, `ENOTTY`). Any other failure is the sync's own, reported, never retried.
        private static func fullSync(_ fd: Int32) throws {
            if fcntl(fd, F_FULLFSYNC) == 0 { return }
            let error = failure()
            guard [ENOTSUP, EINVAL, ENOTTY].contains(error.rawValue) else { throw error }
            if LibC.fsync(fd) != 0 { throw failure() }
        }
    #endif

    public func truncate(_ fd: Int32, to size: Int64) throws {
        _ = try retrying { ftruncate(fd, off_t(size)) }
    }

    public func size(_ fd: Int32) throws -> Int64 {
        var info = stat()
        _ = try retrying { fstat(fd, &info) }
        return Int64(info.st_size)
    }

    public func identity(_ fd: Int32) throws -> FileIdentity {
        var info = stat()
        _ = try retrying { fstat(fd, &info) }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    public func status(ofPath path: String) -> FileStatus? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileStatus(
            identity: FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)), size: Int64(info.st_size))
    }

    public func unlock(_ fd: Int32) { _ = flock(fd, LOCK_UN) }

    public func tryLock(_ fd: Int32) throws -> Bool {
        while true {
            if flock(fd, LOCK_EX | LOCK_NB) == 0 { return true }
            let error = Self.failure()
            if error == .interrupted { continue }
            if error == .wouldBlock { return false }
            throw error
        }
    }

    public func rename(_ from: String, _ to: String) throws {
        _ = try retrying { LibC.rename(from, to) }
    }

    public func remove(_ path: String) throws {
        _ = try retrying { unlink(path) }
    }

    public func removeDirectory(_ path: String) throws {
        _ = try retrying { rmdir(path) }
    }

    public func makeDirectory(_ path: String) throws -> Bool {
        if mkdir(path, 0o700) == 0 { return true }
        let error = Self.failure()
        if error == .fileExists { return false }
        throw error
    }

    public func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Whether `path` is itself a directory: a symbolic link is not followed (`lstat`).
    public func isDirectoryNotLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    public func contents(ofDirectory path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw Self.failure() }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    public func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let status = bytes.withUnsafeMutableBytes { cplatform_random_bytes($0.baseAddress, $0.count) }
        precondition(status == 0, "the system's random source failed")
        return bytes
    }

    public func nowMicroseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }

    public func processID() -> Int32 { getpid() }

    /// Why ``readOwnerOnlyFile(_:limit:)`` refused a file.
    public enum OwnerOnlyFileProblem: Error, Sendable {
        /// It could not be looked at or opened.
        case unreadable(Errno)
        /// It is not a regular file (a directory, a link, a device).
        case notRegular
        /// Its group or others may read or write it: the mode it has.
        case openMode(UInt32)
        /// It holds more than the limit.
        case tooLarge
    }

    /// Reads a small secret file only if it is a regular file (not a link) that no one but its owner can read or
    /// write (mode 0600 or 0400).
    /// - Throws: ``OwnerOnlyFileProblem``.
    public static func readOwnerOnlyFile(_ path: String, limit: Int) throws(OwnerOnlyFileProblem) -> [UInt8] {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw .unreadable(Self.failure()) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .notRegular }
        let mode = UInt32(info.st_mode & 0o777)
        guard mode & 0o077 == 0 else { throw .openMode(mode) }
        let fd = LibC.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw .unreadable(Self.failure()) }
        defer { _ = LibC.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= limit {
            let count = chunk.withUnsafeMutableBytes { LibC.read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        guard bytes.count <= limit else { throw .tooLarge }
        return bytes
    }

    /// The soft limit on open descriptors (`RLIMIT_NOFILE`).
    public static func openFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(LibC.openFileLimitResource, &limit) == 0 else { return 1024 }
        return Int(clamping: limit.rlim_cur)  // RLIM_INFINITY (all ones) clamps to Int.max
    }

    /// How many descriptors this process has open now (entries of `/proc/self/fd`; `nil` where there is none).
    public static func openDescriptorCount() -> Int? {
        guard let dir = opendir("/proc/self/fd") else { return nil }
        defer { closedir(dir) }
        var count = -3  // ".", ".." and the directory's own descriptor
        while readdir(dir) != nil { count += 1 }
        return max(0, count)
    }

    /// This process's peak resident set in bytes.
    ///
    /// On Linux this is the address space's own high-water mark (`VmHWM` in `/proc/self/status`): `getrusage`'s
    /// `ru_maxrss` survives `execve`, so a program started by a larger one (`swift run`) would report that one's peak.
    public static func peakResidentBytes() -> Int64 {
        var usage = rusage()
        #if canImport(Darwin)
            getrusage(RUSAGE_SELF, &usage)
            return Int64(usage.ru_maxrss)  // bytes on Darwin
        #else
            let fd = LibC.open("/proc/self/status", O_RDONLY | O_CLOEXEC)
            if fd >= 0 {
                defer { _ = LibC.close(fd) }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = buffer.withUnsafeMutableBytes { LibC.read(fd, $0.baseAddress, $0.count) }
                let text = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self)
                if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                    let kilobytes = Int64(
                        line.dropFirst(6).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
                {
                    return kilobytes * 1024
                }
            }
            getrusage(LibC.rusageSelf, &usage)
            return LibC.maxResidentBytes(usage)
        #endif
    }

    /// The processor time this process has used, user and system, in seconds (`getrusage`).
    public static func processorSeconds() -> Double {
        var usage = rusage()
        #if canImport(Darwin)
            getrusage(RUSAGE_SELF, &usage)
        #else
            getrusage(LibC.rusageSelf, &usage)
        #endif
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Hands the memory allocator's wholly free pages back to the system (glibc's `malloc_trim`; nothing elsewhere):
    /// after a large structure was freed, or before one is built, so that freed memory does not stay resident beside
    /// it.
    public static func releaseFreeMemory() { _ = cplatform_release_free_memory() }

    /// Makes the whole pages of `bytes` bytes at `address` resident and writable without writing to them (Linux's
    /// `MADV_POPULATE_WRITE`; nothing elsewhere): the page faults a first write would take, taken by the calling
    /// thread. The contents do not change, so another thread may be writing there; memory no longer allocated is
    /// only made resident.
    public static func populateForWriting(address: UInt, bytes: Int) {
        guard let pointer = UnsafeMutableRawPointer(bitPattern: address), bytes > 0 else { return }
        _ = cplatform_populate_for_writing(pointer, bytes)
    }

    /// The current resident set size of this process in bytes (`/proc/self/statm` on Linux; the peak elsewhere).
    public static func currentResidentBytes() -> Int64 {
        #if canImport(Glibc)
            let fd = LibC.open("/proc/self/statm", O_RDONLY, 0)
            guard fd >= 0 else { return peakResidentBytes() }
            defer { _ = LibC.close(fd) }
            var buffer = [UInt8](repeating: 0, count: 128)
            let count = buffer.withUnsafeMutableBytes { LibC.read(fd, $0.baseAddress, $0.count) }
            let fields = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self).split(separator: " ")
            guard fields.count > 1, let pages = Int64(fields[1]) else { return peakResidentBytes() }
            return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
        #else
            return peakResidentBytes()
        #endif
    }

    /// The process's environment, read from `environ` (what `ProcessInfo` builds too, without starting it: a
    /// command-line process that only needs these strings starts faster). A later `NAME=value` wins, as in
    /// `getenv`'s result when a name repeats.
    public static func environment() -> [String: String] {
        var result: [String: String] = [:]
        let start: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        guard var entry = start else { return result }
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.utf8.firstIndex(of: UInt8(ascii: "=")) {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }

    /// Whether a descriptor is a terminal (for progress output).
    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// The time since this machine booted, with the boot's identity: a clock no wall-clock change moves, that counts
    /// the time the machine slept (`CLOCK_BOOTTIME` on Linux; on Darwin `CLOCK_MONOTONIC`, which counts sleep there),
    /// for durations measured across processes — two readings of the same boot subtract exactly. `nil` where the
    /// boot cannot be identified.
    public static func bootClock() -> BootClock? {
        var ts = timespec()
        #if canImport(Darwin)
            var boot = timeval()
            var size = MemoryLayout<timeval>.size
            guard sysctlbyname("kern.boottime", &boot, &size, nil, 0) == 0 else { return nil }
            let identity = "\(boot.tv_sec).\(boot.tv_usec)"
            clock_gettime(CLOCK_MONOTONIC, &ts)
        #else
            let fd = LibC.open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 64)
            let count = chunk.withUnsafeMutableBytes { LibC.read(fd, $0.baseAddress, $0.count) }
            _ = LibC.close(fd)
            guard count > 0 else { return nil }
            let identity = String(decoding: chunk[0..<count], as: UTF8.self).filter { !$0.isWhitespace }
            guard !identity.isEmpty else { return nil }
            clock_gettime(CLOCK_BOOTTIME, &ts)
        #endif
        return BootClock(boot: identity, milliseconds: Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000)
    }

    /// A monotonic clock in nanoseconds, for measuring durations.
    public static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    public func sleep(milliseconds: Int) {
        var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0, errno == EINTR { request = remaining }
    }
}

/// A reading of the time since boot, with the boot's identity (``SystemIO/bootClock()``).
public struct BootClock: Sendable, Equatable {
    /// The boot's identity (Linux: `/proc/sys/kernel/random/boot_id`; Darwin: `kern.boottime`).
    public var boot: String
    /// Milliseconds since that boot.
    public var milliseconds: Int64

    /// A reading.
    public init(boot: String, milliseconds: Int64) {
        self.boot = boot
        self.milliseconds = milliseconds
    }
}
