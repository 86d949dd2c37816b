import MoodLedger

/// The formats `export` writes (`Specs/imports-exports.md`).
public enum ExportFormat: String, Sendable, CaseIterable {
    case json, csv, healthkit
    /// The older `/api/v1/progress` records: `{type: mood_score, quantity, logged_at, notes}` (what it cannot carry
    /// is listed in `Specs/imports-exports.md`).
    case progress
}

/// Renders the entries of a state for other tools. Oldest first.
public enum Exporter {
    /// The export of every entry in `state`.
    /// - Parameters:
    ///   - state: now, or a time-travelled state.
    ///   - format: json (the API entry shape), csv (RFC 4180), healthkit (HKStateOfMind-shaped).
    /// - Returns: the text, ending in a newline.
    public static func export(_ state: LedgerState, format: ExportFormat) -> String {
        let entries = state.entries.activeDays.flatMap { state.entries.entries(on: $0).reversed() }
        let write: ([MoodEntry]) -> String
        switch format {
        case .json: write = json
        case .csv: write = csv
        case .progress: write = progress
        case .healthkit: write = healthKit
        }
        return write(entries)
    }

    /// The API's entry shape: `{entries, total}`.
    static func json(_ entries: [MoodEntry]) -> String {
        JSONValue.object([("entries", .array(entries.map(\.exportJSON))), ("total", .int(Int64(entries.count)))])
            .serialized(pretty: true) + "\n"
    }

    /// RFC 4180, the columns of ``csvColumns``.
    static func csv(_ entries: [MoodEntry]) -> String {
        var lines = [csvColumns.joined(separator: ",")]
        for entry in entries { lines.append(csvRow(entry)) }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// The 1–10 view only: entries without a valence or score have nothing to say there and are left out (counted).
    static func progress(_ entries: [MoodEntry]) -> String {
        let records: [JSONValue] = entries.compactMap { entry in
            guard let score = entry.enteredScore ?? entry.score else { return nil }
            return .object([
                ("type", .string("mood_score")), ("quantity", .double(Double(score))),
                ("logged_at", .string(entry.loggedAt.iso8601)),
                ("notes", .optional(entry.notes) { .string($0) }), ("id", .string(entry.id.description))
            ])
        }
        return JSONValue.object([
            ("data", .array(records)),
            ("skipped_entries_without_score", .int(Int64(entries.count - records.count)))
        ])
        .serialized(pretty: true) + "\n"
    }

    /// HKStateOfMind-shaped samples, with what could not be carried counted.
    static func healthKit(_ entries: [MoodEntry]) -> String {
        var skipped = 0
        var translated = 0
        let samples: [JSONValue] = entries.compactMap { entry in
            StateOfMindSample(
                entry: entry, uuid: entry.id, skippedCustomWords: &skipped, translatedWords: &translated)?.json
        }
        return JSONValue.object([
            ("samples", .array(samples)), ("skipped_custom_words", .int(Int64(skipped))),
            ("translated_words", .int(Int64(translated))),
            ("skipped_entries_without_valence", .int(Int64(entries.count - samples.count)))
        ])
        .serialized(pretty: true) + "\n"
    }

    static let csvColumns = [
        "id", "logged_at", "utc_offset_minutes", "kind", "valence", "valence_classification", "score",
        "typed_score", "labels", "associations", "tags", "notes", "source", "source_id"
    ]

    static func csvRow(_ entry: MoodEntry) -> String {
        let json = entry.exportJSON
        return csvColumns.map { column -> String in
            let text: String
            switch json[column] {
            case .array(let items)?: text = items.compactMap(\.stringValue).joined(separator: "|")
            case .string(let s)?: text = s
            case .null?, nil: text = ""
            case let value?: text = value.serialized()
            }
            return CSVReader.quote(text)
        }.joined(separator: ",")
    }
}
