import Platform

/// One connection to PostgreSQL speaking protocol 3.0 over TCP or a Unix-domain socket, blocking, used by one thread
/// at a time (the pool hands it out): startup, SCRAM-SHA-256 or cleartext authentication, the extended query protocol
/// with binary parameters and results, statements prepared once per connection, and pipelines — several statements
/// sent at once and answered after one `Sync`, which PostgreSQL runs as one implicit transaction.
///
/// `@unchecked Sendable`: its buffer and statement cache are used by one thread at a time; ``PostgresPool`` hands a
/// connection to one caller under its lock and takes it back the same way.
public final class PostgresConnection: @unchecked Sendable {
    /// The server this connection settled on.
    public let host: PostgresSettings.Host
    /// The run-time parameters the server reported (`server_version`, `in_hot_standby`…).
    public private(set) var parameters: [String: String] = [:]
    private let fd: Int32
    /// The socket (the pool peeks at an idle one to see whether its server went away).
    var fileDescriptor: Int32 { fd }
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var start = 0
    private var end = 0
    /// Statement name per text and parameter types: prepared once, bound many times.
    private var prepared: [String: String] = [:]
    private var statementsNamed = 0
    /// Whether the connection may be used again (no failure left it in an unknown state).
    public private(set) var isUsable = true
    /// The largest message accepted from the server: a length beyond it is refused before any allocation.
    static let maximumMessageBytes = 64 << 20

    /// Connects to the first of `settings.hosts` that accepts, authenticates and, for `read-write`, accepts writes.
    /// - Throws: ``PostgresError``: `postgres_unavailable` when no host would do (naming each one's reason),
    ///   `postgres_authentication`, `postgres_error`.
    public static func connect(_ settings: PostgresSettings, random: () -> [UInt8]) throws(PostgresError) -> Self {
        var reasons: [String] = []
        for host in settings.hosts {
            do {
                let connection = try Self(host: host, settings: settings, random: random)
                if settings.targetSessionAttributes == .readWrite, try connection.isReadOnly() {
                    connection.close()
                    reasons.append("\(host.label): read-only (a standby)")
                    continue
                }
                return connection
            } catch let error where error.isUnavailable {
                reasons.append("\(host.label): \(error.message)")
            }
        }
        throw PostgresError(.unavailable, "no database server would do: " + reasons.joined(separator: "; "))
    }

    private init(host: PostgresSettings.Host, settings: PostgresSettings, random: () -> [UInt8]) throws(PostgresError) {
        self.host = host
        do {
            fd =
                host.isSocket
                ? try Socket.connectUnixBlocking(path: host.socketPath, timeout: settings.timeoutSeconds)
                : try Socket.connectBlocking(host: host.host, port: host.port, timeout: settings.timeoutSeconds)
        } catch {
            throw PostgresError(.unavailable, "cannot connect: \(error)")
        }
        do {
            try startUp(settings, random: random)
        } catch {
            close()
            throw error
        }
    }

    /// Closes the socket (after a `Terminate` when the connection is still in step).
    public func close() {
        if isUsable {
            var writer = PostgresWriter()
            writer.message(UInt8(ascii: "X")) { _ in }
            _ = try? send(writer.bytes)
        }
        isUsable = false
        Socket.close(fd)
    }

    deinit { if isUsable { close() } }

    // MARK: - Startup

    private func startUp(_ settings: PostgresSettings, random: () -> [UInt8]) throws(PostgresError) {
        var writer = PostgresWriter()
        writer.message(nil) { body in
            body.int32(Int32(196_608))  // protocol 3.0
            for (name, value) in [
                ("user", settings.user), ("database", settings.database),
                ("application_name", settings.applicationName), ("client_encoding", "UTF8")
            ] {
                body.cString(name)
                body.cString(value)
            }
            body.raw([0])
        }
        try send(writer.bytes)
        var scram: SCRAM?
        while true {
            let (type, body) = try receive()
            var reader = PostgresReader(body)
            switch type {
            case UInt8(ascii: "R"):
                let kind = try reader.int32()
                switch kind {
                case 0: break
                case 3:
                    guard let password = settings.password else { throw Self.needsPassword }
                    var reply = PostgresWriter()
                    reply.message(UInt8(ascii: "p")) { $0.cString(password) }
                    try send(reply.bytes)
                case 10:
                    var mechanisms: [String] = []
                    while reader.remaining > 1 { mechanisms.append(try reader.cString()) }
                    guard mechanisms.contains("SCRAM-SHA-256") else {
                        throw PostgresError(
                            .authentication,
                            "the server offers \(mechanisms.joined(separator: ", ")); this client "
                                + "speaks SCRAM-SHA-256")
                    }
                    guard let password = settings.password else { throw Self.needsPassword }
                    let conversation = SCRAM(password: password, nonceBytes: random())
                    scram = conversation
                    var reply = PostgresWriter()
                    reply.message(UInt8(ascii: "p")) { body in
                        body.cString("SCRAM-SHA-256")
                        body.int32(Int32(conversation.clientFirst.count))
                        body.raw(conversation.clientFirst)
                    }
                    try send(reply.bytes)
                case 11:
                    guard var conversation = scram else { throw Self.outOfOrder }
                    let final = try conversation.clientFinal(serverFirst: reader.rest())
                    scram = conversation
                    var reply = PostgresWriter()
                    reply.message(UInt8(ascii: "p")) { $0.raw(final) }
                    try send(reply.bytes)
                case 12:
                    guard let conversation = scram else { throw Self.outOfOrder }
                    try conversation.verify(serverFinal: reader.rest())
                case 5:
                    throw PostgresError(
                        .authentication,
                        "the server asks for an MD5 password; set password_encryption and "
                            + "pg_hba.conf to scram-sha-256")
                default:
                    throw PostgresError(.authentication, "the server asks for authentication method \(kind)")
                }
            case UInt8(ascii: "S"):
                let name = try reader.cString()
                parameters[name] = try reader.cString()
            case UInt8(ascii: "K"), UInt8(ascii: "N"): break
            case UInt8(ascii: "E"):
                var error = PostgresReader.serverError(body)
                // 28P01 and 28000: a wrong password or a role pg_hba.conf refuses.
                if error.sqlState?.hasPrefix("28") == true { error.kind = .authentication }
                throw error
            case UInt8(ascii: "Z"): return
            default: throw Self.outOfOrder
            }
        }
    }

    private static let needsPassword = PostgresError(
        .authentication, "the server asks for a password and none is given (in the connection string or PGPASSWORD)")
    private static let outOfOrder = PostgresError(.protocolViolation, "the server sent a message out of order")

    /// Whether the server takes no writes (a hot standby, or `default_transaction_read_only`).
    private func isReadOnly() throws(PostgresError) -> Bool {
        if parameters["in_hot_standby"] == "on" || parameters["default_transaction_read_only"] == "on" { return true }
        if parameters["in_hot_standby"] == "off" { return false }
        let result = try query("SELECT pg_is_in_recovery()")
        return try result.rows.first?.int(0) == 1
    }

    // MARK: - Statements

    /// Runs one statement (extended protocol, binary parameters and results) and waits for its answer.
    /// - Throws: ``PostgresError``.
    @discardableResult
    public func query(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        try pipeline([(sql, parameters)])[0]
    }

    /// Sends every statement at once, then one `Sync`, and reads their answers: one round trip, and PostgreSQL runs
    /// them as one implicit transaction — all committed when the `Sync`'s `ReadyForQuery` arrives, or none if any
    /// failed (the first failure is thrown). The answers are read once everything is sent: keep a pipeline to a few
    /// hundred statements (``PostgresStore/pipelineLimit``), or the two sides' socket buffers can fill and stall.
    /// - Throws: ``PostgresError``.
    public func pipeline(_ statements: [(String, [PostgresValue])]) throws(PostgresError) -> [PostgresResult] {
        guard isUsable else { throw PostgresError(.unavailable, "the connection was lost") }
        var writer = PostgresWriter()
        var parsing: [String] = []
        for (sql, values) in statements {
            let types = values.map(\.typeOID)
            let cacheKey = sql + "\u{0}" + types.map(String.init).joined(separator: ",")
            var name = prepared[cacheKey]
            if name == nil {
                statementsNamed += 1
                let fresh = "m\(statementsNamed)"
                name = fresh
                prepared[cacheKey] = fresh
                parsing.append(cacheKey)
                writer.message(UInt8(ascii: "P")) { body in
                    body.cString(fresh)
                    body.cString(sql)
                    body.int16(Int16(types.count))
                    for type in types { body.int32(type) }
                }
            }
            writer.message(UInt8(ascii: "B")) { body in
                body.cString("")
                body.cString(name!)
                body.int16(1)
                body.int16(1)  // every parameter binary
                body.int16(Int16(values.count))
                for value in values {
                    if let bytes = value.binary {
                        body.int32(Int32(bytes.count))
                        body.raw(bytes)
                    } else {
                        body.int32(Int32(-1))
                    }
                }
                body.int16(1)
                body.int16(1)  // every result column binary
            }
            writer.message(UInt8(ascii: "E")) { body in
                body.cString("")
                body.int32(Int32(0))
            }
        }
        writer.message(UInt8(ascii: "S")) { _ in }
        do {
            try send(writer.bytes)
        } catch {
            for key in parsing { prepared[key] = nil }
            throw error
        }
        var results: [PostgresResult] = []
        var current = PostgresResult()
        var failure: PostgresError?
        var parsed = 0
        while true {
            let (type, body) = try receive()
            switch type {
            case UInt8(ascii: "1"): parsed += 1
            case UInt8(ascii: "2"), UInt8(ascii: "n"), UInt8(ascii: "N"), UInt8(ascii: "S"): break
            case UInt8(ascii: "D"):
                var reader = PostgresReader(body)
                let count = Int(try reader.int16())
                guard count >= 0 else { throw violation("a row with a negative column count") }
                var columns: [[UInt8]?] = []
                columns.reserveCapacity(min(count, 64))
                for _ in 0..<count {
                    let length = Int(try reader.int32())
                    columns.append(length < 0 ? nil : try reader.bytes(length))
                }
                current.rows.append(PostgresRow(columns: columns))
            case UInt8(ascii: "C"):
                var reader = PostgresReader(body)
                let tag = try reader.cString()
                current.affected = tag.split(separator: " ").last.flatMap { Int($0) } ?? 0
                results.append(current)
                current = PostgresResult()
            case UInt8(ascii: "I"):
                results.append(current)
                current = PostgresResult()
            case UInt8(ascii: "E"):
                if failure == nil {
                    failure = PostgresReader.serverError(body)
                    // Statements answer in order: the error is the answer of the first one not yet complete.
                    if results.count < statements.count { failure?.failedStatement = results.count }
                }
            case UInt8(ascii: "Z"):
                if let failure {
                    // Statements whose Parse the server did not confirm are not prepared.
                    for key in parsing.dropFirst(parsed) { prepared[key] = nil }
                    throw failure
                }
                guard results.count == statements.count else {
                    throw violation("\(results.count) answers to \(statements.count) statements")
                }
                return results
            default:
                throw violation("an unexpected message (\(Character(Unicode.Scalar(type))))")
            }
        }
    }

    /// Runs SQL through the simple query protocol (several statements in one string; no parameters): schema work.
    /// - Throws: ``PostgresError``.
    public func execute(script sql: String) throws(PostgresError) {
        guard isUsable else { throw PostgresError(.unavailable, "the connection was lost") }
        var writer = PostgresWriter()
        writer.message(UInt8(ascii: "Q")) { $0.cString(sql) }
        try send(writer.bytes)
        var failure: PostgresError?
        while true {
            let (type, body) = try receive()
            switch type {
            case UInt8(ascii: "E"): failure = failure ?? PostgresReader.serverError(body)
            case UInt8(ascii: "Z"):
                if let failure { throw failure }
                return
            default: break
            }
        }
    }

    private func violation(_ what: String) -> PostgresError {
        isUsable = false
        return PostgresError(.protocolViolation, "\(host.label) sent \(what)")
    }

    // MARK: - Bytes

    private func send(_ bytes: [UInt8]) throws(PostgresError) {
        do {
            try bytes.withUnsafeBytes { try Socket.sendAll(fd, $0) }
        } catch {
            isUsable = false
            throw PostgresError(.unavailable, "the connection to \(host.label) was lost while sending: \(error)")
        }
    }

    /// The next message: its type and body, the length checked before anything is allocated for it.
    private func receive() throws(PostgresError) -> (UInt8, [UInt8]) {
        try fill(5)
        let type = buffer[start]
        var length = 0
        for index in (start + 1)..<(start + 5) { length = length << 8 | Int(buffer[index]) }
        guard length >= 4, length - 4 <= Self.maximumMessageBytes else {
            throw violation("a message length of \(length)")
        }
        start += 5
        let count = length - 4
        if count <= buffer.count {
            try fill(count)
            defer { start += count }
            return (type, Array(buffer[start..<(start + count)]))
        }
        // Longer than the buffer: what is buffered, then the rest read straight into the body.
        var body = Array(buffer[start..<end])
        start = end
        body.reserveCapacity(count)
        while body.count < count {
            try fill(1)
            let take = min(count - body.count, end - start)
            body += buffer[start..<(start + take)]
            start += take
        }
        return (type, body)
    }

    /// Makes at least `count` bytes (≤ the buffer's size) available from `start`.
    private func fill(_ count: Int) throws(PostgresError) {
        if end - start >= count { return }
        if start > 0 {
            buffer.replaceSubrange(0..<(end - start), with: buffer[start..<end])
            end -= start
            start = 0
        }
        while end - start < count {
            let received: Int
            do {
                received = try buffer.withUnsafeMutableBytes { raw in
                    try Socket.receiveBlocking(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[end...]))
                }
            } catch {
                isUsable = false
                throw PostgresError(.unavailable, "the connection to \(host.label) was lost: \(error)")
            }
            guard received > 0 else {
                isUsable = false
                throw PostgresError(.unavailable, "\(host.label) closed the connection")
            }
            end += received
        }
    }
}
