/// What `moodledger` does to a command line before a command parses it (`Specs/cli.md`, *Invocation*): global
/// options may come before the command, `-h` means `--help` anywhere, and mistakes get a did-you-mean.
enum CommandLineManners {
    /// Global options that take a value, and global flags.
    static let globalValues: Set<String> = ["ledger", "tz", "utc-offset", "wait"]
    static let globalFlags: Set<String> = ["json", "help"]
    /// Options that may be given more than once (their values accumulate).
    static let repeatable: Set<String> = ["label", "association", "tag", "mood-map"]
    /// How many positional arguments each command takes at most (absent: none).
    static let maxPositionals: [String: Int] = [
        "update": 1, "labels": 1, "associations": 1, "tags": 1, "delete": 1, "show": 1, "history": 1, "diff": 2,
        "day": 1, "analytics": 1, "summary": 1, "import": 1, "healthkit": 1, "serve": 3, "remote": 2, "sync": 2,
        "erase": 1, "year": 1, "conflicts": 2
    ]

    /// Moves global options written before the command to after it, and turns `-h` into `--help` (not after `--`).
    static func normalise(_ arguments: [String]) -> [String] {
        var leading: [String] = []
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            let name = word.hasPrefix("--") ? String(word.dropFirst(2).prefix { $0 != "=" }) : ""
            if globalValues.contains(name) {
                leading.append(word)
                if !word.contains("="), index + 1 < arguments.count {
                    leading.append(arguments[index + 1])
                    index += 1
                }
            } else if globalFlags.contains(name) || word == "-h" {
                leading.append(word)
            } else {
                break
            }
            index += 1
        }
        var rest = Array(arguments[index...])
        if let dashes = rest.firstIndex(of: "--") {
            rest = rest[..<dashes].map { $0 == "-h" ? "--help" : $0 } + rest[dashes...]
        } else {
            rest = rest.map { $0 == "-h" ? "--help" : $0 }
        }
        let command = rest.first.map { [$0] } ?? []
        return command + leading.map { $0 == "-h" ? "--help" : $0 } + rest.dropFirst()
    }

    /// The closest candidate within an edit distance of 2, for a did-you-mean.
    static func suggestion(for word: String, among candidates: [String]) -> String? {
        candidates.map { ($0, distance(word, $0)) }.filter { $0.1 <= 2 }.min { $0.1 < $1.1 }?.0
    }

    /// Levenshtein distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// Usage errors a parsed command line still has: a single-value option given twice, too many positionals.
    static func check(_ parsed: ArgumentList, command: String) throws(UsageError) {
        for (name, values) in parsed.values where values.count > 1 && !repeatable.contains(name) {
            throw UsageError("--\(name) given \(values.count) times; it takes one value")
        }
        let allowed = maxPositionals[command] ?? 0
        if parsed.positionals.count > allowed {
            let extra = parsed.positionals.dropFirst(allowed).joined(separator: " ")
            throw UsageError("unexpected argument\(parsed.positionals.count - allowed == 1 ? "" : "s") \(extra)")
        }
    }
}
