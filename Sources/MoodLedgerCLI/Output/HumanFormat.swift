import MoodLedger

/// Plain-text renderings for people (the `--json` forms are the stable contract; these are golden-tested).
enum HumanFormat {
    /// `2026-03-01 08:15 +01:00`.
    static func time(_ loggedAt: LoggedAt) -> String {
        let iso = loggedAt.iso8601
        let date = String(iso.prefix(10))
        let clock = String(iso.dropFirst(11).prefix(5))
        let offset = loggedAt.utcOffsetMinutes == 0 ? "UTC" : String(iso.suffix(6))
        return "\(date) \(clock) \(offset)"
    }

    /// ` (score 7/10)` beside an average valence, or nothing.
    static func scoreNote(_ valence: Double?) -> String {
        valence.map { " (score \(Valence.score(for: $0))/10)" } ?? ""
    }

    /// A terminal sparkline of values in −1…1 (`▁▂▃▄▅▆▇█`); a missing value is a space.
    static func sparkline(_ values: [Double?]) -> String {
        let blocks = Array("▁▂▃▄▅▆▇█")
        return String(
            values.map { value -> Character in
                guard let value else { return " " }
                return blocks[min(7, max(0, Int(((value + 1) / 2 * 8).rounded(.down))))]
            })
    }

    /// `text` padded with spaces to `width` characters (never cut).
    static func pad(_ text: String, _ width: Int) -> String {
        let count = text.count
        return count >= width ? text : text + String(repeating: " ", count: width - count)
    }

    /// `1 entry`, `3 entries`.
    static func count(_ n: Int, _ one: String, _ many: String) -> String { "\(n) \(n == 1 ? one : many)" }

    /// `+0.556` or `   —  `.
    static func valence(_ value: Double?) -> String {
        guard let value, value.isFinite, value.magnitude < 1e15 else { return "   —  " }
        // Thousandths as an integer, written by hand: `String(format:)` cost each process 180,000 instructions on
        // first use, and gave "+-0.000" for a value that rounds to −0.
        let thousandths = Int((value * 1000).rounded())
        let digits = String(thousandths.magnitude % 1000)
        return (thousandths < 0 ? "-" : "+") + String(thousandths.magnitude / 1000) + "."
            + String(repeating: "0", count: 3 - digits.count) + digits
    }

    /// A ten-cell bar of the score, coloured when allowed.
    static func bar(_ score: Int?, color: Bool) -> String {
        guard let score else { return "··········" }
        let bar = String(repeating: "●", count: score) + String(repeating: "○", count: 10 - score)
        guard color else { return bar }
        let code = score <= 3 ? "31" : score <= 6 ? "33" : "32"
        return "\u{1B}[\(code)m\(bar)\u{1B}[0m"
    }

    /// One line per entry: time, bar, score, valence, class, labels, associations, id.
    static func entryLine(_ entry: MoodEntry, color: Bool) -> String {
        let score = entry.score.map { String($0).leftPad(2) + "/10" } ?? "  –/10"
        let words = entry.labels.map(\.wireName).joined(separator: ", ")
        let associations =
            entry.associations.isEmpty ? "" : "  [" + entry.associations.map(\.wireName).joined(separator: ", ") + "]"
        let tags = entry.tags.isEmpty ? "" : "  " + entry.tags.map { "#" + $0 }.joined(separator: " ")
        let kind = entry.kind == .dailyMood ? " (day)" : ""
        let notes = entry.notes.map { "  “" + shortened($0, to: 40) + "”" } ?? ""
        return "\(time(entry.loggedAt))  \(bar(entry.score, color: color)) \(score)  \(valence(entry.valence))  "
            + "\(words.isEmpty ? "—" : words)\(associations)\(tags)\(kind)\(notes)  \(entry.id)"
    }

    /// The first line of `text`, cut to `limit` characters with an ellipsis.
    static func shortened(_ text: String, to limit: Int) -> String {
        let line = text.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
        let cut = line.count > limit || line.count < text.count
        return cut ? String(line.prefix(limit - 1)) + "…" : line
    }

    /// Every field of one entry.
    static func entryDetail(_ entry: MoodEntry) -> String {
        var lines = [
            "id           \(entry.id)",
            "logged at    \(entry.loggedAt.iso8601)",
            "kind         \(entry.kind.wireName)",
            "valence      \(valence(entry.valence))" + (entry.valenceClassification.map { "  (\($0.wireName))" } ?? ""),
            "score        \(entry.score.map { "\($0)/10" + (entry.enteredScore != nil ? " (typed)" : " (derived)") } ?? "—")",
            "labels       \(entry.labels.isEmpty ? "—" : entry.labels.map(\.wireName).joined(separator: ", "))",
            "associations \(entry.associations.isEmpty ? "—" : entry.associations.map(\.wireName).joined(separator: ", "))",
            "tags         \(entry.tags.isEmpty ? "—" : entry.tags.joined(separator: ", "))",
            "notes        \(entry.notes ?? "—")",
            "source       \(entry.source.rawValue)" + (entry.sourceID.map { " (\($0))" } ?? ""),
            "created at   \(ISO8601.format(milliseconds: entry.createdAt, offsetMinutes: 0))",
            "updated at   \(ISO8601.format(milliseconds: entry.updatedAt, offsetMinutes: 0))"
        ]
        if entry.isReadOnly { lines.append("read-only    yes (from HealthKit)") }
        return lines.joined(separator: "\n")
    }

    /// `#12  2026-03-01T08:15:00Z  mood.updated  <entry>  offset 1234, 98 bytes` plus the changes.
    static func eventLine(
        _ event: RecordedEvent, changes: [(field: String, before: JSONValue, after: JSONValue)]? = nil
    ) -> String {
        var line =
            "#\(event.seq)  \(ISO8601.format(milliseconds: event.recordedAtMilliseconds, offsetMinutes: 0))  "
            + event.event.type.name.column(25)
            + "\(event.event.entryID)  @\(event.offset) (\(event.size) B)"
        switch event.event {
        case .entryErased(_, let erasure):
            let when = ISO8601.format(milliseconds: event.recordedAtMilliseconds, offsetMinutes: 0)
            return line + "\n      erased at \(when)" + (erasure.reason.isEmpty ? "" : " (\(erasure.reason))")
                + (erasure.complete ? "" : " — redaction not finished yet")
        case .ledgerErased(let erasure):
            let when = ISO8601.format(milliseconds: event.recordedAtMilliseconds, offsetMinutes: 0)
            return line + "\n      every entry erased at \(when)"
                + (erasure.keepsHealthKit ? " (HealthKit's copies kept)" : "")
                + (erasure.reason.isEmpty ? "" : " (\(erasure.reason))")
                + (erasure.complete ? "" : " — redaction not finished yet")
        case .redacted: return line + "\n      redacted by an erasure"
        default: break
        }
        if let changes, changes.allSatisfy({ $0.before == .null }), !changes.isEmpty, event.event.type == .created {
            // A creation: the entry as it was logged, not a row of `null →` lines.
            let fields = changes.filter { $0.after != .null && $0.after != .array([]) }
            line += "\n      created: " + fields.map { "\($0.field) \($0.after.serialized())" }.joined(separator: ", ")
        } else if let changes {
            for change in changes {
                // A value given where there was none is "set", one taken away "cleared": never a creation.
                if change.before == .null {
                    line += "\n      \(change.field) set: \(change.after.serialized())"
                } else if change.after == .null {
                    line += "\n      \(change.field) cleared (was \(change.before.serialized()))"
                } else {
                    line += "\n      \(change.field): \(change.before.serialized()) → \(change.after.serialized())"
                }
            }
            if changes.isEmpty, case .object(let pairs) = event.event.json, !pairs.isEmpty {
                line += "\n      " + event.event.json.serialized()
            }
        }
        return line
    }

    static func number(_ value: Double?) -> String {
        guard let value else { return "—" }
        return String(format: "%.3f", value)
    }

    static func words(_ reports: [WordReport]) -> String {
        reports.isEmpty ? "—" : reports.map { "\($0.word) ×\($0.count)" }.joined(separator: ", ")
    }
}

extension String {
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }

    /// The text in a column `width` characters wide: padded with spaces, or cut to the width. Plain Swift, not
    /// Foundation's `padding(toLength:)`, whose bridging through `NSString` costs a command's start a third of `help`.
    func column(_ width: Int) -> String {
        count >= width ? String(prefix(width)) : self + String(repeating: " ", count: width - count)
    }
}
