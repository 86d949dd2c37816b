import MoodLedger
import MoodLedgerSync

/// `remote set|show` and `sync [status|explain]`: delivering the outbox to a backend (`Specs/sync.md`).
enum SyncCommands {
    static let all: [CommandSpec] = [remote, sync]

    static let remote = CommandSpec(
        name: "remote", summary: "set or show the backend the outbox is delivered to",
        usage:
            "remote set URL --dialect mood-api|wellness|progress [--capabilities probe|none|LIST]\n       remote show [--at POINT]",
        values: ["dialect", "at", "capabilities"]
    ) { context in
        switch context.arguments.positionals.first {
        case "set"?:
            let url = try context.positional(1, "URL")
            guard context.arguments.positionals.count == 2 else { throw UsageError("remote set takes one URL") }
            let dialectText = context.arguments.value("dialect") ?? "mood-api"
            guard let dialect = RemoteDialect(rawValue: dialectText) else {
                throw UsageError("--dialect must be mood-api, wellness or progress, not \(dialectText)")
            }
            let capabilities = try context.arguments.value("capabilities").map {
                try Self.capabilities($0, dialect: dialect)
            }
            let parsed = try RemoteURL(url)
            let ledger = try context.openLedger(write: true)
            defer { ledger.close() }
            var config = RemoteConfig(url: parsed.description, dialect: dialect)
            _ = try ledger.execute { state, _ in
                let current = state.outbox.progress(.backend).remote
                if let capabilities {
                    config = RemoteConfig(
                        url: config.url, dialect: dialect, capabilities: capabilities ?? [],
                        source: capabilities == nil ? .unknown : .set)
                } else if let current, current.sameServer(as: config) {
                    config = current  // the same server: what was learned about it still holds
                }
                return (current == config ? [] : [.remoteConfigured(config)], .none, false)
            }
            if context.json {
                context.printJSON(Self.json(config))
            } else {
                context.console.line(Self.describe(config))
            }
            return ExitCode.ok
        case "show"?, nil:
            let ledger = try context.openLedger(write: false)
            defer { ledger.close() }
            let config = try context.read(ledger) { $0.outbox.progress(.backend).remote }
            if context.json {
                context.printJSON(config.map(Self.json) ?? .null)
            } else {
                context.console.line(
                    config.map(Self.describe)
                        ?? "no backend configured (moodledger remote set URL --dialect mood-api)")
            }
            return ExitCode.ok
        case let other?:
            throw UsageError("remote takes set or show, not \(other)")
        }
    }

    /// `--capabilities`: `probe` (ask the remote at the next sync: `nil`), `none`, or a comma-separated list.
    static func capabilities(_ text: String, dialect: RemoteDialect) throws -> RemoteCapabilities? {
        if text == "probe" { return nil }
        if text == "none" { return [] }
        var result: RemoteCapabilities = []
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let known = RemoteCapabilities.named.first(where: { $0.name == name }) else {
                throw UsageError(
                    "--capabilities takes probe, none or a list of "
                        + RemoteCapabilities.named.map(\.name).joined(separator: ", ") + "; \"\(name)\" is not one")
            }
            guard RemoteCapabilities.ceiling(dialect).contains(known.capability) else {
                throw UsageError(
                    "--capabilities: the \(dialect.rawValue) dialect cannot use \(known.name) "
                        + "(/api/v1/progress only creates records)")
            }
            result.insert(known.capability)
        }
        return result
    }

    static func describe(_ config: RemoteConfig) -> String {
        let what =
            config.capabilitySource == .unknown
            ? "capabilities not known yet: the next sync asks the server"
            : "capabilities \(config.capabilitySource.name): "
                + (config.capabilities.isEmpty
                    ? "none beyond the documented routes" : config.capabilities.names.joined(separator: ", "))
        return "backend: \(config.url) (\(config.dialect.rawValue)); \(what)"
    }

    static func json(_ config: RemoteConfig) -> JSONValue {
        .object([
            ("destination", .string(config.destination.rawValue)), ("url", .string(config.url)),
            ("dialect", .string(config.dialect.rawValue)),
            (
                "capabilities",
                config.capabilitySource == .unknown
                    ? .null
                    : .array(config.capabilities.names.map { .string($0) })
            ),
            ("capability_source", .string(config.capabilitySource.name))
        ])
    }

    static let sync = CommandSpec(
        name: "sync", summary: "deliver the outbox to the backend and pull its changes; status; explain one entry",
        usage:
            "sync [--once] [--now] [--retry-parked] [--dry-run] [--credentials FILE] [--concurrency N] [--ca-file FILE]"
            + " [--json]\n"
            + "       sync status [--at POINT] [--json]\n       sync explain ID [--at POINT] [--json]",
        values: ["credentials", "at", "concurrency", "ca-file"], flags: ["once", "dry-run", "now", "retry-parked"],
        details: """
            options:
              --once            one push pass and one pull (a push again only for what the pull re-queued)
              --now             send every pending item whatever its retry time (attempts still count)
              --retry-parked    release every parked item first (sync.released): due now, attempts counted afresh
              --dry-run         print the requests a run would send now, with their keys; append nothing
              --credentials F   read {"api_key", "token"} from F (0600) instead of the environment
              --concurrency N   requests in flight at once, 1 to 64 (default 8)
              --ca-file F       an https remote's CA certificate (PEM or DER), trusted besides the system's
                                store (Apple platforms; on Linux add it to the system's store)
              --at POINT        status and explain: as of a seq, an instant or a relative time
              --json            machine-readable output
            exit: 0 done (held items aside); 69 items left to retry or parked, or the pull failed (the attempts and
            failures are recorded even so); 75 another writer holds the ledger; 77 credentials refused; 78 no remote,
            a bad credentials file, or the remote's certificate or host name refused
            """
    ) { context in
        switch context.arguments.positionals.first {
        case "status"?: return try status(context)
        case "explain"?: return try explain(context)
        case nil: return try run(context)
        case let other?: throw UsageError("sync takes status or explain, not \(other)")
        }
    }

    private static func run(_ context: Context) throws -> Int32 {
        let ledger = try context.openLedger(write: !context.arguments.has("dry-run"))
        defer { ledger.close() }
        let source = SyncCredentials.Source(
            file: context.arguments.value("credentials"), environment: context.environment)
        var configuration = SyncEngine.Configuration()
        if let text = context.arguments.value("concurrency") {
            configuration.concurrency = try Context.integer(text, "concurrency", in: 1...64)
        }
        configuration.ignoreBackoff = context.arguments.has("now")
        configuration.caFile = context.arguments.value("ca-file")
        do {
            // Read the credentials once up front: a bad file stops the run before anything is appended.
            _ = try source.load()
            let engine = try SyncEngine(
                ledger: ledger, credentials: { () throws(SyncError) in try source.load() },
                configuration: configuration)
            if context.arguments.has("dry-run") {
                let requests = engine.plannedRequests()
                if context.json {
                    context.printJSON(
                        .array(
                            requests.map {
                                .object([
                                    ("method", .string($0.method)), ("path", .string($0.path)),
                                    ("idempotency_key", .optional($0.idempotencyKey) { .string($0) }),
                                    ("body_bytes", .int(Int64($0.body?.count ?? 0)))
                                ])
                            }))
                } else {
                    for request in requests {
                        context.console.line(
                            "\(request.method) \(request.path)"
                                + (request.idempotencyKey.map { "  Idempotency-Key: \($0)" } ?? "")
                                + (request.body.map { "  (\($0.count)-byte JSON body)" } ?? ""))
                    }
                    context.console.line(
                        "\(requests.count) request\(requests.count == 1 ? "" : "s") would be sent; nothing was sent or recorded"
                    )
                }
                return ExitCode.ok
            }
            if context.arguments.has("retry-parked") {
                let released = try ledger.releaseParked(for: .backend)
                context.console.error(
                    "moodledger sync: released \(released.count) parked item\(released.count == 1 ? "" : "s")")
            }
            let report = try engine.run(once: context.arguments.has("once"))
            if context.json { context.printJSON(report.json) } else { print(report, to: context) }
            return report.isComplete ? ExitCode.ok : ExitCode.unavailable
        } catch let error as SyncError {
            let code =
                error.code == .unauthorized
                ? ExitCode.noPermission : error.code == .unavailable ? ExitCode.unavailable : ExitCode.config
            throw CLIError(code, error.message + Self.hint(for: error))
        }
    }

    /// The command line's advice for a sync error (the library's messages give none).
    static func hint(for error: SyncError) -> String {
        switch error.code {
        case .unauthorized: return "; check MOODLEDGER_API_KEY and MOODLEDGER_TOKEN or --credentials FILE"
        case .config where error.message == "no backend is configured":
            return ": moodledger remote set URL --dialect mood-api|wellness|progress"
        default: return ""
        }
    }

    private static func print(_ report: SyncReport, to context: Context) {
        // Every sent item is counted once: sent = delivered + merged + re-queued + to retry + parked.
        context.console.line(
            "sent \(report.sent): \(report.delivered) delivered, \(report.merged) merged"
                + (report.requeuedAtPush > 0 ? ", \(report.requeuedAtPush) re-queued" : "")
                + ", \(report.retrying) to retry, \(report.parked) parked; "
                + "pulled \(report.pulled) change\(report.pulled == 1 ? "" : "s")"
                + (report.mergedAtPull > 0 ? " (\(report.mergedAtPull) merged)" : "")
                + (report.conflicts > 0 ? "; \(report.conflicts) with conflicts: `moodledger conflicts`" : "")
                + (report.requeued > report.requeuedAtPush
                    ? "; re-queued \(report.requeued - report.requeuedAtPush) the server lost" : ""))
        if let wentBack = report.wentBack {
            context.console.line("notice: \(wentBack) Each such entry is created there again from this device.")
        } else if report.serverWentBack {
            context.console.line(
                "notice: the server's revision went back (restored from a backup?): what it lacked was sent again")
        }
        let shown = 20
        for failure in report.failures.prefix(shown) {
            context.console.line(
                "  \(failure.entryID)  \(failure.parked ? "parked" : "retry")  \(ConsoleText.escaped(failure.error))")
        }
        if report.failures.count > shown { context.console.line("  and \(report.failures.count - shown) more") }
        if let error = report.pullError { context.console.line("pull failed: \(ConsoleText.escaped(error))") }
        if let skipped = report.pullSkipped { context.console.line("not pulled: \(skipped)") }
        if report.heldAfter > 0 {
            context.console.line(
                "held: \(report.heldAfter) change\(report.heldAfter == 1 ? "" : "s") this remote cannot carry (see `moodledger sync status`)"
            )
        }
        if report.pendingAfter > 0 || report.parkedAfter > 0 {
            context.console.line(
                "outbox: \(report.pendingAfter) pending, \(report.parkedAfter) parked"
                    + (report.nextAttemptAt.map {
                        "; next retry at \(ISO8601.format(milliseconds: $0, offsetMinutes: 0))"
                    } ?? "")
                    + " (see `moodledger sync status`)")
        }
    }

    private static func status(_ context: Context) throws -> Int32 {
        guard context.arguments.positionals.count == 1 else { throw UsageError("sync status takes no argument") }
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        let clock = context.arguments.value("at") == nil ? context.baseOptions.clock() : nil
        let statuses = try context.read(ledger) { state in SyncStatus.of(state, now: clock ?? state.recordedAt / 1000) }
        if context.json {
            context.printJSON(.array(statuses.map(\.json)))
        } else {
            for status in statuses { context.console.line(ConsoleText.escaped(status.text, keepingLineBreaks: true)) }
        }
        return ExitCode.ok
    }

    private static func explain(_ context: Context) throws -> Int32 {
        guard context.arguments.positionals.count == 2 else { throw UsageError("sync explain takes one entry ID") }
        let ledger = try context.openLedger(write: false)
        defer { ledger.close() }
        let id = try context.entryID(1, in: ledger, includingPast: true)
        var point: Ledger.Point?
        if let text = context.arguments.value("at") {
            point = try Context.point(text)
            if case .seq(let seq)? = point, seq > ledger.lastSeq {
                throw CLIError(
                    ExitCode.invalidInput, "--at \(seq) is past the end of the log (the last seq is \(ledger.lastSeq))")
            }
        }
        let story = try SyncExplanation.explain(id, in: ledger, at: point)
        if story.steps.isEmpty && story.status == "unknown" {
            throw CLIError(ExitCode.noInput, "no event names entry \(id)")
        }
        if context.json {
            context.printJSON(story.json)
        } else {
            // What a server said (errors, ids) is shown, never obeyed: control characters as escapes.
            context.console.line(ConsoleText.escaped(story.text, keepingLineBreaks: true))
        }
        return ExitCode.ok
    }
}
