import Foundation
import Platform

/// Where a command's output goes: data to `out`, diagnostics to `err`. Tests capture both in memory.
// @unchecked Sendable: the writers and flags are set once in init and never change; the writers themselves must be
// safe to call from any thread (FileHandle's are; the tests' captures lock).
public final class Console: @unchecked Sendable {
    private let writeOut: (String) -> Void
    private let writeErr: (String) -> Void
    /// Whether stderr is a terminal (progress is shown only then).
    public let errIsTerminal: Bool
    /// Whether stdout is a terminal and colour is allowed (`NO_COLOR` unset).
    public let color: Bool

    /// Creates a console from two writers.
    public init(
        out: @escaping (String) -> Void, err: @escaping (String) -> Void, errIsTerminal: Bool = false,
        color: Bool = false
    ) {
        writeOut = out
        writeErr = err
        self.errIsTerminal = errIsTerminal
        self.color = color
    }

    /// The process's stdout and stderr.
    public static func standard(environment: [String: String]) -> Console {
        Console(
            out: { FileHandle.standardOutput.write(Data($0.utf8)) },
            err: { FileHandle.standardError.write(Data($0.utf8)) },
            errIsTerminal: SystemIO.isTerminal(2),
            color: SystemIO.isTerminal(1) && environment["NO_COLOR"].map(\.isEmpty) ?? true)
    }

    /// Writes a line of data.
    public func line(_ text: String = "") { writeOut(text + "\n") }

    /// Writes a diagnostic line.
    public func error(_ text: String, terminator: String = "\n") { writeErr(text + terminator) }
    /// Shows progress on stderr, only when it is a terminal.
    public func progress(_ text: String) { if errIsTerminal { writeErr("\r" + text) } }
    /// Ends a progress line.
    public func progressDone() { if errIsTerminal { writeErr("\r\u{1B}[K") } }
}

/// Captures output in memory (tests, and the in-process CLI).
// @unchecked Sendable: `out` and `err` change only under `lock`.
public final class CapturedOutput: @unchecked Sendable {
    public private(set) var out = ""
    public private(set) var err = ""
    private let lock = NSLock()

    public init() {}

    /// A console writing into this capture.
    public func console() -> Console {
        Console(
            out: { [self] text in lock.withLock { out += text } },
            err: { [self] text in lock.withLock { err += text } })
    }
}
