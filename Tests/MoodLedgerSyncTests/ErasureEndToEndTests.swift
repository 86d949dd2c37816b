import Foundation
import MoodLedger
import MoodLedgerCLI
import MoodLedgerSync
import TestSupport
import Testing

@Suite("Erasure end to end with moodledger serve")
struct ErasureEndToEndTests {
    static func cli(_ arguments: [String], _ environment: [String: String] = [:]) -> (Int32, String) {
        let output = CapturedOutput()
        var options = CLI.defaultOptions
        // Not 0: other tests spawn child processes, and for a moment after a fork a child holds this process's
        // descriptors, the ledger's lock among them.
        options.lockWaitMilliseconds = 2000
        let code = CLI.run(arguments, environment: environment, console: output.console(), options: options)
        return (code, output.out + output.err)
    }

    static func filesContaining(_ needle: String, in directory: String) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: directory)
        var hits: [String] = []
        while let name = enumerator?.nextObject() as? String {
            let path = directory + "/" + name
            if let data = FileManager.default.contents(atPath: path), data.range(of: Data(needle.utf8)) != nil {
                hits.append(path)
            }
        }
        return hits
    }

    @Test("erase of a synced entry: the delete (and the erasure) reach the server first, then the local data is gone")
    func syncedEntry() throws {
        let dir = TemporaryDirectory("erase-e2e")
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let ledger = dir.sub("device")
        let credentials = server.credentials
        let env = ["MOODLEDGER_API_KEY": credentials.apiKey!, "MOODLEDGER_TOKEN": credentials.token!]
        #expect(Self.cli(["init", "--ledger", ledger]).0 == 0)
        let (_, id) = Self.cli([
            "log", "--valence", "0.4", "--label", "calm", "--note", "server secret note", "--ledger", ledger
        ])
        let entry = id.trimmingCharacters(in: .whitespacesAndNewlines)
        _ = Self.cli(["log", "--valence", "0.1", "--label", "calm", "--note", "keep me", "--ledger", ledger])
        #expect(Self.cli(["remote", "set", server.url, "--ledger", ledger]).0 == 0)
        #expect(Self.cli(["sync", "--ledger", ledger], env).0 == 0)
        #expect(!Self.filesContaining("server secret note", in: dir.sub("server")).isEmpty)
        let (code, output) = Self.cli(["erase", entry, "--yes", "--reason", "user request", "--ledger", ledger], env)
        #expect(code == 0, "\(output)")
        #expect(Self.filesContaining("server secret note", in: ledger).isEmpty)
        #expect(!Self.filesContaining("keep me", in: ledger).isEmpty)
        #expect(Self.cli(["verify", "--ledger", ledger]).0 == 0)
        let (_, history) = Self.cli(["history", entry, "--ledger", ledger])
        #expect(history.contains("erased at") && history.contains("(user request)"))
        server.stop()
        #expect(try server.entries().map(\.id.description) != [entry])
        #expect(Self.filesContaining("server secret note", in: dir.sub("server")).isEmpty, "erased at the server too")
        #expect(!Self.filesContaining("keep me", in: dir.sub("server")).isEmpty)
    }

    @Test("erase without a reachable backend refuses (69) unless --local-only; a terminal-less erase needs --yes")
    func unreachable() throws {
        let dir = TemporaryDirectory("erase-unreachable")
        let server = try SyncServer(dir: dir.sub("server"))
        let ledger = dir.sub("device")
        let credentials = server.credentials
        let env = ["MOODLEDGER_API_KEY": credentials.apiKey!, "MOODLEDGER_TOKEN": credentials.token!]
        _ = Self.cli(["init", "--ledger", ledger])
        let entry = Self.cli(["log", "--valence", "0.4", "--label", "calm", "--note", "secret", "--ledger", ledger]).1
            .trimmingCharacters(in: .whitespacesAndNewlines)
        _ = Self.cli(["remote", "set", server.url, "--ledger", ledger])
        _ = Self.cli(["sync", "--ledger", ledger], env)
        server.stop()
        #expect(Self.cli(["erase", entry, "--ledger", ledger]).0 == 64)
        let (code, output) = Self.cli(["erase", entry, "--yes", "--ledger", ledger], env)
        #expect(code == 69, "\(output)")
        #expect(!Self.filesContaining("secret", in: ledger).isEmpty, "nothing erased")
        #expect(Self.cli(["erase", entry, "--yes", "--local-only", "--ledger", ledger]).0 == 0)
        #expect(Self.filesContaining("secret", in: ledger).isEmpty)
    }

    @Test("The server: DELETE ?erase=true and account erasure leave no trace of the notes in its data directory")
    func serverSide() throws {
        let dir = TemporaryDirectory("erase-server")
        let server = try SyncServer(dir: dir.sub("server"))
        let device = try Device(dir.sub("device"), remote: server.url)
        let secret = try device.log(0.3, notes: "api secret")
        try device.log(0.2, notes: "other note")
        try device.sync(server.credentials)
        let transport = HTTPTransport(url: try RemoteURL(server.url))
        guard
            case .response(let status, _, _) = transport.perform(
                SyncRequest(method: "DELETE", path: "/api/v1/mood/\(secret)?erase=true"),
                credentials: server.credentials)
        else { Issue.record("no answer"); return }
        #expect(status == 204)
        guard
            case .response(let again, _, _) = transport.perform(
                SyncRequest(method: "GET", path: "/api/v1/mood/\(secret)"),
                credentials: server.credentials)
        else { return }
        #expect(again == 404)
        server.stop()
        #expect(Self.filesContaining("api secret", in: dir.sub("server")).isEmpty)
        #expect(!Self.filesContaining("other note", in: dir.sub("server")).isEmpty)
        #expect(Self.cli(["serve", "user", "erase", "alice", "--data", dir.sub("server")]).0 == 64)
        let (code, output) = Self.cli(["serve", "user", "erase", "alice", "--data", dir.sub("server"), "--yes"])
        #expect(code == 0, "\(output)")
        #expect(Self.filesContaining("other note", in: dir.sub("server")).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: dir.sub("server") + "/users/alice"))
        #expect(
            Self.filesContaining("alice", in: dir.sub("server") + "/accounts").isEmpty,
            "the account's records are redacted")
    }
}
