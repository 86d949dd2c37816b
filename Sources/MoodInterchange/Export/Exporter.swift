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
        switch format {
        case .json:
            return JSONValue.object([
                ("entries", .array(entries.map(\.exportJSON))), ("total", .int(Int64(entries.count)))
            ])
            .serialized(pretty: true) + "\n"
        case .csv:
            var lines = [csvColumns.joined(separator: ",")]
            for entry in entries { lines.append(csvRow(entry)) }
            return lines.joined(separator: "\r\n") + "\r\n"
        case .progress:
            // The 1–10 view only: entries without a valence or score have nothing to say there and are left out.
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
        case .healthkit:
            var skipped = 0
            var translated = 0
            let samples: [JSONValue] = entries.compactMap { entry in
                guard
                    let sample = StateOfMindSample(
                        entry: entry, uuid: entry.id, skippedCustomWords: &skipped, translatedWords: &translated)
                else {
                    return nil
                }
                return sample.json
            }
            let withoutValence = entries.count - samples.count
            return JSONValue.object([
                ("samples", .array(samples)), ("skipped_custom_words", .int(Int64(skipped))),
                ("translated_words", .int(Int64(translated))),
                ("skipped_entries_without_valence", .int(Int64(withoutValence)))
            ])
            .serialized(pretty: true) + "\n"
        }
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
