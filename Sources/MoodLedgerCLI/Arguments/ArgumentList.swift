/// A command line split into options and positionals, by a command's declared options.
///
/// Accepts `--flag value`, `--flag=value`, repeated options, bare flags, and `--` (everything after it is
/// positional). Anything undeclared is a usage error.
public struct ArgumentList: Sendable, Equatable {
    /// Positional arguments, in order.
    public private(set) var positionals: [String] = []
    /// Values of options that take one, in order of appearance (repeats kept).
    public private(set) var values: [String: [String]] = [:]
    /// Flags that were given.
    public private(set) var flags: Set<String> = []

    /// Parses `arguments` against declared options.
    /// - Parameters:
    ///   - arguments: the words after the command name.
    ///   - valueOptions: option names (without `--`) that take a value.
    ///   - flagOptions: option names that take none.
    /// - Throws: ``UsageError`` for an unknown option, a missing value, or a value given to a flag.
    public init(_ arguments: [String], valueOptions: Set<String>, flagOptions: Set<String>) throws(UsageError) {
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            if onlyPositionals || !word.hasPrefix("--") || word == "-" {
                if !onlyPositionals, word.hasPrefix("-"), word.count > 1, Double(word) == nil {
                    throw UsageError("unknown option \(word) (options start with --)")
                }
                positionals.append(word)
                continue
            }
            if word == "--" {
                onlyPositionals = true
                continue
            }
            var name = String(word.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if valueOptions.contains(name) {
                if let inlineValue {
                    values[name, default: []].append(inlineValue)
                } else {
                    // A following option is not a value: `--note --json` is a mistake (write --note=--json to mean it).
                    guard index < arguments.count, !arguments[index].hasPrefix("--") else {
                        throw UsageError("--\(name) needs a value")
                    }
                    values[name, default: []].append(arguments[index])
                    index += 1
                }
            } else if flagOptions.contains(name) {
                guard inlineValue == nil else { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    /// The last value of an option, if given.
    public func value(_ name: String) -> String? { values[name]?.last }

    /// Every value of a repeatable option; comma-separated lists are split.
    public func list(_ name: String) -> [String] {
        (values[name] ?? []).flatMap { $0.split(separator: ",").map { String($0) } }
    }

    /// Whether a flag was given.
    public func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// Whether an option was given (flag or value).
    public func given(_ name: String) -> Bool { flags.contains(name) || values[name] != nil }
}

/// A malformed command line (exit 64).
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
