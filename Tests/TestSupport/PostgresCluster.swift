import Foundation
import Platform

#if canImport(Glibc)
    import Glibc
#endif

/// A PostgreSQL cluster of the tests' own: `initdb` into a temporary directory, started with `pg_ctl` on a Unix socket
/// in that directory and on a free loopback port, SCRAM-SHA-256 for every connection, stopped (immediate) and removed
/// when released. Run as the `postgres` account when the tests run as root (PostgreSQL refuses root).
///
/// The binaries are Debian's (`/usr/lib/postgresql/*/bin`) or the first on `PATH`. Without them the tests that need a
/// cluster are disabled — unless `MOODLEDGER_REQUIRE_POSTGRES` is set (CI installs Debian's `postgresql` and sets it),
/// when a missing cluster fails them.
public final class PostgresCluster: @unchecked Sendable {
    /// The directory holding the data directory, the socket and the log.
    public let directory: String
    /// The loopback TCP port.
    public let port: UInt16
    /// The superuser's name and password (a standby's are its primary's).
    public let user = "moodledger"
    public let password = "correct horse battery staple"
    private var running = false

    /// The directory with `initdb`, `pg_ctl` and `postgres`, or nil.
    public static let binaries: String? = {
        let fileManager = FileManager.default
        var candidates: [String] = []
        if let versions = try? fileManager.contentsOfDirectory(atPath: "/usr/lib/postgresql") {
            candidates += versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "/usr/lib/postgresql/\($0)/bin" }
        }
        candidates += (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        return candidates.first { fileManager.isExecutableFile(atPath: $0 + "/initdb") }
    }()

    /// Whether tests that need a cluster run: the binaries are here, or CI requires them (and fails without).
    public static var isAvailable: Bool {
        binaries != nil || ProcessInfo.processInfo.environment["MOODLEDGER_REQUIRE_POSTGRES"] != nil
    }

    /// One cluster for a whole test process, made on first use and stopped when the process exits; each test makes
    /// its own database in it. nil when there are no binaries.
    public static let shared: PostgresCluster? = {
        guard binaries != nil else { return nil }
        let cluster = try? PostgresCluster()
        atexit {
            PostgresCluster.shared?.stop()
            if let directory = PostgresCluster.shared?.directory {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        return cluster
    }()

    /// A hot standby of `primary` (`pg_basebackup -R`, streaming, named `application_name` to the primary), started.
    public init(standbyOf primary: PostgresCluster, name: String) throws {
        guard let binaries = Self.binaries else { throw Failure("no PostgreSQL binaries (apt-get install postgresql)") }
        directory = NSTemporaryDirectory() + "pg-" + UUID().uuidString.prefix(8)
        port = try Self.freePort()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 { try Self.run("/bin/chown", ["-R", "postgres", directory]) }
        try runAsOwner(
            binaries + "/pg_basebackup",
            [
                "-D", directory + "/data", "-R", "-X", "stream", "--no-sync", "-d",
                "host=\(primary.directory) port=\(primary.port) user=\(primary.user) "
                    + "password='\(primary.password)' application_name=\(name)"
            ])
        // The primary's postgresql.conf came with the backup: a promoted standby must not wait for a standby of its
        // own that does not exist (an operator gives it one, or none, after a failover).
        let conf = [
            "port = \(port)", "unix_socket_directories = '\(directory)'", "hot_standby = on",
            "synchronous_standby_names = ''"
        ]
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/data/postgresql.conf"))
        handle.seekToEndOfFile()
        handle.write(Data(("\n" + conf.joined(separator: "\n") + "\n").utf8))
        try handle.close()
        try start()
    }

    /// Promotes a standby to a primary, waiting until it takes writes.
    public func promote() throws {
        guard let binaries = Self.binaries else { return }
        try runAsOwner(binaries + "/pg_ctl", ["-D", directory + "/data", "-w", "promote"])
    }

    /// Kills the postmaster with SIGKILL, as a lost machine would stop it (its backends follow).
    public func kill() throws {
        let pidText = try String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)
        guard let pid = pidText.split(separator: "\n").first.flatMap({ Int32($0) }) else {
            throw Failure("no postmaster pid")
        }
        Glibc.kill(pid, SIGKILL)
        // Its backends notice the postmaster gone and exit; the standby's WAL receiver loses its sender.
        running = false
    }

    /// A fresh cluster, started. `settings` are extra `postgresql.conf` lines.
    public init(settings: [String] = []) throws {
        guard let binaries = Self.binaries else { throw Failure("no PostgreSQL binaries (apt-get install postgresql)") }
        directory = NSTemporaryDirectory() + "pg-" + UUID().uuidString.prefix(8)
        port = try Self.freePort()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data((password + "\n").utf8).write(to: URL(fileURLWithPath: directory + "/pwfile"))
        if getuid() == 0 { try Self.run("/bin/chown", ["-R", "postgres", directory]) }
        try runAsOwner(
            binaries + "/initdb",
            [
                "-D", directory + "/data", "-U", user, "--pwfile=" + directory + "/pwfile", "--auth=scram-sha-256",
                "-E", "UTF8", "--locale=C", "--no-sync"
            ])
        let conf =
            [
                "listen_addresses = '127.0.0.1'", "port = \(port)", "unix_socket_directories = '\(directory)'",
                "max_connections = 200", "shared_buffers = 32MB", "log_min_messages = warning"
            ] + settings
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/data/postgresql.conf"))
        handle.seekToEndOfFile()
        handle.write(Data(("\n" + conf.joined(separator: "\n") + "\n").utf8))
        try handle.close()
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The connection string over the Unix socket.
    public func socketURL(database: String = "postgres") -> String {
        "postgresql://\(user):\(password.replacingOccurrences(of: " ", with: "%20"))@"
            + directory.replacingOccurrences(of: "/", with: "%2F") + ":\(port)/" + database
    }

    /// The connection string over TCP.
    public func tcpURL(database: String = "postgres") -> String {
        "postgresql://\(user):\(password.replacingOccurrences(of: " ", with: "%20"))@127.0.0.1:\(port)/" + database
    }

    /// Starts the server and waits until it accepts connections.
    public func start() throws {
        guard let binaries = Self.binaries else { return }
        try runAsOwner(
            binaries + "/pg_ctl", ["-D", directory + "/data", "-l", directory + "/log", "-w", "-t", "60", "start"])
        running = true
    }

    /// Stops the server at once (`immediate`: no checkpoint, as a crash would leave it), if running.
    public func stop(mode: String = "immediate") {
        guard running, let binaries = Self.binaries else { return }
        try? runAsOwner(binaries + "/pg_ctl", ["-D", directory + "/data", "-m", mode, "-w", "stop"])
        running = false
    }

    /// Runs a PostgreSQL program as the account that owns the cluster.
    func runAsOwner(_ path: String, _ arguments: [String]) throws {
        if getuid() == 0 {
            try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments)
        } else {
            try Self.run(path, arguments)
        }
    }

    /// Runs a program and waits for it (`posix_spawn` and `wait4`: Foundation's `Process` did not see a child that
    /// had started a daemon exit). Its output goes to a file through `sh`, not to a pipe: `pg_ctl start` leaves a
    /// server running that would hold a pipe's write end open.
    private static func run(_ path: String, _ arguments: [String]) throws {
        let outputPath = NSTemporaryDirectory() + "pg-output-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        let exit = try ChildProcess.run(
            "/bin/sh", ["-c", "\"$@\" > '\(outputPath)' 2>&1 < /dev/null", "sh", path] + arguments,
            environment: environment)
        guard exit.status == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw Failure("\(path) \(arguments.joined(separator: " ")) exited \(exit.status): \(text)")
        }
    }

    private static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw Failure("no free port") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Why a cluster could not be made.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }
}
