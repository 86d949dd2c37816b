import CPlatform

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// The C library's calls and constants whose names or types differ between Linux (Glibc) and Darwin, in one place.
///
/// Inside ``Socket`` and ``SystemIO`` their own methods (`close`, `send`, `open`…) shadow the C functions, so they call
/// these instead. Linux is where the package is built and tested; the Darwin spellings are type-checked for
/// `arm64-apple-ios18.0` against a real iOS SDK (README, *Apple platforms*), not run.
enum LibC {
    /// `O_NOATIME` where the system has it (Linux): a read does not dirty the file's inode to record its access time.
    static let noAccessTime: Int32 = cplatform_no_access_time_flag()

    static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
        #if canImport(Darwin)
            Darwin.open(path, flags, mode)
        #else
            Glibc.open(path, flags, mode)
        #endif
    }

    static func close(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
            Darwin.close(fd)
        #else
            Glibc.close(fd)
        #endif
    }

    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
            Darwin.read(fd, buffer, count)
        #else
            Glibc.read(fd, buffer, count)
        #endif
    }

    static func write(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
            Darwin.write(fd, buffer, count)
        #else
            Glibc.write(fd, buffer, count)
        #endif
    }

    static func fsync(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
            Darwin.fsync(fd)
        #else
            Glibc.fsync(fd)
        #endif
    }

    static func rename(_ from: String, _ to: String) -> Int32 {
        #if canImport(Darwin)
            Darwin.rename(from, to)
        #else
            Glibc.rename(from, to)
        #endif
    }

    static func send(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
        #if canImport(Darwin)
            Darwin.send(fd, buffer, count, flags)
        #else
            Glibc.send(fd, buffer, count, flags)
        #endif
    }

    static func recv(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ flags: Int32) -> Int {
        #if canImport(Darwin)
            Darwin.recv(fd, buffer, count, flags)
        #else
            Glibc.recv(fd, buffer, count, flags)
        #endif
    }

    static func connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Int32 {
        #if canImport(Darwin)
            Darwin.connect(fd, address, length)
        #else
            Glibc.connect(fd, address, length)
        #endif
    }

    static func accept(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
            Darwin.accept(fd, nil, nil)
        #else
            Glibc.accept(fd, nil, nil)
        #endif
    }

    static func listen(_ fd: Int32, _ backlog: Int32) -> Int32 {
        #if canImport(Darwin)
            Darwin.listen(fd, backlog)
        #else
            Glibc.listen(fd, backlog)
        #endif
    }

    static func shutdown(_ fd: Int32, _ how: Int32) -> Int32 {
        #if canImport(Darwin)
            Darwin.shutdown(fd, how)
        #else
            Glibc.shutdown(fd, how)
        #endif
    }

    static func poll(_ fds: UnsafeMutablePointer<pollfd>?, _ count: Int, _ timeout: Int32) -> Int32 {
        #if canImport(Darwin)
            Darwin.poll(fds, nfds_t(count), timeout)
        #else
            Glibc.poll(fds, nfds_t(count), timeout)
        #endif
    }

    /// `SOCK_STREAM`.
    static var streamType: Int32 {
        #if canImport(Darwin)
            SOCK_STREAM
        #else
            Int32(SOCK_STREAM.rawValue)
        #endif
    }

    /// `SOCK_CLOEXEC` for `socket`'s type (Darwin has none: `FD_CLOEXEC` is set after).
    static var socketCloseOnExec: Int32 {
        #if canImport(Darwin)
            0
        #else
            Int32(SOCK_CLOEXEC.rawValue)
        #endif
    }

    /// `SOCK_STREAM`, close-on-exec where the OS takes it at creation.
    static var streamSocket: Int32 { streamType | socketCloseOnExec }

    /// Flags for `send` so that a vanished peer is an `EPIPE`, not a SIGPIPE (Darwin: `SO_NOSIGPIPE` on the socket
    /// and the process-wide ignore instead).
    static var sendFlags: Int32 {
        #if canImport(Darwin)
            0
        #else
            Int32(MSG_NOSIGNAL)
        #endif
    }

    static var shutWrite: Int32 {
        #if canImport(Darwin)
            SHUT_WR
        #else
            Int32(SHUT_WR)
        #endif
    }

    static var shutBoth: Int32 {
        #if canImport(Darwin)
            SHUT_RDWR
        #else
            Int32(SHUT_RDWR)
        #endif
    }

    static var rusageSelf: Int32 {
        #if canImport(Darwin)
            RUSAGE_SELF
        #else
            RUSAGE_SELF.rawValue
        #endif
    }

    static var openFileLimitResource: Int32 {
        #if canImport(Darwin)
            RLIMIT_NOFILE
        #else
            Int32(RLIMIT_NOFILE.rawValue)
        #endif
    }

    /// `ru_maxrss` in bytes (kilobytes on Linux, bytes on Darwin).
    static func maxResidentBytes(_ usage: rusage) -> Int64 {
        #if canImport(Darwin)
            Int64(usage.ru_maxrss)
        #else
            Int64(usage.ru_maxrss) * 1024
        #endif
    }
}
