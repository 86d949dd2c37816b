import MoodLedger

/// What a backend needs to accept a request: the API key (`X-API-Key`) and the bearer token. Read from
/// `MOODLEDGER_API_KEY` / `MOODLEDGER_TOKEN` or a 0600 JSON file `{"api_key": …, "token": …}`; never written to
/// the log, never part of an error or of `history`.
public struct SyncCredentials: Sendable, Equatable {
    public var apiKey: String?
    public var token: String?

    /// Creates credentials.
    public init(apiKey: String? = nil, token: String? = nil) {
        self.apiKey = apiKey
        self.token = token
    }

    /// Where credentials come from; ``load()`` reads them again (what a 401 refresh does).
    public struct Source: Sendable {
        /// The credentials file, if given (it wins over the environment).
        public var file: String?
        /// The environment to read.
        public var environment: [String: String]

        /// Creates a source.
        public init(file: String? = nil, environment: [String: String]) {
            self.file = file
            self.environment = environment
        }

        /// Reads the credentials now.
        /// - Throws: ``SyncError`` `config` for a file that is unreadable, not 0600, or not the JSON shape.
        public func load() throws(SyncError) -> SyncCredentials {
            if let file {
                let bytes = try CredentialFile.read(file)
                guard let json = try? JSONParser.parse(String(decoding: bytes, as: UTF8.self)), case .object = json
                else {
                    throw SyncError(
                        .config, "the credentials file \(file) is not a JSON object {\"api_key\", \"token\"}")
                }
                for key in ["api_key", "token"] {
                    if let value = json[key], !value.isNull, value.stringValue == nil {
                        throw SyncError(.config, "the credentials file \(file): \(key) must be a string")
                    }
                }
                return try SyncCredentials(apiKey: json["api_key"]?.stringValue, token: json["token"]?.stringValue)
                    .checkedForHeaders(names: ("the credentials file's api_key", "the credentials file's token"))
            }
            return try SyncCredentials(
                apiKey: environment["MOODLEDGER_API_KEY"].flatMap { $0.isEmpty ? nil : $0 },
                token: environment["MOODLEDGER_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
            ).checkedForHeaders(names: ("MOODLEDGER_API_KEY", "MOODLEDGER_TOKEN"))
        }
    }

    /// Refuses credentials that cannot stand in a header, naming the variable or the file's field, never the value.
    /// - Throws: ``SyncError`` `config`.
    func checkedForHeaders(names: (apiKey: String, token: String)) throws(SyncError) -> SyncCredentials {
        for (name, value) in [(names.apiKey, apiKey), (names.token, token)] {
            // Visible ASCII and spaces only: no CR, LF or other control character can end a header line and start
            // another (RFC 9110 §5.5).
            if let value, !value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) {
                throw SyncError(
                    .config,
                    "\(name) holds a control or non-ASCII character (a line break, for one), which no HTTP header "
                        + "may carry")
            }
        }
        return self
    }

    /// The request headers.
    var headers: [(String, String)] {
        var headers: [(String, String)] = []
        if let apiKey { headers.append(("X-API-Key", apiKey)) }
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        return headers
    }
}
