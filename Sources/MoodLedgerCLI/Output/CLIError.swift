import EventLog
import MoodLedger
import Platform

/// sysexits codes used by `moodledger` (`Specs/cli.md`).
public enum ExitCode {
    public static let ok: Int32 = 0
    public static let problemsFound: Int32 = 1
    public static let usage: Int32 = 64
    public static let invalidInput: Int32 = 65
    public static let noInput: Int32 = 66
    /// EX_UNAVAILABLE: a destination refused some items (`healthkit push`).
    public static let unavailable: Int32 = 69
    public static let cannotCreate: Int32 = 73
    public static let ioError: Int32 = 74
    public static let locked: Int32 = 75
    /// EX_NOPERM: the backend refused the credentials (`sync`, after one refresh).
    public static let noPermission: Int32 = 77
    /// EX_CONFIG: no backend configured, or a credentials file that is unreadable or not 0600 (`sync`).
    public static let config: Int32 = 78
}

/// SIGINT or SIGTERM arrived while a writing command ran, and it stopped before keeping anything (its unfinished
/// batch was cut off): exit 128 + the signal's number, as a shell reports a process the signal ended.
struct Interrupted: Error {
    var signal: Int32
    /// What was not kept, for the message: "nothing of this import was kept".
    var what: String

    /// Throws when a termination signal was received.
    static func check(_ what: String) throws {
        if let signal = TerminationSignals.requested { throw Interrupted(signal: signal, what: what) }
    }
}

/// A failure with its exit code, a one-line cause and a hint.
struct CLIError: Error {
    var code: Int32
    var message: String
    var hint: String?

    init(_ code: Int32, _ message: String, hint: String? = nil) {
        self.code = code
        self.message = message
        self.hint = hint
    }

    /// Maps any error to an exit code and a line that names the cause and a hint. Never includes notes text:
    /// domain errors name the field and the rule only.
    static func from(_ error: Error, ledger: String) -> CLIError {
        switch error {
        case let error as CLIError:
            return error
        case let error as UsageError:
            return CLIError(ExitCode.usage, error.message, hint: "see `moodledger --help`")
        case let error as Interrupted:
            return CLIError(128 + error.signal, "interrupted: \(error.what)")
        case let error as ImportError:
            return CLIError(ExitCode.invalidInput, "\(error); nothing was imported")
        case let error as MoodError:
            switch error.code {
            case .notFound:
                return CLIError(ExitCode.noInput, error.description, hint: "list entries with `moodledger list`")
            case .corruptEvent:
                return CLIError(
                    ExitCode.ioError, "corrupt event: \(error.rule)",
                    hint: "run `moodledger verify`, then `moodledger repair --salvage`")
            case .newerVersion:
                return CLIError(
                    ExitCode.ioError, "this ledger was written by a newer version of moodledger: \(error.rule)",
                    hint: "open it with that newer version; nothing was changed")
            case .readOnly: return CLIError(ExitCode.invalidInput, error.description)
            case .heldElsewhere: return CLIError(ExitCode.unavailable, error.description)
            default: return CLIError(ExitCode.invalidInput, error.description)
            }
        case let error as EventLogError:
            switch error.code {
            case .locked:
                return CLIError(ExitCode.locked, error.message, hint: "wait for the other writer to finish")
            case .notFound:
                return CLIError(
                    ExitCode.noInput, "no ledger at \(ledger)",
                    hint: "create one with `moodledger init --ledger \(ledger)`")
            case .corrupted:
                return CLIError(
                    ExitCode.ioError, "the ledger is damaged: \(error)",
                    hint: "run `moodledger repair --salvage` (a copy of the damaged log is kept)")
            case .invalidArgument:
                return CLIError(ExitCode.invalidInput, error.description)
            default:
                return CLIError(ExitCode.ioError, error.description)
            }
        default:
            return CLIError(ExitCode.ioError, "\(error)")
        }
    }
}
