import EventLog
import Foundation
import MoodLedger
import MoodLedgerServer
import Platform

/// The server benchmark's load generator: one thread in a process of its own (like `wrk -t1`), polling N keep-alive
/// connections; each sends a request again as soon as the answer is read — one request, or one drawn at random from
/// several (a random user per request). Out of the server's process so the
/// server's memory and threads are its own; single-threaded and byte-level so it takes as little of the shared
/// cores as it can.
struct LoadGenerator {
    struct Result {
        var requests: Int
        var seconds: Double
        var p50: Double
        var p99: Double
        /// Answers with another status than the expected one (counted, not fatal, when ``tolerant``).
        var unexpected = 0
    }

    let port: UInt16
    /// The requests to choose from (one for most runs).
    let requests: [[UInt8]]
    /// Count unexpected statuses instead of stopping at the first.
    var tolerant = false
    let connections: Int
    let seconds: Double
    let expect: Int

    /// Runs the load in a child process (`--load-generator`, below) and reads its result.
    func runInChild(directory: String) throws -> Result {
        let file = directory + "/request-\(connections)-\(expect)-\(requests.count).bin"
        // Requests never hold a NUL byte: it separates them in the file.
        try Data(requests.joined(separator: [0]).map { $0 }).write(to: URL(fileURLWithPath: file))
        let output = try BenchmarkCommand.runSelf(
            [
                "--load-generator", String(port), String(connections), String(seconds),
                String(expect), file
            ] + (tolerant ? ["tolerant"] : []))
        let fields = output.split(separator: " ").compactMap { Double($0) }
        guard fields.count == 5 else { throw BenchError(text: "the load generator said: \(output)") }
        return Result(
            requests: Int(fields[0]), seconds: fields[1], p50: fields[2], p99: fields[3], unexpected: Int(fields[4]))
    }

    /// The child's side: `--load-generator PORT CONNECTIONS SECONDS EXPECT REQUEST_FILE`; prints
    /// `requests seconds p50_us p99_us`, or exits 74 with a reason.
    static func main(_ arguments: [String]) -> Int32 {
        guard arguments.count == 5 || arguments.count == 6, let port = UInt16(arguments[0]),
            let connections = Int(arguments[1]),
            let seconds = Double(arguments[2]), let expect = Int(arguments[3]),
            let request = FileManager.default.contents(atPath: arguments[4])
        else {
            FileHandle.standardError.write(Data("moodledger-bench --load-generator: bad arguments\n".utf8))
            return 64
        }
        var generator = LoadGenerator(
            port: port, requests: Array(request).split(separator: 0).map(Array.init),
            connections: connections, seconds: seconds, expect: expect)
        generator.tolerant = arguments.count == 6 && arguments[5] == "tolerant"
        do {
            let result = try generator.run()
            print("\(result.requests) \(result.seconds) \(result.p50) \(result.p99) \(result.unexpected)")
            return 0
        } catch {
            FileHandle.standardError.write(Data("moodledger-bench --load-generator: \(error)\n".utf8))
            return 74
        }
    }

    private struct Connection {
        var fd: Int32
        var input: [UInt8] = []
        var started: UInt64 = 0
    }

    func run() throws -> Result {
        Socket.ignoreSIGPIPE()
        var open: [Connection] = []
        defer { for connection in open { Socket.close(connection.fd) } }
        for _ in 0..<connections { open.append(Connection(fd: try Socket.connect(host: "127.0.0.1", port: port))) }
        var latencies: [Double] = []
        latencies.reserveCapacity(1 << 20)
        var unexpected = 0
        var random = SplitMix64(seed: 0x5EED)
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        let started = Benchmark.now()
        let deadline = started + UInt64(seconds * 1e9)
        for index in open.indices { try send(&open[index], using: &random) }
        var fds = open.map { Socket.Watch(fd: $0.fd, interest: .readable) }
        var active = open.count
        while active > 0 {
            try Socket.poll(&fds, timeoutMilliseconds: 1000)
            for index in fds.indices where !fds[index].ready.isEmpty {
                fds[index].ready = []
                guard let count = try chunk.withUnsafeMutableBytes({ try Socket.receive(open[index].fd, into: $0) })
                else { continue }
                guard count > 0 else { throw BenchError(text: "the server closed a connection") }
                open[index].input.append(contentsOf: chunk[0..<count])
                while let (status, length) = Self.response(in: open[index].input) {
                    if status != expect {
                        guard tolerant else { throw BenchError(text: "answered \(status), expected \(expect)") }
                        unexpected += 1
                    }
                    let now = Benchmark.now()
                    latencies.append(Double(now - open[index].started) / 1000)
                    open[index].input.removeFirst(length)
                    if now < deadline {
                        try send(&open[index], using: &random)
                    } else {
                        fds[index].interest = []
                        active -= 1
                    }
                }
            }
        }
        let elapsed = Benchmark.seconds(since: started)
        return Result(
            requests: latencies.count, seconds: elapsed, p50: Benchmark.median(latencies),
            p99: Benchmark.percentile(latencies, 0.99), unexpected: unexpected)
    }

    private func send(_ connection: inout Connection, using random: inout SplitMix64) throws {
        connection.started = Benchmark.now()
        let request = requests.count == 1 ? requests[0] : requests[Int(random.next() % UInt64(requests.count))]
        var offset = 0
        while offset < request.count {
            let written = try request.withUnsafeBytes {
                try Socket.send(connection.fd, UnsafeRawBufferPointer(rebasing: $0[offset...]))
            }
            if written == 0 {
                var fds = [Socket.Watch(fd: connection.fd, interest: .writable)]
                try Socket.poll(&fds, timeoutMilliseconds: 1000)
            }
            offset += written
        }
    }

    /// A complete response at the start of `bytes`: its status and length (head + Content-Length body).
    static func response(in bytes: [UInt8]) -> (status: Int, length: Int)? {
        bytes.withUnsafeBufferPointer { buffer in
            guard buffer.count >= 16 else { return nil }
            var end = -1
            var i = 12
            while i + 3 < buffer.count {
                if buffer[i] == 13, buffer[i + 1] == 10, buffer[i + 2] == 13, buffer[i + 3] == 10 {
                    end = i + 4
                    break
                }
                i += 1
            }
            guard end > 0 else { return nil }
            let status = Int(buffer[9] - 48) * 100 + Int(buffer[10] - 48) * 10 + Int(buffer[11] - 48)
            // Content-Length, case-insensitively, at the start of a header line.
            let name = Array("content-length:".utf8)
            var length = 0
            var line = 0
            while line < end {
                if line + name.count < end, (0..<name.count).allSatisfy({ buffer[line + $0] | 0x20 == name[$0] | 0x20 })
                {
                    var j = line + name.count
                    while buffer[j] == 32 { j += 1 }
                    while buffer[j] >= 48 && buffer[j] <= 57 {
                        length = length * 10 + Int(buffer[j] - 48)
                        j += 1
                    }
                    break
                }
                while line < end, buffer[line] != 10 { line += 1 }
                line += 1
            }
            return end + length <= buffer.count ? (status, end + length) : nil
        }
    }
}
