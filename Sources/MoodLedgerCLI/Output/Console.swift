import Foundation
import Platform
import Synchronization

/// Where a command's output goes: data to `out`, diagnostics to `err`. Tests capture both in memory.
///
/// A write that fails (a full disk or a closed pipe behind a redirect) never stops the process: the text is dropped
/// and the first failure of the data stream is kept, so the command decides what it means (`Specs/cli.md`, *Output
/// that cannot be written*).
// @unchecked Sendable: the writers and flags are set once in init and never change; the writers themselves must be
// safe to call from any thread (StandardStream's are; the tests' captures lock); the failure is under a Mutex.
public final class Console: @unchecked Sendable {
    private let writeOut: (String) -> Errno?
    private let writeErr: (String) -> Errno?
    private let outFailure = Mutex<Errno?>(nil)
    /// Whether stderr is a terminal (progress is shown only then).
    public let errIsTerminal: Bool
    /// Whether stdout is a terminal and colour is allowed (`NO_COLOR` unset).
    public let color: Bool

    /// Creates a console from two writers that cannot fail (captures in memory).
    public convenience init(
        out: @escaping (String) -> Void, err: @escaping (String) -> Void, errIsTerminal: Bool = false,
        color: Bool = false
    ) {
        self.init(
            fallibleOut: {
                out($0); return nil
            },
            err: {
                err($0); return nil
            }, errIsTerminal: errIsTerminal,
            color: color)
    }

    /// Creates a console from two writers that answer the error of a write that failed (`nil`: written).
    public init(
        fallibleOut out: @escaping (String) -> Errno?, err: @escaping (String) -> Errno?,
        errIsTerminal: Bool = false, color: Bool = false
    ) {
        writeOut = out
        writeErr = err
        self.errIsTerminal = errIsTerminal
        self.color = color
    }

    /// The process's stdout and stderr, written with `write(2)`: a failed write is dropped, never a trap.
    public static func standard(environment: [String: String]) -> Console {
        Console(
            fallibleOut: { StandardStream.output.write($0) ? nil : StandardStream.output.lastError },
            err: { StandardStream.error.write($0) ? nil : StandardStream.error.lastError },
            errIsTerminal: SystemIO.isTerminal(2),
            color: SystemIO.isTerminal(1) && environment["NO_COLOR"].map(\.isEmpty) ?? true)
    }

    /// The first error a write of data (stdout) met, if any: that output is incomplete.
    public var outputError: Errno? { outFailure.withLock { $0 } }

    /// Writes a line of data.
    public func line(_ text: String = "") {
        if let error = writeOut(text + "\n") { outFailure.withLock { if $0 == nil { $0 = error } } }
    }

    /// Writes data as it is, without a newline (a long output written a piece at a time).
    public func write(_ text: String) {
        if let error = writeOut(text) { outFailure.withLock { if $0 == nil { $0 = error } } }
    }

    /// Writes a diagnostic line (one that cannot be written is dropped).
    public func error(_ text: String, terminator: String = "\n") { _ = writeErr(text + terminator) }
    /// Shows progress on stderr, only when it is a terminal.
    public func progress(_ text: String) { if errIsTerminal { _ = writeErr("\r" + text) } }
    /// Ends a progress line.
    public func progressDone() { if errIsTerminal { _ = writeErr("\r\u{1B}[K") } }
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
