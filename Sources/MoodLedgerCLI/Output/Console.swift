import EventLog
import Foundation
import Platform

/// Where a command's output goes: data to `out`, diagnostics to `err`. Tests capture both in memory.
// @unchecked Sendable: the writers and flags are set once in init; the held output is read and written only under
// `heldLock`.
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

    private let heldLock = NSLock()
    private var held: (text: String, limit: Int)?
    private var passedHeld = false

    /// Writes a line of data (held back while ``hold(upTo:)`` is in force).
    public func line(_ text: String = "") {
        let flush: String? = heldLock.withLock {
            guard var current = held else { return text + "\n" }
            current.text += text + "\n"
            guard current.text.utf8.count > current.limit else {
                held = current
                return nil
            }
            held = nil
            passedHeld = true
            return current.text
        }
        if let flush { writeOut(flush) }
    }

    /// Holds the data written from now on until ``releaseHeld()`` (or until more than `limit` bytes are held,
    /// which are then written and no longer held), so that an answer found to be read from a damaged snapshot can
    /// be withdrawn before anyone sees it.
    public func hold(upTo limit: Int) {
        heldLock.withLock { if held == nil { held = ("", limit) } }
    }

    /// Writes what is held and stops holding.
    public func releaseHeld() {
        let text: String? = heldLock.withLock {
            defer { held = nil }
            return held?.text
        }
        if let text, !text.isEmpty { writeOut(text) }
    }

    /// Drops what is held and stops holding.
    /// - Returns: whether nothing written since ``hold(upTo:)`` reached the output.
    public func discardHeld() -> Bool {
        heldLock.withLock {
            held = nil
            defer { passedHeld = false }
            return !passedHeld
        }
    }
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
