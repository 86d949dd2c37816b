import Foundation
import MoodLedger
import TestSupport

/// The part of JSON Schema (draft 2020-12) the seed schemas in `Tests/Seed/schemas` use: `type`, `properties`,
/// `additionalProperties: false`, `required`, `enum`, `minimum`/`maximum`, `minItems`/`maxItems`, `items`,
/// `minLength`/`maxLength`, `anyOf` and `format: date-time`. Any other keyword fails loudly, so a schema can never
/// pass by being misunderstood.
struct JSONSchema: Sendable {
    let root: JSONValue

    /// Loads `Tests/Seed/schemas/<name>.json`.
    static func seed(_ name: String) throws -> JSONSchema {
        let text = try String(contentsOfFile: Repository.root + "/Tests/Seed/schemas/\(name).json", encoding: .utf8)
        return JSONSchema(root: try JSONParser.parse(text))
    }

    private static let known: Set<String> = [
        "$schema", "title", "description", "type", "properties", "additionalProperties", "required", "enum", "minimum",
        "maximum", "minItems", "maxItems", "items", "minLength", "maxLength", "anyOf", "format"
    ]

    /// Every violation of `value`, as `path: rule` (empty when valid).
    func violations(of value: JSONValue) -> [String] {
        var found: [String] = []
        Self.check(value, against: root, at: "$", into: &found)
        return found
    }

    private static func check(
        _ value: JSONValue, against schema: JSONValue, at path: String, into found: inout [String]
    ) {
        guard case .object(let pairs) = schema else { found.append("\(path): schema is not an object"); return }
        for (keyword, _) in pairs where !known.contains(keyword) {
            found.append("\(path): unsupported keyword \(keyword)")
        }
        if let type = schema["type"] {
            let allowed = type.arrayValue?.compactMap(\.stringValue) ?? [type.stringValue ?? ""]
            if !allowed.contains(where: { matches(value, $0) }) {
                found.append("\(path): must be \(allowed.joined(separator: " or "))")
            }
        }
        if let options = schema["enum"]?.arrayValue, !options.contains(value) {
            found.append("\(path): not one of the enum")
        }
        if let number = value.doubleValue, !(value.stringValue != nil) {
            if let minimum = schema["minimum"]?.doubleValue, number < minimum {
                found.append("\(path): below \(minimum)")
            }
            if let maximum = schema["maximum"]?.doubleValue, number > maximum {
                found.append("\(path): above \(maximum)")
            }
        }
        if let text = value.stringValue {
            if let minimum = schema["minLength"]?.intValue, text.count < minimum {
                found.append("\(path): shorter than \(minimum)")
            }
            if let maximum = schema["maxLength"]?.intValue, text.count > maximum {
                found.append("\(path): longer than \(maximum)")
            }
            if schema["format"]?.stringValue == "date-time", !isDateTime(text) {
                found.append("\(path): not an RFC 3339 date-time")
            }
        }
        if let items = value.arrayValue {
            if let minimum = schema["minItems"]?.intValue, items.count < minimum {
                found.append("\(path): fewer than \(minimum) items")
            }
            if let maximum = schema["maxItems"]?.intValue, items.count > maximum {
                found.append("\(path): more than \(maximum) items")
            }
            if let itemSchema = schema["items"] {
                for (index, item) in items.enumerated() {
                    check(item, against: itemSchema, at: "\(path)[\(index)]", into: &found)
                }
            }
        }
        if case .object(let fields) = value {
            let properties = schema["properties"]
            for name in schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where value[name] == nil {
                found.append("\(path): missing \(name)")
            }
            for (name, field) in fields {
                if let propertySchema = properties?[name] {
                    check(field, against: propertySchema, at: "\(path).\(name)", into: &found)
                } else if schema["additionalProperties"] == .bool(false) {
                    found.append("\(path): unknown field \(name)")
                }
            }
        }
        if let options = schema["anyOf"]?.arrayValue {
            let passing = options.contains { option in
                var inner: [String] = []
                check(value, against: option, at: path, into: &inner)
                return inner.isEmpty
            }
            if !passing { found.append("\(path): matches none of anyOf") }
        }
    }

    private static func matches(_ value: JSONValue, _ type: String) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("null", .null):
            return true
        case ("number", .int), ("number", .double), ("integer", .int): return true
        case ("integer", .double(let d)): return d.rounded() == d
        default: return false
        }
    }

    /// RFC 3339 `date-time`: `YYYY-MM-DDThh:mm:ss[.frac](Z|±hh:mm)`.
    static func isDateTime(_ text: String) -> Bool {
        let pattern = #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"#
        return text.range(of: pattern, options: .regularExpression) != nil
    }
}
