import Foundation
import MoodLedger
import MoodLedgerSync
import TestSupport
import Testing

/// A loopback HTTPS remote: a CA, server certificates and a TLS-terminating relay made by the test (openssl and
/// python3's `ssl`), in front of `moodledger serve`. On Linux, URLSession (libcurl) trusts the system's store only,
/// so a command that must trust the test CA runs in a private mount namespace where the system's bundle has the CA
/// appended (root and `unshare`); the machine's own store is never touched.
enum HTTPSLab {
    static var available: Bool {
        #if os(Linux)
            return geteuid() == 0 && ["/usr/bin/unshare", "/usr/bin/openssl"].allSatisfy(FileManager.default.fileExists)
                && (try? Tool.run(["-c", "import ssl"], executable: python))?.code == 0
        #else
            return false
        #endif
    }

    static var python: String {
        ["/usr/bin/python3", "/usr/local/bin/python3"].first(where: FileManager.default.isExecutableFile) ?? "python3"
    }

    static let bundle = "/etc/ssl/certs/ca-certificates.crt"

    /// Runs `openssl` with `arguments` in `dir`.
    static func openssl(_ arguments: [String], in dir: String) throws {
        let outcome = try Tool.run(arguments, executable: "/usr/bin/openssl", directory: dir)
        guard outcome.code == 0 else { throw POSIXError(.EINVAL) }
    }

    /// A CA and three server certificates signed by it: `good` (localhost, 127.0.0.1), `other` (another host
    /// name) and `expired` (its validity ended yesterday); plus `trust.crt`, the system's bundle with the CA.
    static func certificates(in dir: String) throws {
        try openssl(
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
                "-days", "2", "-subj", "/CN=MoodLedger test CA"
            ], in: dir)
        for (name, host, days) in [
            ("good", "localhost", "2"), ("other", "other.example", "2"), ("expired", "localhost", "-1")
        ] {
            try openssl(
                [
                    "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(name).key", "-out", "\(name).csr",
                    "-subj", "/CN=\(host)"
                ], in: dir)
            let san = host == "localhost" ? "DNS:localhost,IP:127.0.0.1" : "DNS:\(host)"
            // The serverAuth usage and a SAN: what iOS requires of a server certificate (libcurl accepts less).
            try "subjectAltName=\(san)\nextendedKeyUsage=serverAuth\n".write(
                toFile: dir + "/\(name).ext", atomically: true, encoding: .utf8)
            try openssl(
                [
                    "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                    "-out", "\(name).pem", "-days", days, "-extfile", "\(name).ext"
                ], in: dir)
        }
        let system = (try? String(contentsOfFile: bundle, encoding: .utf8)) ?? ""
        try (system + "\n" + String(contentsOfFile: dir + "/ca.pem", encoding: .utf8))
            .write(toFile: dir + "/trust.crt", atomically: true, encoding: .utf8)
    }

    /// A TLS relay with `certificate` in front of `upstream`; its port. It stops when `stdin` is closed.
    final class Relay {
        let process = Process()
        let input = Pipe()
        var port: UInt16 = 0

        init(dir: String, certificate: String, upstream: UInt16) throws {
            process.executableURL = URL(fileURLWithPath: HTTPSLab.python)
            process.arguments = [
                Repository.root + "/Tests/Server/tls_relay.py", "\(dir)/\(certificate).pem",
                "\(dir)/\(certificate).key", String(upstream)
            ]
            let output = Pipe()
            process.standardOutput = output
            process.standardInput = input
            process.standardError = FileHandle.nullDevice
            try process.run()
            let text = ServeProcess.firstLine(of: output)
            guard
                let value = text.split(separator: " ").last.flatMap({
                    UInt16($0.trimmingCharacters(in: .whitespacesAndNewlines))
                })
            else {
                throw POSIXError(.EADDRNOTAVAIL)
            }
            port = value
        }

        deinit {
            try? input.fileHandleForWriting.close()
            process.terminate()
            process.waitUntilGone()
        }
    }

    /// `moodledger ARGS` as a user would run it, trusting the test CA through the system's store when `trusting`.
    static func cli(
        _ arguments: [String], trusting: String?, environment: [String: String]
    ) throws -> Tool.Outcome {
        let binary = Repository.executable("moodledger")
        var merged = ProcessInfo.processInfo.environment
        merged.merge(environment) { $1 }
        guard let trusting else { return try Tool.run(arguments, executable: binary, environment: merged) }
        let script = "mount --bind \"$0\" \(bundle) && exec \"$@\""
        return try Tool.run(
            ["--mount", "/bin/sh", "-c", script, trusting, binary] + arguments, executable: "/usr/bin/unshare",
            environment: merged)
    }
}

@Suite("Sync over HTTPS (URLSession) to a loopback TLS relay in front of moodledger serve")
struct HTTPSTests {
    @Test(
        "Push, pull, a conflict and a lost answer over HTTPS; untrusted, wrong-host and expired certificates refused",
        .enabled(if: HTTPSLab.available, "needs Linux as root, unshare, openssl and python3 (ssl)"))
    func https() throws {
        let dir = TemporaryDirectory("https")
        try HTTPSLab.certificates(in: dir.path)
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        // The first create's answer is lost after the server committed it: the retry must not duplicate it.
        let proxy = try FaultProxy(upstream: server.port) { index, method, _ in
            index == 1 && method == "POST" ? .dropAfterCommit : .relay
        }
        defer { proxy.stop() }
        let good = try HTTPSLab.Relay(dir: dir.path, certificate: "good", upstream: proxy.port)
        let credentials = server.credentials
        let environment = ["MOODLEDGER_API_KEY": credentials.apiKey!, "MOODLEDGER_TOKEN": credentials.token!]
        let trust = dir.sub("trust.crt")
        func run(_ ledger: String, _ arguments: [String], trusting: String? = trust) throws -> Tool.Outcome {
            try HTTPSLab.cli(arguments + ["--ledger", ledger], trusting: trusting, environment: environment)
        }
        let a = dir.sub("a")
        let b = dir.sub("b")
        for ledger in [a, b] {
            #expect(try run(ledger, ["init"], trusting: nil).code == 0)
            #expect(try run(ledger, ["remote", "set", "https://localhost:\(good.port)"], trusting: nil).code == 0)
        }
        let id = try run(a, ["log", "--score", "6", "--label", "calm", "--note", "over tls"], trusting: nil).out
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // The lost answer: this run's create fails (the connection is dropped after the server committed it; URLSession
        // reports it when its read times out), the next resends the same key and the server replays it.
        let first = try run(a, ["sync", "--now"])
        #expect(first.out.contains("1 to retry"), "\(first.out) \(first.err)")
        let second = try run(a, ["sync", "--now"])
        #expect(second.code == 0, "\(second.out) \(second.err)")
        #expect(try run(b, ["sync"]).code == 0)
        #expect(try run(b, ["show", id, "--json"], trusting: nil).out.contains("over tls"))
        // A conflict: both edit the note; B reaches the server last and wins, A learns it lost.
        _ = try run(a, ["update", id, "--note", "from a"], trusting: nil)
        _ = try run(b, ["update", id, "--note", "from b"], trusting: nil)
        for ledger in [a, b, a] { #expect(try run(ledger, ["sync"]).code == 0) }
        #expect(try run(a, ["conflicts"], trusting: nil).out.contains("from a"))
        #expect(try run(b, ["conflicts"], trusting: nil).out.contains("from a"))
        server.stop()
        let stored = try server.entries()
        #expect(stored.count == 1 && stored.first?.notes == "from b")
        let explain = try run(a, ["sync", "explain", id], trusting: nil).out
        #expect(explain.contains("HTTPS via URLSession"), "\(explain)")

        // Refused: the CA not trusted, a certificate for another host, an expired certificate.
        let restarted = try SyncServer(dir: dir.sub("server"))
        defer { restarted.stop() }
        let other = try HTTPSLab.Relay(dir: dir.path, certificate: "other", upstream: restarted.port)
        let expired = try HTTPSLab.Relay(dir: dir.path, certificate: "expired", upstream: restarted.port)
        let cases: [(String, UInt16, String?)] = [
            ("untrusted", good.port, nil), ("wrong host", other.port, trust), ("expired", expired.port, trust)
        ]
        for (name, port, trusting) in cases {
            let ledger = dir.sub("refused-\(name.replacingOccurrences(of: " ", with: "-"))")
            #expect(try run(ledger, ["init"], trusting: nil).code == 0)
            #expect(try run(ledger, ["remote", "set", "https://localhost:\(port)"], trusting: nil).code == 0)
            _ = try run(ledger, ["log", "--valence", "0.2", "--label", "calm"], trusting: nil)
            let before = try run(ledger, ["events", "--json"], trusting: nil).out
            let refused = try run(ledger, ["sync"], trusting: trusting)
            #expect(refused.code == 78, "\(name): \(refused.out) \(refused.err)")
            #expect(refused.err.contains("certificate of localhost"), "\(name): \(refused.err)")
            #expect(try run(ledger, ["events", "--json"], trusting: nil).out == before, "\(name): nothing appended")
        }
    }

    /// Whether the binary under test is the release build named by `MOODLEDGER_BINARY`: the debug build links
    /// FoundationNetworking as a shared library, which needs libcurl at start, so only the release build can show
    /// that a command does not load it.
    static var releaseBinary: Bool {
        ProcessInfo.processInfo.environment["MOODLEDGER_BINARY"].map { !$0.isEmpty } ?? false
    }

    @Test(
        "The release binary loads libcurl for an https:// sync only: not for help, list, or an http:// sync",
        .enabled(if: HTTPSLab.available && releaseBinary, "needs MOODLEDGER_BINARY (the release build), as in CI"))
    func libcurlOnlyForHTTPS() throws {
        let dir = TemporaryDirectory("lazy-curl")
        try HTTPSLab.certificates(in: dir.path)
        let server = try SyncServer(dir: dir.sub("server"))
        defer { server.stop() }
        let relay = try HTTPSLab.Relay(dir: dir.path, certificate: "good", upstream: server.port)
        let credentials = server.credentials
        // The dynamic linker names every library it loads, dlopen's included, on stderr.
        let environment = [
            "MOODLEDGER_API_KEY": credentials.apiKey!, "MOODLEDGER_TOKEN": credentials.token!, "LD_DEBUG": "files"
        ]
        func run(_ arguments: [String], trusting: String? = nil) throws -> Tool.Outcome {
            try HTTPSLab.cli(arguments, trusting: trusting, environment: environment)
        }
        func loadsCurl(_ outcome: Tool.Outcome) -> Bool { outcome.err.contains("libcurl.so") }
        let plain = dir.sub("plain")
        let secure = dir.sub("secure")
        #expect(try !loadsCurl(run(["help"])))
        for (ledger, url) in [(plain, "http://127.0.0.1:\(server.port)"), (secure, "https://localhost:\(relay.port)")] {
            #expect(try run(["init", "--ledger", ledger]).code == 0)
            #expect(try run(["remote", "set", url, "--ledger", ledger]).code == 0)
            #expect(try run(["log", "--score", "7", "--label", "calm", "--ledger", ledger]).code == 0)
        }
        #expect(try !loadsCurl(run(["list", "--limit", "5", "--ledger", plain])))
        let overHTTP = try run(["sync", "--ledger", plain])
        #expect(overHTTP.code == 0 && !loadsCurl(overHTTP), "\(overHTTP.out)")
        let overHTTPS = try run(["sync", "--ledger", secure], trusting: dir.sub("trust.crt"))
        #expect(overHTTPS.code == 0, "\(overHTTPS.out)")
        #expect(loadsCurl(overHTTPS), "an https:// sync goes through URLSession, which opens libcurl")
        #expect(try server.entries().count == 2)
    }
}
