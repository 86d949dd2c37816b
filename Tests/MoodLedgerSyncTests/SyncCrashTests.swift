import Foundation
import MoodLedger
import MoodLedgerSync
import TestSupport
import Testing

@Suite("Sync across a crash (the built binary, SIGKILL)")
struct SyncCrashTests {
    /// Runs the built `moodledger` with arguments; returns the process (started) and its output pipe.
    static func start(_ arguments: [String], environment: [String: String]) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Repository.executable("moodledger"))
        process.arguments = arguments
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        return (process, pipe)
    }

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
        let (process, pipe) = try start(arguments, environment: environment)
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    /// A device with three entries whose remote is a proxy before a real server that holds the answer to the first
    /// request for 30 s; `sync` started with `arguments` and killed with SIGKILL once the server has answered it.
    /// - Returns: the server (running), the proxy, the device's ledger, and the environment with credentials.
    static func killedWhileAnswerHeld(
        _ dir: TemporaryDirectory, capabilities: String, arguments: [String] = []
    ) throws -> (SyncServer, FaultProxy, String, [String: String]) {
        let server = try SyncServer(dir: dir.sub("server"))
        // The server commits the first request; its answer is held long enough for the kill.
        let proxy = try FaultProxy(upstream: server.port) { index, _, _ in
            index == 0 ? .delay(milliseconds: 30_000) : .relay
        }
        let ledger = dir.sub("device")
        #expect(try Self.run(["init", "--ledger", ledger]).0 == 0)
        for valence in ["0.3", "-0.4", "0.7"] {
            #expect(try Self.run(["log", "--valence", valence, "--label", "calm", "--ledger", ledger]).0 == 0)
        }
        #expect(
            try Self.run([
                "remote", "set", proxy.url, "--dialect", "mood-api", "--capabilities", capabilities, "--ledger", ledger
            ]).0 == 0)
        let credentials = server.credentials
        let environment = ["MOODLEDGER_API_KEY": credentials.apiKey!, "MOODLEDGER_TOKEN": credentials.token!]
        let (process, _) = try Self.start(["sync"] + arguments + ["--ledger", ledger], environment: environment)
        // Wait until the server has answered the first request (the proxy holds that answer), then kill.
        waitUntil(seconds: 20) { proxy.requests.first?.status != nil }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        return (server, proxy, ledger, environment)
    }

    @Test(
        "Killed between sync.attempted and its outcome: the restart resends with the same key, no duplicate, the queue drains"
    )
    func killedInFlight() throws {
        let dir = TemporaryDirectory("sync-kill")
        let (server, proxy, ledger, environment) = try Self.killedWhileAnswerHeld(
            dir, capabilities: "changes,revisions,update,delete,extensions", arguments: ["--concurrency", "1"])
        defer { server.stop(); proxy.stop() }
        #expect(proxy.requests.first?.status == 201)

        // The log shows the item in flight; explain says what happens next.
        let (_, status) = try Self.run(["sync", "status", "--json", "--ledger", ledger])
        #expect(status.contains("\"in_flight\": 3"), "\(status)")
        let firstKey = try #require(proxy.requests.first?.idempotencyKey)
        let id = String(firstKey.prefix(36))
        let (_, story) = try Self.run(["sync", "explain", id, "--ledger", ledger])
        #expect(story.contains("same Idempotency-Key \(firstKey)"), "\(story)")

        let (code, output) = try Self.run(["sync", "--ledger", ledger], environment: environment)
        #expect(code == 0, "\(output)")
        let resent = proxy.requests.dropFirst().filter { $0.idempotencyKey == firstKey }
        #expect(resent.count == 1 && resent.first?.replayed == true)
        server.stop()
        let onServer = try server.entries()
        #expect(onServer.count == 3 && Set(onServer.map(\.id)).count == 3)
        let (_, outbox) = try Self.run(["outbox", "--json", "--ledger", ledger])
        #expect(outbox.contains("\"backend\"") == false, "\(outbox)")
    }

    @Test(
        "Killed while a batch request's answer is on its way: the restart resends the batch with its keys: nothing created twice"
    )
    func killedMidBatch() throws {
        let dir = TemporaryDirectory("sync-kill-batch")
        let (server, proxy, ledger, environment) = try Self.killedWhileAnswerHeld(
            dir, capabilities: "changes,revisions,update,delete,extensions,batch")
        defer { server.stop(); proxy.stop() }
        #expect(proxy.requests.first?.status == 200 && proxy.requests.first?.path == "/api/v1/mood/batch")
        let (_, status) = try Self.run(["sync", "status", "--json", "--ledger", ledger])
        #expect(status.contains("\"in_flight\": 3"), "\(status)")

        let (code, output) = try Self.run(["sync", "--json", "--ledger", ledger], environment: environment)
        #expect(code == 0 && output.contains("\"delivered\": 3"), "\(output)")
        #expect(proxy.requests.dropFirst().filter { $0.path == "/api/v1/mood/batch" }.count == 1)
        server.stop()
        let onServer = try server.entries()
        #expect(onServer.count == 3 && Set(onServer.map(\.id)).count == 3)
    }

    @Test(
        "CLI manners: no remote → 78; a credentials file not 0600 → 78; refused credentials → 77; --dry-run appends nothing"
    )
    func manners() throws {
        let dir = TemporaryDirectory("sync-cli")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let ledger = dir.sub("device")
        _ = try Self.run(["init", "--ledger", ledger])
        #expect(
            try Self.run(["log", "--valence", "0.3", "--label", "calm", "--note", "secret words", "--ledger", ledger]).0
                == 0)
        #expect(try Self.run(["sync", "--ledger", ledger]).0 == 78)
        #expect(try Self.run(["remote", "set", "ftp://x", "--ledger", ledger]).0 == 65)
        #expect(try Self.run(["remote", "set", server.url, "--dialect", "carrier-pigeon", "--ledger", ledger]).0 == 64)
        #expect(try Self.run(["remote", "set", server.url, "--ledger", ledger]).0 == 0)
        let (_, shown) = try Self.run(["remote", "show", "--json", "--ledger", ledger])
        #expect(shown.contains(server.url) && shown.contains("mood-api"))
        let file = dir.sub("credentials.json")
        let credentials = server.credentials
        try #"{"api_key": "\#(credentials.apiKey!)", "token": "\#(credentials.token!)"}"#.write(
            toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o644)
        let (loose, looseOutput) = try Self.run(["sync", "--credentials", file, "--ledger", ledger])
        #expect(loose == 78 && looseOutput.contains("chmod 600"))
        #expect(!looseOutput.contains(credentials.apiKey!))
        chmod(file, 0o600)
        let before = try Self.run(["events", "--json", "--ledger", ledger]).1
        let (dry, plan) = try Self.run(["sync", "--dry-run", "--credentials", file, "--ledger", ledger])
        #expect(dry == 0 && plan.contains("POST /api/v1/mood"), "\(plan)")
        #expect(try Self.run(["events", "--json", "--ledger", ledger]).1 == before)
        let (refused, refusedOutput) = try Self.run(
            ["sync", "--ledger", ledger],
            environment: ["MOODLEDGER_API_KEY": "mlk_nope", "MOODLEDGER_TOKEN": "x.y.z"])
        #expect(refused == 77 && refusedOutput.contains("refused the credentials"))
        #expect(!refusedOutput.contains("mlk_nope"))
        let (ok, okOutput) = try Self.run(["sync", "--credentials", file, "--ledger", ledger])
        #expect(ok == 0, "\(okOutput)")
        // Credentials never reach the log, and neither do notes reach an error.
        let log = try Data(contentsOf: URL(fileURLWithPath: ledger + "/events.log"))
        #expect(
            log.range(of: Data(credentials.apiKey!.utf8)) == nil && log.range(of: Data(credentials.token!.utf8)) == nil)
        #expect(!refusedOutput.contains("secret words"))
    }
}
