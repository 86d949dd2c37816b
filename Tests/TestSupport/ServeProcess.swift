import Foundation

/// The built `moodledger serve` as a child process, and reading a child's first line of output.
public enum ServeProcess {
    /// Reads `pipe` until its first newline (or its end).
    public static func firstLine(of pipe: Pipe) -> String {
        var text = ""
        while !text.contains("\n") {
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        return text
    }

    /// Starts `moodledger serve --data DATA --port PORT` with the rate limits off and `options` after them; returns
    /// the process and its port once it listens (its standard error `stderr`, discarded by default).
    /// - Throws: `EADDRNOTAVAIL` when it did not say where it listens.
    public static func start(
        _ data: String, port: UInt16 = 0, options: [String] = [], stderr: Any = FileHandle.nullDevice
    ) throws -> (Process, UInt16) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Repository.executable("moodledger"))
        process.arguments =
            [
                "serve", "--data", data, "--port", String(port), "--writes-per-hour", "0", "--reads-per-hour", "0",
                "--erasures-per-hour", "0"
            ] + options
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = stderr
        try process.run()
        let text = firstLine(of: pipe)
        guard let range = text.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression),
            let bound = UInt16(text[range].split(separator: ":")[1])
        else {
            process.terminate()
            throw POSIXError(.EADDRNOTAVAIL)
        }
        return (process, bound)
    }

    /// Sends SIGTERM and waits up to `seconds` for the process to exit; past that, SIGKILL (so a test never hangs).
    /// - Returns: whether it exited by itself within the time.
    @discardableResult
    public static func stop(_ process: Process, within seconds: Double = 20) -> Bool {
        process.terminate()
        if waitUntil(seconds: seconds, { !process.isRunning }) { return true }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilGone()
        return false
    }
}
