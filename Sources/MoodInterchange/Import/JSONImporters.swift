import MoodLedger

/// The JSON formats: the old progress and mood APIs, the current mood API, and HKStateOfMind-shaped samples.
enum JSONImporters {
    /// How one JSON format reads a record: its draft, or `nil` for a record skipped on purpose (noted in the plan).
    typealias ReadRecord = (
        _ reader: inout RecordReader, _ plan: inout ImportPlan, _ options: ImportOptions
    ) throws(ImportError) -> MoodDraft?

    /// Parses a whole JSON file of `format`, each record read by `read`.
    static func plan(
        _ text: String, format: ImportFormat, options: ImportOptions, read: ReadRecord
    ) throws(ImportError) -> ImportPlan {
        let root: JSONValue
        do {
            root = try JSONParser.parse(text)
        } catch {
            throw ImportError(
                line: error.line, field: nil, problem: "bad JSON: \(error.reason) (column \(error.column))")
        }
        var plan = ImportPlan(format: format)
        var seen: [String: Int] = [:]
        for (index, record) in try records(root, format: format).enumerated() {
            let number = index + 1
            guard case .object = record else {
                throw ImportError(line: number, field: nil, problem: "record \(number) is not an object")
            }
            var reader = RecordReader(record: record, number: number, zone: options.zone)
            let row = try read(&reader, &plan, options)
            guard var draft = row else { continue }
            if let sourceID = draft.sourceID, format != .healthkit, draft.id == nil {
                // Records without an id of their own: the time, plus an occurrence count for exact repeats.
                let occurrence = seen[sourceID, default: 0]
                seen[sourceID] = occurrence + 1
                draft.sourceID = sourceID + "#\(occurrence)"
            }
            plan.rows.append(ImportRow(line: number, draft: draft))
        }
        return plan
    }

    /// The records of a file: one object, an array, `{"data": …}`, `{"entries": […]}`, `{"data": {"entries": […]}}`,
    /// `{"samples": […]}`.
    static func records(_ root: JSONValue, format: ImportFormat) throws(ImportError) -> [JSONValue] {
        var value = root
        for _ in 0..<3 {
            if let data = value["data"] { value = data; continue }
            if let entries = value["entries"] { value = entries; continue }
            if let samples = value["samples"] { value = samples; continue }
            break
        }
        switch value {
        case .array(let items): return items
        case .object: return [value]
        default:
            throw ImportError(
                line: 0, field: nil, problem: "expected an object or an array of \(format.rawValue) records")
        }
    }

    /// The tool's own CSV export: each row becomes the mood-api record it was rendered from (`|` separates words).
    struct CSVExportRows: RowReader {
        let header: [String]
        let options: ImportOptions
        static let lists: Set<String> = ["labels", "associations", "tags"]
        static let numbers: Set<String> = ["valence", "score", "typed_score", "utc_offset_minutes"]

        init(header: CSVReader.Record, options: ImportOptions) throws(ImportError) {
            guard header.fields.contains("logged_at") else {
                throw ImportError(
                    line: header.line, field: nil, problem: "not a moodledger CSV export (needs a logged_at column)")
            }
            self.header = header.fields
            self.options = options
        }

        func draft(_ record: CSVReader.Record, plan: inout ImportPlan) throws(ImportError) -> MoodDraft? {
            guard record.fields.count == header.count else {
                throw ImportError(
                    line: record.line, field: nil,
                    problem: "has \(record.fields.count) fields, the header has \(header.count)")
            }
            var pairs: [(String, JSONValue)] = []
            for (name, field) in zip(header, record.fields) {
                if Self.lists.contains(name) {
                    pairs.append(
                        (name, .array(field.isEmpty ? [] : field.split(separator: "|").map { .string(String($0)) })))
                } else if field.isEmpty {
                    pairs.append((name, .null))
                } else if Self.numbers.contains(name) {
                    guard let number = Double(field) else {
                        throw ImportError(line: record.line, field: name, problem: "must be a number")
                    }
                    pairs.append(
                        (name, number.rounded() == number && abs(number) < 1e15 ? .int(Int64(number)) : .double(number))
                    )
                } else {
                    pairs.append((name, .string(field)))
                }
            }
            var reader = RecordReader(record: .object(pairs), number: record.line, zone: options.zone)
            return try JSONImporters.moodAPI(&reader, plan: &plan, options: options)
        }
    }

    // MARK: - Formats

    static func progress(
        _ r: inout RecordReader, plan: inout ImportPlan, options: ImportOptions
    ) throws(ImportError) -> MoodDraft? {
        let type = try r.string("type") ?? "mood_score"
        guard type == "mood_score" else {
            plan.skipped.append((r.number, "type \(type) is not a mood score"))
            return nil
        }
        return try scored(&r, field: "quantity", idPrefix: "progress", plan: &plan, options: options)
    }

    static func legacyMood(
        _ r: inout RecordReader, plan: inout ImportPlan, options: ImportOptions
    ) throws(ImportError) -> MoodDraft? {
        try scored(
            &r, field: "mood_score", labelsField: "emotions", idPrefix: "legacy-mood", plan: &plan, options: options)
    }

    /// A record with a whole 1–10 score in `field`, labels in `labelsField` if any, `logged_at`, `notes` and an
    /// optional `id` (the source id is `idPrefix:id`, or `idPrefix:` and the time without one).
    private static func scored(
        _ r: inout RecordReader, field: String, labelsField: String? = nil, idPrefix: String,
        plan: inout ImportPlan, options: ImportOptions
    ) throws(ImportError) -> MoodDraft {
        guard let score = try r.number(field) else { throw r.error(field, "is required") }
        guard score.rounded() == score, MoodRules.scoreValues.contains(score) else {
            throw r.error(field, "must be a whole score \(MoodRules.scoreRangeText)")
        }
        var labels: [String] = []
        if let labelsField { labels = try r.strings(labelsField) ?? [] }
        let loggedAt = try r.instant("logged_at")
        let notes = try Importer.notes(try r.string("notes"), line: r.number, options: options, plan: &plan)
        let id = try r.string("id") ?? ISO8601.format(milliseconds: loggedAt.milliseconds, offsetMinutes: 0)
        return MoodDraft(
            score: Int(score), labels: labels,
            associations: options.suggest ? Suggestions.associations(forNotes: notes).map(\.name) : [],
            notes: notes, loggedAt: loggedAt, source: .import, sourceID: "\(idPrefix):\(id)",
            suggestLabels: options.suggest)
    }

    static func moodAPI(
        _ r: inout RecordReader, plan: inout ImportPlan, options: ImportOptions
    ) throws(ImportError) -> MoodDraft? {
        var draft = MoodDraft(suggestLabels: options.suggest)
        // A typed score is restored as typed (its valence is its exact translation); then the valence; then a
        // score (derived in an export, or the API's legacy mood_score).
        if let typed = try r.number("typed_score") {
            // The range is checked before the conversion: a crafted 1e300 must not trap Int(_:).
            guard typed.rounded() == typed, MoodRules.scoreValues.contains(typed) else {
                throw r.error("typed_score", "must be a whole score \(MoodRules.scoreRangeText)")
            }
            draft.score = Int(typed)
        } else if let valence = try r.number("valence") {
            draft.valence = valence
        } else {
            var score = try r.number("score")
            if score == nil { score = try r.number("mood_score") }
            if let score {
                guard score.rounded() == score, MoodRules.scoreValues.contains(score) else {
                    throw r.error("score", "must be a whole score \(MoodRules.scoreRangeText)")
                }
                draft.score = Int(score)
            }
        }
        draft.labels = try r.strings("labels") ?? []
        draft.associations = try r.strings("associations") ?? []
        draft.tags = try r.strings("tags") ?? []
        draft.notes = try Importer.notes(try r.string("notes"), line: r.number, options: options, plan: &plan)
        if let loggedAt = try r.loggedAt() { draft.loggedAt = loggedAt }
        if let kind = try r.kind() { draft.kind = kind }
        if let id = try r.string("id") {
            guard let parsed = EntryID(id) else { throw r.error("id", "is not a UUID") }
            draft.id = parsed
        }
        let source = try r.string("source").flatMap { MoodSource(rawValue: $0) } ?? .backend
        draft.source = source
        // Identity on re-import: the id when the record has one; else its source id; else its time (plus an
        // occurrence count). Nothing is invented for a record with an id, so a round trip keeps source_id as it was.
        draft.sourceID = try r.string("source_id")
        if draft.id == nil, draft.sourceID == nil, let loggedAt = draft.loggedAt {
            draft.sourceID = "api:" + ISO8601.format(milliseconds: loggedAt.milliseconds, offsetMinutes: 0)
        }
        return draft
    }

    static func healthKit(_ r: inout RecordReader) throws(ImportError) -> MoodDraft {
        guard let uuid = try r.string("uuid"), let id = EntryID(uuid) else { throw r.error("uuid", "must be a UUID") }
        guard let valence = try r.number("valence") else { throw r.error("valence", "is required") }
        var draft = MoodDraft(valence: valence, suggestLabels: false)
        draft.loggedAt = try r.instant("start_date")
        switch r.record["kind"] {
        case .int(let raw)?:
            guard let kind = MoodKind(rawValue: Int(raw)) else { throw r.error("kind", "must be 1 or 2") }
            draft.kind = kind
        case .string(let text)?:
            guard let kind = MoodKind(parsing: text) else {
                throw r.error("kind", "must be momentaryEmotion or dailyMood")
            }
            draft.kind = kind
        case nil, .null?: break
        default: throw r.error("kind", "must be a number or a string")
        }
        draft.labels = try r.words("labels", as: MoodLabel.self)
        draft.associations = try r.words("associations", as: MoodAssociation.self)
        draft.notes = try r.string("notes")
        draft.id = id
        draft.source = .healthkit
        draft.sourceID = "HK-MOOD-\(id)"
        return draft  // a valence_classification in the file is ignored: it is recomputed from the valence
    }
}

/// Typed access to one JSON record's fields, with errors that name the record and field.
struct RecordReader {
    let record: JSONValue
    let number: Int
    /// The import zone (``ImportOptions/zone``); `nil` keeps offsets as written (the API's bodies).
    var zone: LocalZone? = nil

    func error(_ field: String, _ problem: String) -> ImportError {
        ImportError(line: number, field: field, problem: problem)
    }

    func string(_ key: String) throws(ImportError) -> String? {
        switch record[key] {
        case nil, .null?: return nil
        case .string(let s)?: return s
        default: throw error(key, "must be a string")
        }
    }

    func number(_ key: String) throws(ImportError) -> Double? {
        switch record[key] {
        case nil, .null?: return nil
        case let value?:
            guard let d = value.doubleValue else { throw error(key, "must be a number") }
            return d
        }
    }

    func strings(_ key: String) throws(ImportError) -> [String]? {
        switch record[key] {
        case nil, .null?: return nil
        case .array(let items)?:
            var result: [String] = []
            for item in items {
                guard let s = item.stringValue else { throw error(key, "must be an array of strings") }
                result.append(s)
            }
            return result
        default: throw error(key, "must be an array")
        }
    }

    /// Words given as names or as Apple raw values.
    func words<D>(_ key: String, as: VocabularyWord<D>.Type) throws(ImportError) -> [String] {
        guard case .array(let items)? = record[key] else {
            if record[key] == nil || record[key] == .null { return [] }
            throw error(key, "must be an array")
        }
        var result: [String] = []
        for item in items {
            if let raw = item.intValue {
                guard let word = VocabularyWord<D>(appleRawValue: raw) else {
                    throw error(key, "unknown raw value \(raw)")
                }
                result.append(word.name)
            } else if let name = item.stringValue {
                result.append(name)
            } else {
                throw error(key, "must hold names or raw values")
            }
        }
        return result
    }

    /// An ISO 8601 instant (required). Its offset: `offsetKey`'s value when the record has one, else the import
    /// zone's offset at that instant (so it lands on the user's local day), else the offset it is written with.
    /// `logged_at` with `utc_offset_minutes`, or `nil` when missing or null: a missing one means now (the API's rule).
    func loggedAt() throws(ImportError) -> LoggedAt? {
        guard record["logged_at"] != nil, record["logged_at"] != .null else { return nil }
        return try instant("logged_at", offsetKey: "utc_offset_minutes")
    }

    /// `kind`, when present: `momentary_emotion` or `daily_mood`.
    func kind() throws(ImportError) -> MoodKind? {
        guard let kind = try string("kind") else { return nil }
        guard let parsed = MoodKind(parsing: kind) else {
            throw error("kind", "must be momentary_emotion or daily_mood")
        }
        return parsed
    }

    func instant(_ key: String, offsetKey: String? = nil) throws(ImportError) -> LoggedAt {
        guard let text = try string(key) else { throw error(key, "is required") }
        guard var instant = ISO8601.parse(text) else { throw error(key, "is not an ISO 8601 instant with an offset") }
        if let zone { instant = zone.loggedAt(atUTC: instant.milliseconds) }
        if let offsetKey, let offset = try number(offsetKey) {
            guard offset.rounded() == offset, abs(offset) <= 840 else {
                throw error(offsetKey, "must be whole minutes within ±840")
            }
            instant.utcOffsetMinutes = Int(offset)
        }
        return instant
    }
}
