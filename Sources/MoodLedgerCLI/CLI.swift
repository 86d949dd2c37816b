import Foundation
import MoodLedger
import Platform

/// One `moodledger` command: its name, help, declared options and what it runs.
struct CommandSpec: Sendable {
    var name: String
    var summary: String
    var usage: String
    var values: Set<String> = []
    var flags: Set<String> = []
    /// Whether the command prints data (and so takes `--json`).
    var printsData = true
    /// What each option does, for `--help` (one line an option).
    var details: String? = nil
    var run: @Sendable (inout Context) throws -> Int32
}

/// What a running command needs: its arguments, the ledger path, the console and the base ledger options.
struct Context {
    /// The command's name.
    var command: String
    var arguments: ArgumentList
    var ledgerPath: String
    var json: Bool
    var console: Console
    var environment: [String: String]
    var baseOptions: Ledger.Options
    /// Whether `--ledger` or `$MOODLEDGER_LEDGER` named the ledger (demo uses its own default otherwise).
    var ledgerNamed: Bool
    /// A zone that wins over every option and the environment (the deterministic demo).
    var zoneOverride: LocalZone?
    /// The ledgers this command opened.
    let opened = OpenedLedgers()

    /// Opens the ledger: read-only for reading commands, with the writer lock for writing ones.
    func openLedger(write: Bool, create: Bool = false) throws -> Ledger {
        var options = baseOptions
        options.readOnly = !write
        options.createIfMissing = create
        options.zone = try zone()
        if let wait = try lockWaitMilliseconds() { options.lockWaitMilliseconds = wait }
        if !create, !ledgerExists {
            throw CLIError(
                ExitCode.noInput, "no ledger at \(ledgerPath)",
                hint: "create one with `moodledger init --ledger \(ledgerPath)`")
        }
        // A writing command stops at a safe point when interrupted (SIGINT, SIGTERM) instead of dying mid-batch; sync
        // keeps the default (its steps are durable one by one, and a kill between attempt and outcome is recovered).
        if write, !["sync", "serve"].contains(command) { TerminationSignals.intercept() }
        let ledger = try Ledger.open(at: ledgerPath, options: options)
        for notice in ledger.notices { console.error("moodledger: notice: \(notice)") }
        opened.add(ledger, write: write)
        return ledger
    }

    /// A whole number typed for `field` (an option's name or an argument's), within `range`: anything else — not a
    /// number, out of range, too large for any integer — is invalid input (65) naming the field and the range.
    static func integer<T: FixedWidthInteger>(_ text: String, _ field: String, in range: ClosedRange<T>) throws -> T {
        guard let value = T(text), range.contains(value) else {
            throw MoodError.invalid(field, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// `--wait SECONDS` in milliseconds, if given (0…3600 seconds, fractions allowed).
    func lockWaitMilliseconds() throws -> Int? {
        guard let text = arguments.value("wait") else { return nil }
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= 3600 else {
            throw MoodError.invalid("wait", "must be seconds from 0 to 3600")
        }
        return Int((seconds * 1000).rounded())
    }

    /// The zone of local times: `--utc-offset` (fixed), else `--tz`, else `$TZ`, else the base options' zone, else
    /// their fixed offset.
    func zone() throws -> LocalZone {
        if let zoneOverride { return zoneOverride }
        if arguments.value("utc-offset") != nil, arguments.value("tz") != nil {
            throw MoodError.invalid("tz", "give either --tz or --utc-offset, not both")
        }
        if let text = arguments.value("utc-offset") { return .fixed(minutes: try InterchangeCommands.offset(text)) }
        if let name = arguments.value("tz") {
            guard let zone = LocalZone(identifier: name) else {
                throw MoodError.invalid("tz", "\(name) is not an IANA time zone name such as Europe/Berlin")
            }
            return zone
        }
        if let name = environment["TZ"],
            let zone = LocalZone(identifier: name.hasPrefix(":") ? String(name.dropFirst()) : name)
        {
            return zone
        }
        return baseOptions.zone ?? .fixed(minutes: baseOptions.utcOffsetMinutes)
    }

    /// A date typed on the command line (`today`, `yesterday`, `YYYY-MM-DD`, a date-time), in the zone.
    func date(_ text: String, _ field: String) throws -> LocalDate {
        try zone().parseDate(text, now: baseOptions.clock(), field: field)
    }

    /// The `--name` date option, if given.
    func dateOption(_ name: String) throws -> LocalDate? { try arguments.value(name).map { try date($0, name) } }

    /// Today in the zone.
    func today() throws -> LocalDate { try zone().localDate(atUTC: baseOptions.clock()) }

    /// A time typed on the command line, in the zone (see ``LocalZone/parseTime(_:now:field:)``); a skipped or
    /// repeated local time is reported on stderr.
    func time(_ text: String) throws -> LoggedAt {
        let zone = try zone()
        let (loggedAt, adjustment) = try zone.parseTime(text, now: baseOptions.clock())
        if let adjustment { console.error("moodledger: notice: " + zone.explain(adjustment, local: text)) }
        return loggedAt
    }

    /// `--time` (or its deprecated alias `--at`, with a warning) for the commands that log a time.
    func loggedTimeOption() throws -> LoggedAt? {
        if let text = arguments.value("time") { return try time(text) }
        guard let text = arguments.value("at") else { return nil }
        console.error(
            "moodledger: warning: --at is deprecated for log and update (it means a time-travel point "
                + "elsewhere); use --time")
        return try time(text)
    }

    /// Whether a ledger (its log file) exists at the ledger path.
    var ledgerExists: Bool { Ledger.exists(at: ledgerPath, io: baseOptions.io) }

    /// Answers from the state now, or as it was at `--at POINT` (`Ledger.read(at:_:)`: never from a damaged snapshot;
    /// `body` may run twice, so it computes the answer and the command prints it afterwards).
    func read<T>(_ ledger: Ledger, _ body: (LedgerState) throws -> T) throws -> T {
        guard let text = arguments.value("at") else { return try ledger.read(body) }
        let point = try Self.point(text)
        if case .seq(let seq) = point, seq > ledger.lastSeq {
            throw CLIError(
                ExitCode.invalidInput, "--at \(seq) is past the end of the log (the last seq is \(ledger.lastSeq))")
        }
        return try ledger.read(at: point, body)
    }

    static func point(_ text: String) throws -> Ledger.Point {
        guard let point = Ledger.Point(parsing: text) else {
            throw UsageError("\(text) is neither a sequence number nor an ISO 8601 instant")
        }
        return point
    }

    /// The one positional argument `what`, required.
    func positional(_ index: Int, _ what: String) throws -> String {
        guard index < arguments.positionals.count else { throw UsageError("missing \(what)") }
        return arguments.positionals[index]
    }

    /// An entry id argument: a whole UUID, a unique prefix of at least 4 hex digits (like git), or `last` (the
    /// current entry logged last, by time). An ambiguous prefix is a usage error listing the candidates.
    /// - Parameters:
    ///   - index: which positional argument.
    ///   - ledger: the ledger the command opened (resolved there: no second open).
    ///   - includingPast: a prefix also reaches entries deleted or erased since (history, erase, sync explain).
    func entryID(_ index: Int = 0, in ledger: Ledger, includingPast: Bool = false) throws -> EntryID {
        try resolveEntry(try positional(index, "entry ID"), in: ledger, includingPast: includingPast)
    }

    /// The one resolver of every command that takes an entry: a full id, a unique prefix of 4+ hex digits, or `last`;
    /// with `--at POINT`, resolved against the state at that point (`last` is the entry logged last then, a prefix
    /// matches the entries then). `includingPast`: a prefix also reaches ids deleted or erased since (through the
    /// point).
    func resolveEntry(_ text: String, in ledger: Ledger, includingPast: Bool) throws -> EntryID {
        if let id = EntryID(text) { return id }
        let state = try read(ledger) { $0 }
        let when = arguments.value("at").map { " at \($0)" } ?? ""
        if text == "last" {
            guard let newest = Ledger.lastLoggedEntryID(in: state) else {
                throw CLIError(ExitCode.noInput, "the ledger has no entries\(when)")
            }
            return newest
        }
        let prefix = text.lowercased().replacing("-", with: "")
        guard prefix.count >= 4, prefix.allSatisfy(\.isHexDigit) else {
            throw UsageError("\(text) is not an entry ID (a UUID, a prefix of 4+ hex digits, or last)")
        }
        let matches = try ledger.entryIDs(withPrefix: prefix, includingPast: includingPast, in: state)
        switch matches.count {
        case 1: return matches[0]
        case 0:
            throw CLIError(
                ExitCode.noInput, "no entry starts with \(text)\(when)", hint: "list entries with `moodledger list`")
        default:
            let candidates = matches.prefix(10).map(\.description).joined(separator: ", ")
            throw UsageError(
                "\(text) is ambiguous: \(matches.count) entries start with it (\(candidates)); give more digits")
        }
    }

    /// Prints JSON (pretty when `--json` is given to a single object).
    func printJSON(_ value: JSONValue) { console.line(value.serialized(pretty: true)) }

    /// Prints many lines, 64 KiB of text per write (a million lines, one write each, took longer than the query).
    func printLines<S: Sequence<String>>(_ lines: S) {
        var text = ""
        for line in lines {
            text += line
            if text.utf8.count >= 65_536 {
                console.line(text)
                text = ""
            } else {
                text += "\n"
            }
        }
        if !text.isEmpty { console.line(String(text.dropLast())) }
    }
}

/// The `moodledger` command-line tool, callable in-process.
public enum CLI {
    /// Runs one command line.
    /// - Parameters:
    ///   - arguments: the words after the program name.
    ///   - environment: the process environment (`MOODLEDGER_LEDGER`, `NO_COLOR`).
    ///   - console: where output goes.
    ///   - options: base ledger options (tests pass a fixed clock and ids).
    /// - Returns: the exit code (`Specs/cli.md`).
    public static func run(
        _ original: [String], environment: [String: String], console: Console,
        options: Ledger.Options = CLI.defaultOptions
    ) -> Int32 {
        var arguments = CommandLineManners.normalise(original)
        // `help COMMAND` is `COMMAND --help`.
        if arguments.count >= 2, arguments[0] == "help", commands.contains(where: { $0.name == arguments[1] }) {
            arguments = [arguments[1], "--help"]
        }
        guard let name = arguments.first, name != "--help", name != "-h", name != "help" else {
            console.line(help())
            return arguments.isEmpty ? ExitCode.usage : ExitCode.ok
        }
        if name == "--version" {
            console.line("moodledger 0.1.0")
            return ExitCode.ok
        }
        guard let spec = commands.first(where: { $0.name == name }) else {
            let guess = CommandLineManners.suggestion(for: name, among: commands.map(\.name))
            console.error(
                "moodledger: unknown command '\(name)'" + (guess.map { "; did you mean '\($0)'?" } ?? "")
                    + " (hint: see `moodledger --help`)")
            return ExitCode.usage
        }
        var ledgerPath = environment["MOODLEDGER_LEDGER"] ?? "./mood.ledger"
        do {
            var globals: Set<String> = ["help"]
            if spec.printsData { globals.insert("json") }
            let parsed = try ArgumentList(
                Array(arguments.dropFirst()),
                valueOptions: spec.values.union(["ledger", "wait", "tz", "utc-offset"]),
                flagOptions: spec.flags.union(globals))
            if parsed.has("help") {
                console.line(
                    "usage: moodledger \(spec.usage)\n\n\(spec.summary)" + (spec.details.map { "\n\n\($0)" } ?? ""))
                return ExitCode.ok
            }
            try CommandLineManners.check(parsed, command: name)
            if let given = parsed.value("ledger") { ledgerPath = given }
            var context = Context(
                command: name, arguments: parsed, ledgerPath: ledgerPath, json: parsed.has("json"),
                console: console, environment: environment, baseOptions: options,
                ledgerNamed: parsed.value("ledger") != nil || environment["MOODLEDGER_LEDGER"] != nil)
            defer {
                // A snapshot piece found damaged after open: the answer came from the log; say so.
                for notice in context.opened.laterNotices { console.error("moodledger: notice: \(notice)") }
            }
            let code = try spec.run(&context)
            return outputChecked(code, console: console, command: name, wrote: context.opened.wrote)
        } catch var error as UsageError {
            // Every hint names the command's own help; an unknown option gets a did-you-mean.
            if error.message == "unknown option --json" {
                error = UsageError("\(name) prints no data, so --json does not apply to it")
            } else if error.message.hasPrefix("unknown option --") {
                let option = String(error.message.dropFirst("unknown option --".count))
                let known = Array(
                    spec.values.union(spec.flags).union(CommandLineManners.globalValues)
                        .union(CommandLineManners.globalFlags))
                if let guess = CommandLineManners.suggestion(for: option, among: known) {
                    error = UsageError(error.message + "; did you mean --\(guess)?")
                }
            }
            console.error("moodledger \(name): \(error.message) (hint: see `moodledger \(name) --help`)")
            return ExitCode.usage
        } catch {
            let failure = CLIError.from(error, ledger: ledgerPath)
            console.error("moodledger \(name): \(failure.message)" + (failure.hint.map { " (hint: \($0))" } ?? ""))
            return failure.code
        }
    }

    /// A command's exit code once its data output is known to be whole or not. A command that opened the ledger for
    /// writing and succeeded keeps its code: what it committed stays committed, and a non-zero code would tell a
    /// script to retry it (a duplicate). A command that changed nothing exits 74 when its output could not be
    /// written, or 141 silently for a closed pipe (`moodledger list | head -1`), as a process killed by `SIGPIPE`.
    static func outputChecked(_ code: Int32, console: Console, command: String, wrote: Bool) -> Int32 {
        guard let error = console.outputError else { return code }
        if wrote && code == ExitCode.ok {
            console.error(
                "moodledger \(command): notice: the output could not be written (\(error)); the change was kept")
            return code
        }
        if error == .brokenPipe { return code == ExitCode.ok ? 141 : code }
        console.error("moodledger \(command): cannot write the output (\(error))")
        return code == ExitCode.ok ? ExitCode.ioError : code
    }

    /// The ledger options the tool uses: a snapshot on close only once 1,000 events are uncovered, since every
    /// command opens and closes the ledger; a writer waits up to 5 s for another writer's lock (`--wait`), as
    /// SQLite's busy timeout does.
    public static var defaultOptions: Ledger.Options {
        var options = Ledger.Options()
        options.snapshotOnCloseMinimum = 1_000
        options.lockWaitMilliseconds = 5_000
        options.zone = LocalZone.current
        return options
    }

    static let commands: [CommandSpec] =
        EntryCommands.all + AuditCommands.all + ReportCommands.all
        + InterchangeCommands.all + MaintenanceCommands.all + SyncCommands.all + PictureCommands.all + [
            ConflictCommands.spec, EraseCommand.spec, DemoCommand.spec, ServeCommand.spec
        ]

    static func help() -> String {
        var text = """
            moodledger — an event-sourced mood ledger

            usage: moodledger <command> [options] [--ledger PATH] [--tz ZONE | --utc-offset ±HH:MM] [--wait SECONDS] [--json]

            The ledger is --ledger PATH, else $MOODLEDGER_LEDGER, else ./mood.ledger (a directory).
            A writer waits up to --wait SECONDS (default 5) for another writer to finish, then exits 75.
            Local times are in --tz ZONE (IANA, e.g. Europe/Berlin; default $TZ or the system's) or --utc-offset.
            DATE is today, yesterday or YYYY-MM-DD; TIME is now, a local date-time (2026-11-16T08:30) or an instant.
            POINT is a sequence number (1200) or an ISO 8601 instant (2026-03-01T12:00:00Z).

            commands:

            """
        for spec in commands {
            text += "  " + spec.name.column(14) + spec.summary + "\n"
        }
        text +=
            "\nExit codes: 0 ok, 1 verify found problems, 64 usage, 65 invalid input, 66 no such ledger/entry/file,\n"
        text += "69 a destination refused or still lacks items, 73 cannot create, 74 I/O error or corruption,\n"
        text += "75 ledger locked by another writer, 77 credentials refused, 78 sync not configured."
        return text
    }
}

/// The ledgers a command opened, and whether any for writing.
// @unchecked Sendable: its two variables are read and written only under `lock`.
final class OpenedLedgers: @unchecked Sendable {
    private let lock = NSLock()
    private var ledgers: [Ledger] = []
    private var openedForWrite = false

    func add(_ ledger: Ledger, write: Bool) {
        lock.withLock {
            ledgers.append(ledger)
            openedForWrite = openedForWrite || write
        }
    }

    var wrote: Bool { lock.withLock { openedForWrite } }

    /// What the ledgers noticed after open (a snapshot piece that failed its checksum, the state then rebuilt).
    var laterNotices: [String] { lock.withLock { ledgers.flatMap(\.laterNotices) } }
}
