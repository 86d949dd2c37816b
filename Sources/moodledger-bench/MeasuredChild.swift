import Foundation
import Platform

/// Runs another program and reports what the kernel accounted to it alone: wall time and peak resident set
/// (`posix_spawn` + `wait4`, so the child's `ru_maxrss` is its own, not the largest of every child so far).
///
/// Linux starts a spawned child's `ru_maxrss` at the spawning process's high-water mark (`posix_spawn` shares
/// the parent's memory until `exec`), so a large process measures through ``measured(_:_:)``: a fresh, small copy
/// of this executable spawns the program and reports.
enum MeasuredChild {
    struct Outcome {
        var status: Int32
        var seconds: Double
        var peakResidentBytes: Int64
    }

    /// Runs `path` with `arguments`, its output sent to /dev/null, and waits for it.
    /// - Throws: ``BenchError`` when it cannot be started.
    static func run(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Outcome {
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        let start = Benchmark.now()
        let exit: ChildProcess.Exit
        do {
            exit = try ChildProcess.run(path, arguments, environment: merged.map { "\($0.key)=\($0.value)" })
        } catch {
            throw BenchError(text: "could not run \(path) (\(error))")
        }
        return Outcome(
            status: exit.status, seconds: Benchmark.seconds(since: start), peakResidentBytes: exit.peakResidentBytes)
    }

    /// Runs `path` from a fresh `moodledger-bench --measure-child` (see the type's note) and reads its report.
    static func measured(_ path: String, _ arguments: [String]) throws -> Outcome {
        let report = try BenchmarkCommand.runSelf(["--measure-child", path] + arguments)
        let fields = report.split(separator: " ")
        guard fields.count == 3, let status = Int32(fields[0]), let seconds = Double(fields[1]),
            let peak = Int64(fields[2])
        else { throw BenchError(text: "--measure-child said: \(report)") }
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
