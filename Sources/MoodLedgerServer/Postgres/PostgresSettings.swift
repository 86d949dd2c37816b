/// Where and how to connect to PostgreSQL, parsed from a connection string in either of libpq's forms: a URI
/// (`postgresql://USER[:PASSWORD]@HOST[:PORT][,HOST[:PORT]…]/DB?PARAM=VALUE&…`) or keywords
/// (`host=a,b port=5432 user=u dbname=d target_session_attrs=read-write`). A host that begins with `/` is a directory
/// holding the server's Unix-domain socket (`DIR/.s.PGSQL.PORT`). The password may come from the string or, as
/// libpq does, from the `PGPASSWORD` environment variable.
///
/// There is no TLS library on Linux without a package: `sslmode=require`, `verify-ca` and `verify-full` are refused
/// with a clear error rather than connected in the clear; `disable`, `allow` and `prefer` connect without TLS (use a
/// private network or a Unix socket, `Specs/server.md`, *PostgreSQL*).
public struct PostgresSettings: Sendable, Equatable {
    /// One server to try.
    public struct Host: Sendable, Equatable {
        /// A name or address, or a socket directory (begins with `/`).
        public var host: String
        /// The port (also the socket file's suffix).
        public var port: UInt16
        /// Whether this is a Unix-domain socket directory.
        public var isSocket: Bool { host.hasPrefix("/") }
        /// The socket file, for a socket directory.
        public var socketPath: String { host + "/.s.PGSQL.\(port)" }
        /// How the host is named in errors and logs.
        public var label: String { isSocket ? socketPath : "\(host):\(port)" }
    }

    /// Which server of several a connection may settle on.
    public enum TargetSessionAttributes: String, Sendable {
        /// Any server that accepts the connection.
        case any
        /// Only one that accepts writes (not a standby): how nodes follow a failover.
        case readWrite = "read-write"
    }

    /// The servers, tried in order.
    public var hosts: [Host]
    /// The role to connect as.
    public var user: String
    /// The role's password (SCRAM-SHA-256 or cleartext), if the server asks for one.
    public var password: String?
    /// The database.
    public var database: String
    /// Which server to settle on. Default `read-write` (the server writes).
    public var targetSessionAttributes: TargetSessionAttributes = .readWrite
    /// Seconds to wait for a connection and for each answer. Default 10.
    public var timeoutSeconds: Double = 10
    /// The name the server shows in `pg_stat_activity`.
    public var applicationName = "moodledger"

    /// A connection string's settings. `environment` supplies `PGPASSWORD`, `PGUSER`, `PGHOST`, `PGPORT` and
    /// `PGDATABASE` where the string is silent.
    /// - Throws: ``PostgresError`` `postgres_configuration` naming the part that is wrong.
    public static func parse(_ text: String, environment: [String: String] = [:]) throws(PostgresError) -> Self {
        var values: [String: String] = [:]
        if text.hasPrefix("postgresql://") || text.hasPrefix("postgres://") {
            values = try uriValues(text)
        } else {
            values = try keywordValues(text)
        }
        let user = values["user"] ?? environment["PGUSER"] ?? environment["USER"] ?? "postgres"
        let hostList = values["host"] ?? environment["PGHOST"] ?? "/var/run/postgresql"
        let portList = values["port"] ?? environment["PGPORT"] ?? "5432"
        let names = hostList.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        var ports: [UInt16] = []
        for text in portList.split(separator: ",", omittingEmptySubsequences: false) {
            guard let port = UInt16(text), port > 0 else {
                throw PostgresError(.configuration, "port must be a number from 1 to 65535")
            }
            ports.append(port)
        }
        guard ports.count == 1 || ports.count == names.count else {
            throw PostgresError(.configuration, "give one port, or one port for each host")
        }
        var hosts: [Host] = []
        for (index, name) in names.enumerated() {
            guard !name.isEmpty else { throw PostgresError(.configuration, "a host in the list is empty") }
            hosts.append(Host(host: name, port: ports.count == 1 ? ports[0] : ports[index]))
        }
        var settings = PostgresSettings(
            hosts: hosts, user: user, password: values["password"] ?? environment["PGPASSWORD"],
            database: values["dbname"] ?? environment["PGDATABASE"] ?? user)
        switch values["sslmode"] ?? "prefer" {
        case "disable", "allow", "prefer": break
        case "require", "verify-ca", "verify-full":
            throw PostgresError(
                .configuration,
                "sslmode=\(values["sslmode"]!) cannot be honoured: this build has no TLS library; connect over a "
                    + "private network or a Unix socket with sslmode=disable")
        default: throw PostgresError(.configuration, "sslmode must be disable, allow, prefer or require")
        }
        if let attributes = values["target_session_attrs"] {
            guard let parsed = TargetSessionAttributes(rawValue: attributes) else {
                throw PostgresError(.configuration, "target_session_attrs must be any or read-write")
            }
            settings.targetSessionAttributes = parsed
        }
        if let timeout = values["connect_timeout"] {
            guard let seconds = Double(timeout), seconds > 0, seconds <= 3600 else {
                throw PostgresError(.configuration, "connect_timeout must be a number of seconds from 1 to 3600")
            }
            settings.timeoutSeconds = seconds
        }
        if let name = values["application_name"] { settings.applicationName = name }
        return settings
    }

    /// The keywords a URI sets: its user, password, hosts, ports and database, then its query's parameters.
    private static func uriValues(_ text: String) throws(PostgresError) -> [String: String] {
        var rest = Substring(text.drop { $0 != ":" }.dropFirst(3))
        var values: [String: String] = [:]
        if let question = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: question)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, !parts[0].isEmpty else {
                    throw PostgresError(.configuration, "a URI parameter is not NAME=VALUE")
                }
                values[try decoded(parts[0])] = try decoded(parts[1])
            }
            rest = rest[..<question]
        }
        if let slash = rest.firstIndex(of: "/") {
            let name = rest[rest.index(after: slash)...]
            if !name.isEmpty, values["dbname"] == nil { values["dbname"] = try decoded(name) }
            rest = rest[..<slash]
        }
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = credentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            if !parts[0].isEmpty, values["user"] == nil { values["user"] = try decoded(parts[0]) }
            if parts.count == 2, values["password"] == nil { values["password"] = try decoded(parts[1]) }
        }
        if !rest.isEmpty, values["host"] == nil {
            var hosts: [String] = []
            var ports: [String] = []
            for item in rest.split(separator: ",", omittingEmptySubsequences: false) {
                var name = item
                var port = ""
                if name.hasPrefix("[") {
                    // [IPv6]:port
                    guard let close = name.firstIndex(of: "]") else {
                        throw PostgresError(.configuration, "an IPv6 host is missing its ]")
                    }
                    let after = name[name.index(after: close)...]
                    port = after.hasPrefix(":") ? String(after.dropFirst()) : ""
                    name = name[name.index(after: name.startIndex)..<close]
                } else if let colon = name.lastIndex(of: ":") {
                    port = String(name[name.index(after: colon)...])
                    name = name[..<colon]
                }
                hosts.append(try decoded(name))
                ports.append(port)
            }
            values["host"] = hosts.joined(separator: ",")
            if values["port"] == nil, ports.contains(where: { !$0.isEmpty }) {
                values["port"] = ports.map { $0.isEmpty ? "5432" : $0 }.joined(separator: ",")
            }
        }
        return values
    }

    /// `%XX` escapes decoded.
    private static func decoded(_ text: Substring) throws(PostgresError) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard iterator.count >= 2,
                    let value = UInt8(String(decoding: iterator.prefix(2), as: UTF8.self), radix: 16)
                else { throw PostgresError(.configuration, "a %-escape in the URI is not two hex digits") }
                bytes.append(value)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        guard let string = String(validating: bytes, as: UTF8.self) else {
            throw PostgresError(.configuration, "the URI is not UTF-8 once decoded")
        }
        return string
    }

    /// `keyword=value` pairs separated by spaces; a value may be single-quoted with `\'` and `\\` escapes.
    private static func keywordValues(_ text: String) throws(PostgresError) -> [String: String] {
        var values: [String: String] = [:]
        var characters = Array(text)[...]
        func skipSpaces() { while characters.first?.isWhitespace == true { characters.removeFirst() } }
        skipSpaces()
        while !characters.isEmpty {
            var key = ""
            while let next = characters.first, next != "=", !next.isWhitespace {
                key.append(next)
                characters.removeFirst()
            }
            skipSpaces()
            guard characters.popFirst() == "=", !key.isEmpty else {
                throw PostgresError(.configuration, "the connection string is not KEYWORD=VALUE pairs")
            }
            skipSpaces()
            var value = ""
            if characters.first == "'" {
                characters.removeFirst()
                var closed = false
                while let next = characters.popFirst() {
                    if next == "\\", let escaped = characters.popFirst() {
                        value.append(escaped)
                    } else if next == "'" {
                        closed = true
                        break
                    } else {
                        value.append(next)
                    }
                }
                guard closed else { throw PostgresError(.configuration, "a quoted value has no closing quote") }
            } else {
                while let next = characters.first, !next.isWhitespace {
                    value.append(next)
                    characters.removeFirst()
                }
            }
            values[key] = value
            skipSpaces()
        }
        return values
    }
}
