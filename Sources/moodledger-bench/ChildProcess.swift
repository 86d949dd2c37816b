#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Runs another program and reports what the kernel accounted to it alone: wall time and peak resident set
/// (`posix_spawn` + `wait4`, so the child's `ru_maxrss` is its own, not the largest of every child so far).
///
/// Linux starts a spawned child's `ru_maxrss` at the spawning process's high-water mark (`posix_spawn` shares
/// the parent's memory until `exec`), so a large process measures through ``measured(_:_:)``: a fresh, small copy
/// of this executable spawns the program and reports.
enum ChildProcess {
    struct Outcome {
        var status: Int32
        var seconds: Double
        var peakResidentBytes: Int64
    }

    /// Runs `path` with `arguments`, its output sent to /dev/null, and waits for it.
    /// - Throws: ``BenchError`` when it cannot be started.
    static func run(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Outcome {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let start = Benchmark.now()
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard spawned == 0 else { throw BenchError(text: "could not start \(path) (error \(spawned))") }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw BenchError(text: "wait4 failed for \(path)") }
        }
        let seconds = Benchmark.seconds(since: start)
        let exit = (status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        return Outcome(status: exit, seconds: seconds, peakResidentBytes: Int64(usage.ru_maxrss) * 1024)
    }

    /// Runs `path` from a fresh `moodledger-bench --measure-child` (see the type's note) and reads its report.
    static func measured(_ path: String, _ arguments: [String]) throws -> Outcome {
        let report = try BenchmarkCommand.runSelf(["--measure-child", path] + arguments)
        let fields = report.split(separator: " ")
        guard fields.count == 3, let status = Int32(fields[0]), let seconds = Double(fields[1]),
              let peak = Int64(fields[2]) else { throw BenchError(text: "--measure-child said: \(report)") }
        return Outcome(status: status, seconds: seconds, peakResidentBytes: peak)
    }

    /// `--measure-child PATH ARGS…`: runs it and prints `status seconds peak_bytes`.
    static func measureMain(_ arguments: [String]) -> Int32 {
        guard let path = arguments.first, let outcome = try? run(path, Array(arguments.dropFirst())) else { return 74 }
        print("\(outcome.status) \(outcome.seconds) \(outcome.peakResidentBytes)")
        return 0
    }

    /// The first executable called `name` on `PATH`, if any.
    static func which(_ name: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }
}
