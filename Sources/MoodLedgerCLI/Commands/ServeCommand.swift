import Dispatch
import Foundation
import MoodLedger
import MoodLedgerServer
import Platform

/// `serve`: the reference backend (`Specs/server.md`), and `serve user add` / `serve token` for its credentials.
enum ServeCommand {
    static let spec = CommandSpec(
        name: "serve", summary: "run the reference backend (the seed API over one ledger per user)",
        usage:
            "serve --data DIR | --store postgresql://USER@HOST:PORT/DB [--host 127.0.0.1] [--port 8080] [--writes-per-hour 100] [--write-burst 10000] [--reads-per-hour 500] [--erasures-per-hour 20] [--max-open-ledgers N]\n"
            + "       serve user add NAME --data DIR\n       serve user rotate-key NAME --data DIR\n       serve user import FILE --data DIR\n       serve user erase NAME --data DIR --yes\n       serve token --user NAME --data DIR [--ttl 1h]\n"
            + "       serve --store URL init\n       serve migrate --from DIR --to URL (or --from URL --to DIR)",
        values: [
            "data", "host", "port", "writes-per-hour", "write-burst", "reads-per-hour", "erasures-per-hour", "user",
            "ttl", "workers",
            "max-connections",
            "max-open-ledgers", "store", "from", "to"
        ],
        flags: ["yes"],
        printsData: false
    ) { context in
        if context.arguments.positionals.first == "migrate" { return try ServePostgresCommands.migrate(context) }
        if let url = context.arguments.value("store") {
            guard context.arguments.value("data") == nil else {
                throw UsageError("serve takes --data DIR or --store URL, not both")
            }
            return try ServePostgresCommands.run(context, url: url)
        }
        guard let data = context.arguments.value("data") else {
            throw UsageError("serve needs --data DIR (or --store postgresql://…)")
        }
        switch context.arguments.positionals.first {
        case nil: return try run(context, data: data)
        case "user":
            guard context.arguments.positionals.count == 3,
                ["add", "erase", "import", "rotate-key"].contains(context.arguments.positionals[1])
            else {
                throw UsageError(
                    "usage: serve user add|erase|rotate-key NAME --data DIR, or serve user import FILE --data DIR")
            }
            if context.arguments.positionals[1] == "rotate-key" {
                return try rotateKey(context, name: context.arguments.positionals[2], data: data)
            }
            if context.arguments.positionals[1] == "import" {
                return try importUsers(context, file: context.arguments.positionals[2], data: data)
            }
            if context.arguments.positionals[1] == "erase" {
                return try eraseUser(context, name: context.arguments.positionals[2], data: data)
            }
            return try addUser(context, name: context.arguments.positionals[2], data: data)
        case "token": return try token(context, data: data)
        case let other?: throw UsageError("serve takes no argument \(other) (user add NAME, or token)")
        }
    }

    /// `serve user import FILE`: one user name a line (blank lines skipped); every account added in one batch (one
    /// append, one sync) or none — a bad or taken name refuses the whole file. Prints `NAME KEY` a line: the keys,
    /// shown once.
    private static func importUsers(_ context: Context, file: String, data: String) throws -> Int32 {
        guard let bytes = FileManager.default.contents(atPath: file) else {
            throw CLIError(ExitCode.noInput, "cannot read \(file)")
        }
        let names = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        try UserFiles.makeDirectory(data)
        var credentials = try Credentials.load(directory: data, create: true)
        var keys: [(String, String)] = []
        keys.reserveCapacity(names.count)
        for (index, name) in names.enumerated() {
            do { keys.append((name, try credentials.addUser(name))) } catch let error as ServerError {
                throw CLIError(
                    ExitCode.invalidInput, "\(file) line \(index + 1): \(error.description); no account was added")
            }
        }
        try credentials.save(directory: data)
        try UserFiles.makeDirectory(data + "/users")
        for (name, key) in keys { context.console.line("\(name) \(key)") }
        return ExitCode.ok
    }

    /// The data directory's accounts, which must hold `name` (66 otherwise, as when there are no accounts at all).
    private static func accounts(holding name: String, in data: String, hint: String? = nil) throws -> Credentials {
        let credentials: Credentials
        do { credentials = try Credentials.load(directory: data, create: false) } catch let error as ServerError {
            throw CLIError(ExitCode.noInput, error.description)
        }
        guard credentials.has(name) else { throw CLIError(ExitCode.noInput, "no user \(name) in \(data)", hint: hint) }
        return credentials
    }

    /// `serve user rotate-key NAME`: a new API key, appended to the accounts log (a running server refuses the old key
    /// from its next request on); prints the key once.
    private static func rotateKey(_ context: Context, name: String, data: String) throws -> Int32 {
        var credentials = try accounts(holding: name, in: data)
        let key = try credentials.rotateKey(name)
        try credentials.save(directory: data)
        context.console.line("user \(name) has a new API key (shown once; the old one no longer works):")
        context.console.line(key)
        return ExitCode.ok
    }

    private static func addUser(_ context: Context, name: String, data: String) throws -> Int32 {
        try UserFiles.makeDirectory(data)
        var credentials = try Credentials.load(directory: data, create: true)
        let key: String
        do { key = try credentials.addUser(name) } catch let error as ServerError {
            throw CLIError(ExitCode.invalidInput, error.description)
        }
        try credentials.save(directory: data)
        try UserFiles.makeDirectory(data + "/users")
        context.console.line("user \(name) added; API key (shown once, only its hash is kept):")
        context.console.line(key)
        return ExitCode.ok
    }

    /// Account erasure: the key is revoked, then the user's whole ledger directory is removed under its writer lock (a
    /// running server closes the ledger once it sees the key gone); 75, with nothing changed, if the lock is not freed.
    private static func eraseUser(_ context: Context, name: String, data: String) throws -> Int32 {
        var credentials = try accounts(holding: name, in: data)
        guard context.arguments.has("yes") else {
            throw UsageError("erasing an account cannot be undone: pass --yes")
        }
        let directory = MoodServer.userDirectory(name, in: data)
        // The key is revoked first: a running server sees the account gone within moments, refuses its requests and
        // closes its ledger, releasing the writer lock this command then takes (waiting up to --wait, default 5 s).
        let account = credentials.users.first { $0.name == name }!
        _ = credentials.removeUser(name)
        try credentials.save(directory: data)
        if Ledger.exists(at: directory) {
            var options = Ledger.Options()
            options.snapshotOnCloseMinimum = .max
            options.lockWaitMilliseconds = try context.lockWaitMilliseconds() ?? 5_000
            let ledger: Ledger
            do { ledger = try Ledger.open(at: directory, options: options) } catch {
                credentials.restoreUser(account)  // nothing changed: the account is as it was
                try? credentials.save(directory: data)
                throw error
            }
            // The lock is held until the directory is gone: no writer can open the ledger in between.
            defer { ledger.close() }
            try UserFiles.removeTree(directory)
            try SystemIO().syncDirectory(data + "/users")  // the removal is durable
        }
        context.console.line("user \(name) erased: ledger directory removed, API key revoked")
        return ExitCode.ok
    }

    private static func token(_ context: Context, data: String) throws -> Int32 {
        guard let name = context.arguments.value("user") else { throw UsageError("serve token needs --user NAME") }
        let ttl = try seconds(context.arguments.value("ttl") ?? "1h")
        let credentials = try accounts(
            holding: name, in: data,
            hint: "add one with `moodledger serve user add \(name) --data \(data)`")
        context.console.line(
            credentials.token(for: name, now: context.baseOptions.clock() / 1000, ttl: ttl)!)
        return ExitCode.ok
    }

    /// `90`, `90s`, `15m`, `1h`, `7d` → seconds (1 s … 365 d).
    static func seconds(_ text: String) throws -> Int64 {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, let factor = units[last] {
            unit = factor
            digits = digits.dropLast()
        }
        let limit: Int64 = 365 * 86_400
        guard let value = Int64(digits), value > 0, value <= limit / unit else {
            throw MoodError.invalid("ttl", "must be a duration like 90s, 15m, 1h or 7d, at most 365d")
        }
        return value * unit
    }

    private static func run(_ context: Context, data: String) throws -> Int32 {
        try serve(context, configuration: MoodServer.Configuration(dataDirectory: data), label: "data \(data)")
    }

    /// Runs the server over PostgreSQL.
    static func serve(_ context: Context, store: PostgresStore) throws -> Int32 {
        var configuration = MoodServer.Configuration(dataDirectory: "")
        configuration.store = store
        return try ServePostgresCommands.failing {
            try serve(context, configuration: configuration, label: "store \(store.label)")
        }
    }

    private static func serve(
        _ context: Context, configuration: MoodServer.Configuration, label: String
    ) throws -> Int32 {
        var configuration = configuration
        if let host = context.arguments.value("host") { configuration.http.host = host }
        if let text = context.arguments.value("port") {
            configuration.http.port = try Context.integer(text, "port", in: UInt16.min...UInt16.max)
        }
        func count(_ name: String, _ range: ClosedRange<Int>) throws -> Int? {
            try context.arguments.value(name).map { try Context.integer($0, name, in: range) }
        }
        if let value = try count("writes-per-hour", 0...100_000_000) { configuration.writesPerHour = value }
        if let value = try count("write-burst", 1...100_000_000) { configuration.writeBurst = value }
        if let value = try count("reads-per-hour", 0...100_000_000) { configuration.readsPerHour = value }
        if let value = try count("erasures-per-hour", 0...100_000_000) { configuration.erasuresPerHour = value }
        if let value = try count("workers", 1...1024) { configuration.http.workers = value }
        if let value = try count("max-connections", 1...100_000) { configuration.http.maxConnections = value }
        if let value = try count("max-open-ledgers", 1...1_000_000) { configuration.maxOpenLedgers = value }
        let console = context.console
        configuration.log = { console.error("moodledger serve: \($0)") }
        let backend: MoodServer
        do { backend = try MoodServer(configuration: configuration) } catch let error as ServerError {
            switch error.code {
            case "locked": throw CLIError(ExitCode.locked, error.description)
            case "not_writable": throw CLIError(ExitCode.cannotCreate, error.description)
            case "schema_missing", "schema_older", "schema_newer": throw CLIError(ExitCode.config, error.description)
            default: throw CLIError(ExitCode.invalidInput, error.description)
            }
        }
        let server: HTTPServer
        do { server = try backend.start() } catch let error as Errno {
            throw CLIError(
                ExitCode.cannotCreate,
                "cannot listen on \(configuration.http.host):\(configuration.http.port): \(error)")
        }
        // SIGINT/SIGTERM: stop accepting, finish in-flight requests, close every ledger.
        let signals = TerminationSignals.observe { server.stop() }
        let host = configuration.http.host.contains(":") ? "[\(configuration.http.host)]" : configuration.http.host
        console.line("moodledger serve: listening on http://\(host):\(server.port) (\(label))")
        server.run(grace: 10)
        backend.close()
        signals.cancel()
        console.line("moodledger serve: stopped; every ledger closed")
        return ExitCode.ok
    }
}
