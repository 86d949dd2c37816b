#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// Starts another program and waits for it, reporting what the kernel accounted to that child alone.
public enum ChildProcess {
    /// How a child ended.
    public struct Exit: Sendable {
        /// Its exit status, or 128 + the signal that killed it.
        public var status: Int32
        /// Its peak resident set in bytes (`wait4`'s `ru_maxrss`: its own, not the largest of every child so far).
        public var peakResidentBytes: Int64
    }

    /// Runs `path` with `arguments` and `environment` (`NAME=value` strings), its standard output and error sent to
    /// /dev/null, and waits for it (`posix_spawn` + `wait4`, EINTR retried).
    /// - Throws: ``Errno`` when it cannot be started or waited for.
    public static func run(_ path: String, _ arguments: [String], environment: [String]) throws -> Exit {
        #if canImport(Darwin)
            // An opaque pointer on Darwin, filled in by `posix_spawn_file_actions_init`.
            var actions: posix_spawn_file_actions_t? = nil
        #else
            var actions = posix_spawn_file_actions_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { strdup($0) } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard spawned == 0 else { throw Errno(rawValue: spawned) }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw Errno.current }
        }
        let exit = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Exit(status: exit, peakResidentBytes: LibC.maxResidentBytes(usage))
    }
}
