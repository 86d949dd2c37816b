import MoodLedger

/// Request bodies of the backend API (`/api/v1/mood`, the wellness routes, `/api/v1/progress`) read into drafts,
/// with the import readers' field rules. Errors name the field (a server answers them 422).
public enum APIRecord {
    /// A mood entry to create: `valence` or `score` or the legacy `mood_score` (1–10), `labels` (may be empty beside
    /// a valence or score; at least one item otherwise), `associations`, `tags`, `notes`, `logged_at` (absent: now), `utc_offset_minutes`, `kind`,
    /// `source` (default manual), `source_id`, `id` (a client's own UUID, for idempotent creates). Unknown fields
    /// are ignored. No labels are suggested.
    /// - Throws: ``MoodError`` `invalid_input` naming the field.
    public static func draft(from json: JSONValue) throws(MoodError) -> MoodDraft {
        let r = try reader(json)
        do throws(ImportError) {
            var draft = MoodDraft(suggestLabels: false)
            (draft.valence, draft.score) = try scalars(r)
            if let labels = try r.strings("labels") {
                // `labels: []` beside a valence or a score means "no labels" (a valence-only entry, as the FitIQ client
                // sends it); alone, there is nothing to log.
                guard !labels.isEmpty || draft.valence != nil || draft.score != nil else {
                    throw r.error("labels", "must contain at least 1 item when no valence or score is given")
                }
                draft.labels = labels
            }
            draft.associations = try r.strings("associations") ?? []
            draft.tags = try r.strings("tags") ?? []
            draft.notes = try r.string("notes")
            if let loggedAt = try r.loggedAt() { draft.loggedAt = loggedAt }
            if let kind = try r.kind() { draft.kind = kind }
            if let source = try r.string("source") {
                guard let parsed = MoodSource(rawValue: source) else {
                    throw r.error("source", "must be manual, healthkit, backend, import or ai_analysis")
                }
                draft.source = parsed
            }
            draft.sourceID = try r.string("source_id")
            if let id = try r.string("id") {
                guard let parsed = EntryID(id) else { throw r.error("id", "is not a UUID") }
                draft.id = parsed
            }
            return draft
        } catch {
            throw MoodError.invalid(error.field ?? "body", error.problem)
        }
    }

    /// A change to an entry (PUT): the fields present replace the stored ones, absent ones are kept; `notes: null`
    /// clears the notes.
    /// - Throws: ``MoodError`` `invalid_input` naming the field.
    public static func replacement(from json: JSONValue) throws(MoodError) -> MoodReplacement {
        let r = try reader(json)
        do throws(ImportError) {
            var replacement = MoodReplacement()
            (replacement.changes.valence, replacement.changes.score) = try scalars(r)
            replacement.labels = try r.strings("labels")
            replacement.associations = try r.strings("associations")
            replacement.tags = try r.strings("tags")
            if case .null? = r.record["notes"] {
                replacement.changes.notes = .clear
            } else if let notes = try r.string("notes") {
                replacement.changes.notes = notes.isEmpty ? .clear : .set(notes)
            }
            if r.record["logged_at"] != nil, r.record["logged_at"] != .null {
                replacement.changes.loggedAt = try r.instant("logged_at", offsetKey: "utc_offset_minutes")
            }
            if let kind = try r.string("kind") {
                guard let parsed = MoodKind(parsing: kind) else {
                    throw r.error("kind", "must be momentary_emotion or daily_mood")
                }
                replacement.changes.kind = parsed
            }
            return replacement
        } catch {
            throw MoodError.invalid(error.field ?? "body", error.problem)
        }
    }

    /// A `/api/v1/progress` record: `type` `mood_score` (the only type kept), `quantity` a whole 1–10, `logged_at`
    /// (absent: now), `notes`.
    /// - Throws: ``MoodError`` `invalid_input` naming the field.
    public static func progressDraft(from json: JSONValue) throws(MoodError) -> MoodDraft {
        let r = try reader(json)
        do throws(ImportError) {
            let type = try r.string("type") ?? "mood_score"  // null or absent: a mood score
            guard type == "mood_score" else { throw r.error("type", "only mood_score is stored") }
            guard let quantity = try r.number("quantity") else { throw r.error("quantity", "is required") }
            guard quantity.rounded() == quantity, MoodRules.scoreValues.contains(quantity) else {
                throw r.error("quantity", "must be a whole score \(MoodRules.scoreRangeText)")
            }
            var draft = MoodDraft(score: Int(quantity), notes: try r.string("notes"), suggestLabels: false)
            if r.record["logged_at"] != nil, r.record["logged_at"] != .null {
                draft.loggedAt = try r.instant("logged_at")
            }
            return draft
        } catch {
            throw MoodError.invalid(error.field ?? "body", error.problem)
        }
    }

    private static func reader(_ json: JSONValue) throws(MoodError) -> RecordReader {
        guard case .object = json else { throw MoodError.invalid("body", "must be a JSON object") }
        let reader = RecordReader(record: json, number: 0)
        // Checked even without logged_at (then it is not used): a value out of range is never accepted silently.
        do throws(ImportError) {
            if let offset = try reader.number("utc_offset_minutes"), offset.rounded() != offset || abs(offset) > 840 {
                throw reader.error("utc_offset_minutes", "must be whole minutes within ±840")
            }
        } catch {
            throw MoodError.invalid(error.field ?? "utc_offset_minutes", error.problem)
        }
        return reader
    }

    /// `valence`, or a whole `score` / `mood_score` 1–10 (not both kinds).
    private static func scalars(_ r: RecordReader) throws(ImportError) -> (Double?, Int?) {
        let valence = try r.number("valence")
        var score: Int?
        if try r.number("score") != nil, try r.number("mood_score") != nil {
            throw r.error("score", "give either score or mood_score, not both")
        }
        for key in ["score", "mood_score"] {
            if let value = try r.number(key) {
                guard value.rounded() == value, MoodRules.scoreValues.contains(value) else {
                    throw r.error(key, "must be a whole score \(MoodRules.scoreRangeText)")
                }
                score = Int(value)
            }
        }
        if valence != nil, score != nil { throw r.error("valence", "give either a valence or a score, not both") }
        return (valence, score)
    }
}
