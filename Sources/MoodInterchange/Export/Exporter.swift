import Foundation
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
        var text: [UInt8] = []
        stream(state, format: format, chunkBytes: .max) { text += $0 }
        return String(decoding: text, as: UTF8.self)
    }

    /// The export of every entry in `state`, written to `handle` as it is made: byte for byte what
    /// ``export(_:format:)`` returns, held in memory a day of entries and 64 KiB of text at a time, whatever the
    /// ledger's size.
    /// - Parameters:
    ///   - state: now, or a time-travelled state.
    ///   - format: as ``export(_:format:)``.
    ///   - handle: an open file (or pipe) to write to.
    /// - Throws: what writing to `handle` throws (the export is then incomplete).
    public static func export(_ state: LedgerState, format: ExportFormat, to handle: FileHandle) throws {
        var failure: (any Error)?
        stream(state, format: format) { chunk in
            guard failure == nil else { return }
            do { try handle.write(contentsOf: chunk) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// The export in chunks of at least `chunkBytes` (but the last), each ending between two entries (never inside a
    /// character): what the CLI writes to its output.
    package static func stream(
        _ state: LedgerState, format: ExportFormat, chunkBytes: Int = 64 << 10, _ emit: ([UInt8]) -> Void
    ) {
        var out: [UInt8] = []
        out.reserveCapacity(min(chunkBytes, 1 << 20) + 4096)
        func flushIfFull() {
            if out.count >= chunkBytes {
                emit(out)
                out.removeAll(keepingCapacity: true)
            }
        }
        func forEachEntry(_ body: (MoodEntry) -> Void) {
            for day in state.entries.activeDays {
                for entry in state.entries.entries(on: day).reversed() {
                    body(entry)
                    flushIfFull()
                }
            }
        }
        /// `{"KEY": [elements…], trailer…}` as the pretty serializer writes it, one element at a time.
        func object(
            _ key: String, _ elements: (_ add: (JSONValue) -> Void) -> Void, trailer: () -> [(String, JSONValue)]
        ) {
            out += "{\n  ".utf8
            JSONValue.string(key).write(to: &out, prettyAt: 1)
            out += ": [".utf8
            var count = 0
            elements { element in
                out += (count == 0 ? "\n    " : ",\n    ").utf8
                element.write(to: &out, prettyAt: 2)
                count += 1
            }
            out += (count == 0 ? "]" : "\n  ]").utf8
            for (name, value) in trailer() {
                out += ",\n  ".utf8
                JSONValue.string(name).write(to: &out, prettyAt: 1)
                out += ": ".utf8
                value.write(to: &out, prettyAt: 1)
            }
            out += "\n}\n".utf8
        }
        switch format {
        case .json:
            var total = 0
            object(
                "entries",
                { add in
                    forEachEntry { entry in
                        add(entry.exportJSON)
                        total += 1
                    }
                }, trailer: { [("total", .int(Int64(total)))] })
        case .csv:
            out += (csvColumns.joined(separator: ",") + "\r\n").utf8
            forEachEntry { entry in out += (csvRow(entry) + "\r\n").utf8 }
        case .progress:
            // The 1–10 view only: entries without a valence or score have nothing to say there and are left out
            // (counted).
            var skipped = 0
            object(
                "data",
                { add in
                    forEachEntry { entry in
                        guard let score = entry.enteredScore ?? entry.score else {
                            skipped += 1
                            return
                        }
                        add(
                            .object([
                                ("type", .string("mood_score")), ("quantity", .double(Double(score))),
                                ("logged_at", .string(entry.loggedAt.iso8601)),
                                ("notes", .optional(entry.notes) { .string($0) }), ("id", .string(entry.id.description))
                            ]))
                    }
                }, trailer: { [("skipped_entries_without_score", .int(Int64(skipped)))] })
        case .healthkit:
            // HKStateOfMind-shaped samples, with what could not be carried counted.
            var skipped = 0
            var translated = 0
            var withoutValence = 0
            object(
                "samples",
                { add in
                    forEachEntry { entry in
                        guard
                            let sample = StateOfMindSample(
                                entry: entry, uuid: entry.id, skippedCustomWords: &skipped,
                                translatedWords: &translated)
                        else {
                            withoutValence += 1
                            return
                        }
                        add(sample.json)
                    }
                },
                trailer: {
                    [
                        ("skipped_custom_words", .int(Int64(skipped))), ("translated_words", .int(Int64(translated))),
                        ("skipped_entries_without_valence", .int(Int64(withoutValence)))
                    ]
                })
        }
        if !out.isEmpty { emit(out) }
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
