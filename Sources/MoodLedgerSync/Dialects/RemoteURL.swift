import HTTPWire
import MoodLedger

/// A backend's base URL, parsed: `http[s]://HOST[:PORT][/PREFIX]` (IPv6 hosts in brackets).
public struct RemoteURL: Sendable, Equatable, CustomStringConvertible {
    /// Whether the remote is reached over TLS (`https`): then through ``URLSessionTransport``.
    public var secure: Bool
    /// The host name or address (without brackets).
    public var host: String
    /// The port (default 80, or 443 for `https`).
    public var port: UInt16
    /// A path prefix without a trailing slash ("" for none).
    public var prefix: String

    /// Parses a base URL.
    /// - Throws: ``MoodError`` `invalid_input` (field `url`) for anything but an `http` or `https` URL with a host.
    public init(_ text: String) throws(MoodError) {
        var rest = Substring(text)
        if rest.lowercased().hasPrefix("https://") {
            secure = true
            rest = rest.dropFirst(8)
        } else if rest.lowercased().hasPrefix("http://") {
            secure = false
            rest = rest.dropFirst(7)
        } else {
            throw MoodError.invalid("url", "must start with http:// or https://")
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let path = rest.dropFirst(authority.count)
        guard !path.contains("?"), !path.contains("#") else {
            throw MoodError.invalid("url", "must not carry a query or fragment")
        }
        guard !authority.contains("@") else {
            throw MoodError.invalid("url", "must not carry credentials (use MOODLEDGER_API_KEY / MOODLEDGER_TOKEN)")
        }
        var hostPart = authority
        var portText: Substring?
        let bracketed = authority.hasPrefix("[")
        if bracketed {
            guard let close = authority.firstIndex(of: "]") else {
                throw MoodError.invalid("url", "has an unclosed IPv6 bracket")
            }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                portText = after.dropFirst()
            } else if !after.isEmpty {
                throw MoodError.invalid("url", "has characters after the IPv6 address")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw MoodError.invalid("url", "needs a host name or address") }
        // ASCII only: a host that looks like another in Unicode (a Cyrillic "а" for a Latin "a") is refused rather
        // than sent as it is; an internationalised name is given in its punycode form (xn--…).
        guard hostPart.unicodeScalars.allSatisfy({ $0.isASCII }) else {
            throw MoodError.invalid("url", "the host must be ASCII (write an internationalised name as xn--…)")
        }
        guard hostPart.allSatisfy({ $0.isLetter || $0.isNumber || "-._".contains($0) || ($0 == ":" && bracketed) })
        else {
            throw MoodError.invalid("url", "needs a host name or address")
        }
        host = String(hostPart)
        if let portText {
            guard let value = UInt16(portText), value > 0 else {
                throw MoodError.invalid("url", "port must be 1...65535")
            }
            port = value
        } else {
            port = secure ? 443 : 80
        }
        // A path prefix of URL path characters only: nothing that could break the request line.
        guard
            path.unicodeScalars.allSatisfy({
                $0.isASCII && $0.value > 0x20 && $0.value < 0x7F && !"\\\"<>^`{|}".unicodeScalars.contains($0)
            })
        else {
            throw MoodError.invalid(
                "url", "the path may hold only URL path characters (no spaces or control characters)")
        }
        var trimmed = String(path)
        while trimmed.hasSuffix("/") { trimmed.removeLast() }
        prefix = trimmed
    }

    /// The canonical text: `http[s]://host:port[/prefix]`.
    public var description: String { "\(secure ? "https" : "http")://\(authority)\(prefix)" }

    /// The `Host` header's value (RFC 9112 §3.2, RFC 3986 §3.2.2): `host:port`, an IPv6 address in brackets.
    public var hostHeader: String { authority }

    /// `host:port`, an IPv6 host in brackets.
    public var authority: String { HTTPFields.authority(host: host, port: port) }
}
