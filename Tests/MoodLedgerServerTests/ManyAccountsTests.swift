import EventLog
import Foundation
import MoodLedger
@testable import MoodLedgerServer
import Testing
import TestSupport

@Suite("Many accounts: a bounded pool of open ledgers")
struct ManyAccountsTests {
    @Test("With room for 3 open ledgers, 24 users each write and read: all 2xx, never more than 3 open, nothing lost")
    func boundedPool() throws {
        let users = (0..<24).map { "user\($0)" }
        let h = try ServerHarness(users: users) { $0.maxOpenLedgers = 3 }
        defer { h.stop() }
        for round in 0..<2 {
            for user in users.shuffled() {
                let created = try h.request("POST", "/api/v1/mood", user: user, json: #"{"valence":0.\#(round + 1),"labels":["calm"]}"#)
                #expect(created.status == 201, "\(user): \(created.text)")
                #expect(h.backend.ledgers.count <= 3)
            }
        }
        for user in users {
            let listed = try h.request("GET", "/api/v1/mood?from=2000-01-01&to=2100-01-01", user: user)
            #expect(listed.status == 200 && listed.data["entries"]?.arrayValue?.count == 2, "\(user): \(listed.text)")
        }
        #expect(h.backend.ledgers.count <= 3)
    }

    @Test("Under ulimit -n 256, 400 users of the built server each write once: 400 × 2xx", .timeLimit(.minutes(2)))
    func descriptorLimit() throws {
        let dir = TemporaryDirectory("many-accounts-ulimit")
        var credentials = try Credentials.load(directory: dir.path, create: true)
        var keys: [String: String] = [:]
        for index in 0..<400 { keys["u\(index)"] = try credentials.addUser("u\(index)") }
        try credentials.save(directory: dir.path)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "ulimit -n 256 && exec \"$0\" serve --data \"$1\" --port 0 --writes-per-hour 0 --reads-per-hour 0", Repository.executable("moodledger"), dir.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        var seen = ""
        var port: UInt16?
        let deadline = Date().addingTimeInterval(20)
        while port == nil && Date() < deadline {
            seen += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            if let range = seen.range(of: #"127\.0\.0\.1:[0-9]+"#, options: .regularExpression) {
                port = UInt16(seen[range].split(separator: ":")[1])
            }
        }
        let server = try #require(port, "the server did not start: \(seen)")
        var statuses: [Int: Int] = [:]
        for index in 0..<400 {
            let user = "u\(index)"
            let token = JWT.sign(subject: user, now: Int64(Date().timeIntervalSince1970), ttl: 3600, secret: credentials.secret)
            let body = #"{"valence":0.5,"labels":["calm"]}"#
            let client = try RawClient(port: server)
            defer { client.close() }
            try client.send("POST /api/v1/mood HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer \(token)\r\n"
                + "X-API-Key: \(keys[user]!)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            statuses[try client.readResponse().status, default: 0] += 1
        }
        #expect(statuses == [201: 400], "\(statuses)")
    }
}
