import Dispatch
import Foundation
import Synchronization

/// The built `moodledger` binary run as a user runs it: a separate process with its own arguments, environment and
/// working directory.
public enum Tool {
    /// What one run printed and how it ended.
    public struct Outcome: Sendable {
        public var code: Int32
        public var out: String
        public var err: String
    }

    /// Runs an executable to its end.
    /// - Parameters:
    ///   - executable: a path (default: the built `moodledger`).
    ///   - arguments: the words after the program name.
    ///   - environment: the whole environment (default: this process's).
    ///   - directory: the working directory (default: this process's).
    public static func run(
        _ arguments: [String], executable: String = Repository.executable("moodledger"),
        environment: [String: String]? = nil, directory: String? = nil
    ) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Both pipes drain at once: a child that fills one while the other is read would block forever.
        let errData = Mutex<Data>(Data())
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let data = err.fileHandleForReading.readDataToEndOfFile()
            errData.withLock { $0 = data }
            done.signal()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        process.waitUntilExit()
        return Outcome(
            code: process.terminationStatus, out: String(decoding: outData, as: UTF8.self),
            err: String(decoding: errData.withLock { $0 }, as: UTF8.self))
    }
}
