import Foundation
import MoodLedger
import MoodLedgerServer
import Platform

/// `serve --store postgresql://…`: the reference backend over PostgreSQL (`Specs/server.md`, *PostgreSQL*): `init`,
/// the server itself, its accounts and tokens, and `serve migrate --from DIR --to URL`.
enum ServePostgresCommands {
    static func run(_ context: Context, url: String) throws -> Int32 {
        let store = try open(context, url)
        defer { store.pool.close() }
        let positionals = context.arguments.positionals
        switch positionals.first {
        case nil: return try ServeCommand.serve(context, store: store)
        case "init":
            let before = try failing { try store.initialize() }
            let ready = "schema version \(PostgresStore.schemaVersion) ready in \(store.label)"
            switch before {
            case 0: context.console.line("moodledger serve: \(ready) (created)")
            case PostgresStore.schemaVersion: context.console.line("moodledger serve: \(ready) (unchanged)")
            default: context.console.line("moodledger serve: \(ready) (migrated from version \(before))")
            }
            return ExitCode.ok
        case "user":
            guard positionals.count == 3, ["add", "erase", "rotate-key"].contains(positionals[1]) else {
                throw UsageError("usage: serve user add|erase|rotate-key NAME --store URL")
            }
            let name = positionals[2]
            try failing { try store.checkSchema() }
            switch positionals[1] {
            case "add":
                let key = try failing { try store.addUser(name) }
                context.console.line("user \(name) added; API key (shown once, only its hash is kept):")
                context.console.line(key)
            case "rotate-key":
                let key = try failing { try store.rotateKey(name) }
                context.console.line("user \(name) has a new API key (shown once; the old one no longer works):")
                context.console.line(key)
            default:
                guard context.arguments.has("yes") else {
                    throw UsageError("erasing an account cannot be undone: pass --yes")
                }
                try failing { try store.eraseUser(name) }
                context.console.line("user \(name) erased: every event row deleted, API key revoked")
            }
            return ExitCode.ok
        case "token":
            guard let name = context.arguments.value("user") else { throw UsageError("serve token needs --user NAME") }
            let ttl = try ServeCommand.seconds(context.arguments.value("ttl") ?? "1h")
            let credentials = try failing { try store.credentials() }
            guard let token = credentials.token(for: name, now: context.baseOptions.clock() / 1000, ttl: ttl) else {
                throw CLIError(ExitCode.noInput, "no user \(name) in \(store.label)")
            }
            context.console.line(token)
            return ExitCode.ok
        case let other?: throw UsageError("serve --store takes no argument \(other) (init, user, token)")
        }
    }

    /// `serve migrate --from DIR --to URL` (a data directory into PostgreSQL) or `--from URL --to DIR` (back).
    static func migrate(_ context: Context) throws -> Int32 {
        guard let from = context.arguments.value("from"), let to = context.arguments.value("to") else {
            throw UsageError("usage: serve migrate --from DIR --to postgresql://… (or --from postgresql://… --to DIR)")
        }
        guard isURL(from) != isURL(to) else {
            throw UsageError("serve migrate moves between a data directory and a postgresql:// store")
        }
        let store = try open(context, isURL(to) ? to : from)
        defer { store.pool.close() }
        let report = try failing { isURL(to) ? try store.migrate(from: from) : try store.export(to: to) }
        for line in report { context.console.line(line) }
        return ExitCode.ok
    }

    static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://") || text.contains("=")
    }

    private static func open(_ context: Context, _ url: String) throws -> PostgresStore {
        do { return try PostgresStore(url: url, environment: context.environment) } catch let error as PostgresError {
            throw CLIError(ExitCode.config, error.description)
        }
    }

    /// Runs `body`, turning the store's errors into the CLI's exit codes: 69 for a database that cannot be reached,
    /// 77 for refused credentials, 78 for a setting or schema to fix, 65 for a bad name.
    static func failing<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as PostgresError {
            switch error.kind {
            case .unavailable: throw CLIError(ExitCode.unavailable, error.description)
            case .authentication: throw CLIError(ExitCode.noPermission, error.description)
            case .configuration: throw CLIError(ExitCode.config, error.description)
            case .server, .protocolViolation: throw CLIError(ExitCode.ioError, error.description)
            }
        } catch let error as ServerError {
            switch error.code {
            case "schema_missing", "schema_older", "schema_newer": throw CLIError(ExitCode.config, error.description)
            case "not_found": throw CLIError(ExitCode.noInput, error.description)
            default: throw CLIError(ExitCode.invalidInput, error.description)
            }
        }
    }
}
