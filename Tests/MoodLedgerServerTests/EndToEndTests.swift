import Foundation
import MoodLedger
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerServer

/// The built `moodledger serve` as a user runs it, killed with SIGKILL under load and restarted.
@Suite("moodledger serve end to end", .serialized)
struct EndToEndTests {
    /// Runs `moodledger ARGS`, returning stdout.
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Repository.executable("moodledger"))
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Starts the server (`options` after the data directory, port and rate limits); returns the process and its port
    /// once it listens.
    static func start(_ data: String, options: [String] = []) throws -> (Process, UInt16) {
        try ServeProcess.start(data, options: options)
    }

    static func call(
        _ port: UInt16, _ method: String, _ target: String, auth: [String], json: String? = nil
    ) throws -> RawResponse {
        var head =
            "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            + auth.map { $0 + "\r\n" }.joined()
        if let json { head += "Content-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\n" }
        let client = try RawClient(port: port)
        defer { client.close() }
        try client.send(head + "\r\n" + (json ?? ""))
        return try client.readResponse()
    }

    @Test(
        "Every route through the real binary; SIGKILL mid-load, restart: every acknowledged write is there, nothing else"
    )
    func killUnderLoad() throws {
        let dir = TemporaryDirectory("serve-e2e")
        let data = dir.sub("data")
        let key = try Self.run(["serve", "user", "add", "alice", "--data", data]).split(separator: "\n").last.map(
            String.init)!
        let token = try Self.run(["serve", "token", "--user", "alice", "--data", data]).trimmingCharacters(
            in: .whitespacesAndNewlines)
        let auth = ["X-API-Key: \(key)", "Authorization: Bearer \(token)"]
        #expect(
            try FileManager.default.attributesOfItem(atPath: data + "/accounts/events.log")[.posixPermissions] as? Int
                == 0o600)
        #expect(
            try FileManager.default.attributesOfItem(atPath: data + "/accounts")[.posixPermissions] as? Int == 0o700)
        var (server, port) = try Self.start(data)
        // Every route once.
        let created = try Self.call(
            port, "POST", "/api/v1/mood", auth: auth, json: #"{"valence":0.5,"labels":["calm"],"notes":"first"}"#)
        #expect(created.status == 201)
        let id = created.data["id"]!.stringValue!
        for target in [
            "/api/v1/mood", "/api/v1/mood/\(id)", "/api/v1/mood/trends", "/api/v1/mood/analytics/labels",
            "/api/v1/mood/analytics/associations", "/api/v1/mood/changes?since=0", "/api/v1/wellness/mood-entries",
            "/api/v1/wellness/mood-entries/\(id)", "/api/v1/wellness/mood-entries/analytics", "/api/v1/progress"
        ] {
            #expect(try Self.call(port, "GET", target, auth: auth).status == 200, "\(target)")
        }
        #expect(try Self.call(port, "PUT", "/api/v1/mood/\(id)", auth: auth, json: #"{"valence":0.7}"#).status == 200)
        #expect(try Self.call(port, "DELETE", "/api/v1/mood/\(id)", auth: auth).status == 204)
        #expect(
            try Self.call(port, "POST", "/api/v1/progress", auth: auth, json: #"{"type":"mood_score","quantity":6}"#)
                .status == 201)

        // Load from 8 threads, then SIGKILL while requests are in flight.
        let acknowledged = Mutex<Set<String>>([])
        let sent = Mutex<Set<String>>([])
        let stop = Atomic<Bool>(false)
        let loadPort = port
        let group = onDedicatedThreads(8) { thread in
            var n = 0
            while !stop.load(ordering: .relaxed) {
                let source = "load-\(thread)-\(n)"
                n += 1
                sent.withLock { _ = $0.insert(source) }
                let body = #"{"valence":0.1,"labels":["calm"],"source":"import","source_id":"\#(source)"}"#
                guard let response = try? Self.call(loadPort, "POST", "/api/v1/mood", auth: auth, json: body) else {
                    continue
                }
                if response.status == 201 { acknowledged.withLock { _ = $0.insert(source) } }
            }
        }
        // Kill once the load is well under way (a busy CI machine gets up to 30 s to get there).
        waitUntil(seconds: 30) { acknowledged.withLock { $0.count } >= 50 }
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilGone()
        stop.store(true, ordering: .relaxed)
        group.wait()
        let acked = acknowledged.withLock { $0 }
        #expect(acked.count >= 50, "the load ran: \(acked.count) acknowledged")

        (server, port) = try Self.start(data)
        defer { server.terminate(); server.waitUntilGone() }
        var present: Set<String> = []
        var offset = 0
        while true {
            let page = try Self.call(
                port, "GET", "/api/v1/mood?from=2000-01-01&to=2100-01-01&source=import&limit=100&offset=\(offset)",
                auth: auth)
            for entry in page.data["entries"]?.arrayValue ?? [] { present.insert(entry["source_id"]!.stringValue!) }
            offset += 100
            if page.data["has_more"] != .bool(true) { break }
        }
        #expect(acked.isSubset(of: present), "lost: \(acked.subtracting(present).sorted().prefix(5))")
        #expect(present.isSubset(of: sent.withLock { $0 }), "nothing that was never sent")
        // The server's graceful stop (SIGTERM) closes the ledgers: its exit status is 0.
        server.terminate()
        server.waitUntilExit()
        #expect(server.terminationStatus == 0)
    }
}

@Suite("Accounts change while the server runs", .serialized)
struct LiveAccountTests {
    static func credentials(_ user: String, data: String) throws -> [String] {
        let key = try EndToEndTests.run(["serve", "user", "add", user, "--data", data]).split(separator: "\n").last.map(
            String.init)!
        let token = try EndToEndTests.run(["serve", "token", "--user", user, "--data", data]).trimmingCharacters(
            in: .whitespacesAndNewlines)
        return ["X-API-Key: \(key)", "Authorization: Bearer \(token)"]
    }

    @Test(
        "An account added while serving signs in at once; one erased while its ledger is open is refused at once, its directory gone and not recreated"
    )
    func addAndEraseWhileServing() throws {
        let dir = TemporaryDirectory("serve-accounts")
        let data = dir.sub("data")
        _ = try Self.credentials("alice", data: data)
        let (server, port) = try EndToEndTests.start(data)
        defer { server.terminate(); server.waitUntilGone() }
        let carol = try Self.credentials("carol", data: data)
        let created = try EndToEndTests.call(
            port, "POST", "/api/v1/mood", auth: carol, json: #"{"valence":0.4,"labels":["calm"]}"#)
        #expect(created.status == 201, "carol, added while the server runs, is served without a restart")
        let erase = try Tool.run(["serve", "user", "erase", "carol", "--data", data, "--yes"])
        #expect(erase.code == 0, "\(erase.err)")
        #expect(!FileManager.default.fileExists(atPath: data + "/users/carol"))
        let after = try EndToEndTests.call(
            port, "POST", "/api/v1/mood", auth: carol, json: #"{"valence":0.1,"labels":["calm"]}"#)
        #expect(after.status == 401)
        #expect(
            !FileManager.default.fileExists(atPath: data + "/users/carol"),
            "an erased account's data does not come back")
    }

    @Test("An account erased and added again: tokens issued before are refused with the new key; refusals read alike")
    func tokensDieWithTheirKey() throws {
        let dir = TemporaryDirectory("serve-token-key")
        let data = dir.sub("data")
        let before = try Self.credentials("erin", data: data)
        let (server, port) = try EndToEndTests.start(data)
        defer { server.terminate(); server.waitUntilGone() }
        #expect(try EndToEndTests.call(port, "GET", "/api/v1/mood", auth: before).status == 200)
        #expect(try Tool.run(["serve", "user", "erase", "erin", "--data", data, "--yes"]).code == 0)
        let after = try Self.credentials("erin", data: data)
        #expect(try EndToEndTests.call(port, "GET", "/api/v1/mood", auth: [after[0], before[1]]).status == 401)
        #expect(try EndToEndTests.call(port, "GET", "/api/v1/mood", auth: after).status == 200)
        // A garbage key with a real token, a real key with a forged token, an old token: one answer, word for word.
        let forged = after[1].dropLast(2) + (after[1].hasSuffix("AA") ? "BB" : "AA")
        let answers = try [
            ["X-API-Key: mlk_0000", after[1]], [after[0], String(forged)], [after[0], before[1]]
        ].map { try EndToEndTests.call(port, "GET", "/api/v1/mood", auth: $0) }
        #expect(answers.allSatisfy { $0.status == 401 })
        #expect(Set(answers.map(\.text)).count == 1, "\(answers.map(\.text))")
    }

    @Test("Every answer names the account; an account erased and added again under its name is another account")
    func accountIdentity() throws {
        let dir = TemporaryDirectory("serve-account-identity")
        let data = dir.sub("data")
        let before = try Self.credentials("fay", data: data)
        let (server, port) = try EndToEndTests.start(data)
        defer { server.terminate(); server.waitUntilGone() }
        let first = try EndToEndTests.call(port, "GET", "/api/v1/mood", auth: before)
        let account = try #require(first.header("MoodLedger-Account"))
        #expect(account.count == 32 && account.allSatisfy(\.isHexDigit), "\(account)")
        #expect(
            try EndToEndTests.call(port, "GET", "/api/v1/mood", auth: before).header("MoodLedger-Account") == account)
        #expect(try Tool.run(["serve", "user", "erase", "fay", "--data", data, "--yes"]).code == 0)
        let after = try Self.credentials("fay", data: data)
        let again = try EndToEndTests.call(
            port, "POST", "/api/v1/mood", auth: after, json: #"{"valence":0.1,"labels":["calm"]}"#)
        #expect(again.status == 201)
        let other = try #require(again.header("MoodLedger-Account"))
        #expect(other != account, "a new account under the same name has another identity")
    }

    @Test(
        "A key rotated while serving: the old key and every token issued for it are refused from the next request; the new pair is served, the data stays"
    )
    func rotateKeyWhileServing() throws {
        let dir = TemporaryDirectory("serve-rotate")
        let data = dir.sub("data")
        let old = try Self.credentials("dora", data: data)
        let (server, port) = try EndToEndTests.start(data)
        defer { server.terminate(); server.waitUntilGone() }
        #expect(
            try EndToEndTests.call(port, "POST", "/api/v1/mood", auth: old, json: #"{"valence":0.4,"labels":["calm"]}"#)
                .status == 201)
        let rotated = try Tool.run(["serve", "user", "rotate-key", "dora", "--data", data])
        #expect(rotated.code == 0, "\(rotated.err)")
        let key = try #require(rotated.out.split(separator: "\n").last.map(String.init))
        #expect(try EndToEndTests.call(port, "GET", "/api/v1/mood?from=2000-01-01", auth: old).status == 401)
        // A token issued before the rotation died with the old key, even paired with the new one.
        #expect(
            try EndToEndTests.call(port, "GET", "/api/v1/mood?from=2000-01-01", auth: ["X-API-Key: \(key)", old[1]])
                .status == 401)
        let token = try Tool.run(["serve", "token", "--user", "dora", "--data", data]).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let fresh = ["X-API-Key: \(key)", "Authorization: Bearer \(token)"]
        let listed = try EndToEndTests.call(port, "GET", "/api/v1/mood?from=2000-01-01", auth: fresh)
        #expect(listed.status == 200 && listed.data["entries"]?.arrayValue?.count == 1, "\(listed)")
        #expect(try Tool.run(["serve", "user", "rotate-key", "nobody", "--data", data]).code == 66)
    }
}

@Suite("One server per data directory", .serialized)
struct ServerLockTests {
    @Test(
        "A second serve on the same directory exits 75 naming the first's pid; the first serves on; a stopped one frees it"
    )
    func secondServerRefused() throws {
        let dir = TemporaryDirectory("serve-twice")
        let data = dir.sub("data")
        let alice = try LiveAccountTests.credentials("alice", data: data)
        let (first, port) = try EndToEndTests.start(data)
        let second = try Tool.run(["serve", "--data", data, "--port", "0"])
        #expect(second.code == 75, "\(second.err)")
        #expect(
            second.err.contains("another moodledger serve (pid \(first.processIdentifier)) is serving"), "\(second.err)"
        )
        #expect(
            try EndToEndTests.call(
                port, "POST", "/api/v1/mood", auth: alice, json: #"{"valence":0.4,"labels":["calm"]}"#
            )
            .status == 201, "the first server is untouched")
        #expect(ServeProcess.stop(first), "SIGTERM stops the first server")
        let (again, againPort) = try EndToEndTests.start(data)
        // Served, so it holds the lock the first released (and its signal handling is live before the SIGTERM).
        #expect(
            try EndToEndTests.call(againPort, "GET", "/api/v1/mood", auth: alice).status == 200,
            "the lock went with the first server")
        #expect(ServeProcess.stop(again) && again.terminationStatus == 0)
    }

    @Test("SIGTERM the moment the server says it listens: a graceful stop (exit 0) every time, never a lost signal")
    func signalAtOnce() throws {
        let dir = TemporaryDirectory("serve-signal")
        _ = try LiveAccountTests.credentials("alice", data: dir.sub("data"))
        for attempt in 0..<5 {
            let (server, _) = try EndToEndTests.start(dir.sub("data"))
            #expect(ServeProcess.stop(server, within: 10), "attempt \(attempt): the signal was heard")
            #expect(server.terminationStatus == 0, "attempt \(attempt): exit \(server.terminationStatus)")
        }
    }

    @Test("A data directory the server cannot write is refused at start (exit 73), not one request at a time")
    func readOnlyDirectoryRefused() throws {
        guard getuid() != 0 else {
            // Root writes through 0500; a read-only mount needs privileges a test should not take.
            print("skipped: running as root, which writes through a 0500 directory")
            return
        }
        let dir = TemporaryDirectory("serve-read-only")
        let data = dir.sub("data")
        _ = try LiveAccountTests.credentials("alice", data: data)
        chmod(data, 0o500)
        defer { chmod(data, 0o700) }
        let refused = try Tool.run(["serve", "--data", data, "--port", "0"])
        #expect(refused.code == 73 && refused.err.contains("cannot write the data directory"), "\(refused.err)")
    }

    @Test("In process: a second MoodServer over one directory is refused with the code `locked`; close releases it")
    func inProcess() throws {
        let dir = TemporaryDirectory("serve-lock-in-process")
        let first = try MoodServer(configuration: MoodServer.Configuration(dataDirectory: dir.path))
        #expect(throws: ServerError.self) {
            try MoodServer(configuration: MoodServer.Configuration(dataDirectory: dir.path))
        }
        do {
            _ = try MoodServer(configuration: MoodServer.Configuration(dataDirectory: dir.path))
        } catch let error as ServerError {
            #expect(error.code == "locked")
        }
        first.close()
        let second = try MoodServer(configuration: MoodServer.Configuration(dataDirectory: dir.path))
        second.close()
    }
}

@Suite("A log line that cannot be written", .serialized)
struct UnwritableLogTests {
    @Test("serve with stderr on /dev/full or a closed pipe: the lines are dropped, every request is still answered")
    func serverOutlivesItsLog() throws {
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        let closedPipe = Pipe()
        try closedPipe.fileHandleForReading.close()
        for (name, stderr) in [("/dev/full", full as Any), ("a closed pipe", closedPipe as Any)] {
            let dir = TemporaryDirectory("serve-unwritable-log")
            let data = dir.sub("data")
            let alice = try LiveAccountTests.credentials("alice", data: data)
            let (server, port) = try ServeProcess.start(data, stderr: stderr)
            defer { ServeProcess.stop(server) }
            #expect(
                try EndToEndTests.call(port, "POST", "/api/v1/mood", auth: alice, json: #"{"valence":0.4}"#)
                    .status == 201)
            // Erasing an open account makes the server log "account alice is gone" on the next request.
            #expect(try Tool.run(["serve", "user", "erase", "alice", "--data", data, "--yes"]).code == 0)
            #expect(try EndToEndTests.call(port, "GET", "/api/v1/mood", auth: alice).status == 401)
            let bob = try LiveAccountTests.credentials("bob", data: data)
            for _ in 0..<3 {
                #expect(
                    try EndToEndTests.call(port, "POST", "/api/v1/mood", auth: bob, json: #"{"valence":0.2}"#)
                        .status == 201, "with stderr on \(name)")
            }
            #expect(server.isRunning, "with stderr on \(name)")
        }
    }
}

@Suite("serve refuses what it cannot use, in words", .serialized)
struct ServeRefusalTests {
    @Test("serve on a data directory it cannot write (a read-only mount) exits 73, as server.md says")
    func readOnlyDataDirectory() throws {
        let dir = TemporaryDirectory("serve-read-only")
        let mountPoint = dir.sub("ro")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        // A read-only tmpfs: root writes through permission bits, not through a read-only mount.
        let mount = try Tool.run(["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", mountPoint], executable: "/bin/mount")
        guard mount.code == 0 else {
            print("no read-only mount here (\(mount.err)); the exit code is checked through a file instead")
            let file = dir.sub("a-file")
            #expect(FileManager.default.createFile(atPath: file, contents: Data()))
            #expect(try Tool.run(["serve", "--data", file + "/data", "--port", "0"]).code == 73)
            return
        }
        defer { _ = try? Tool.run([mountPoint], executable: "/bin/umount") }
        let outcome = try Tool.run(["serve", "--data", mountPoint, "--port", "0"])
        #expect(outcome.code == 73, "\(outcome.err)")
        #expect(outcome.err.contains("cannot write the data directory"), "\(outcome.err)")
    }

    @Test("serve user import: a bad name is shown escaped and cut, never as raw escapes or a 5 MB line")
    func importEchoesNothingRaw() throws {
        let dir = TemporaryDirectory("serve-import-echo")
        for (name, text) in [
            ("escape", "alice\n\u{1B}[31mevil\u{1B}[0m\n"),
            ("long", "bob\n" + String(repeating: "a", count: 5_000_000) + "\n")
        ] {
            let file = dir.sub(name + ".txt")
            try text.write(toFile: file, atomically: true, encoding: .utf8)
            let outcome = try Tool.run(["serve", "user", "import", file, "--data", dir.sub("data-" + name)])
            #expect(outcome.code == 65, "\(outcome.err)")
            #expect(!outcome.err.contains("\u{1B}"), "no raw escape sequence")
            #expect(outcome.err.utf8.count < 400, "\(outcome.err.utf8.count) bytes on stderr")
            #expect(outcome.err.contains("line 2") && outcome.err.contains("no account was added"))
        }
    }
}
