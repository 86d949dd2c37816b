extension MoodEntry {
    /// The backend API's entry shape (snake_case keys), as `Specs/cli.md` lists them.
    public var json: JSONValue {
        .object([("id", .string(id.description))] + fields(derived: true) + [
            ("created_at", .string(ISO8601.format(milliseconds: createdAt, offsetMinutes: 0))),
            // `null` until the entry is first changed (the backend API's rule).
            ("updated_at", updatedAt == createdAt ? .null : .string(ISO8601.format(milliseconds: updatedAt, offsetMinutes: 0))),
        ])
    }

    /// The export shape (`Specs/imports-exports.md`): the API entry without the ledger's own timestamps (an import
    /// makes new ones), plus `typed_score` (the 1–10 score a person typed, or `null`), so that an import restores
    /// every field and a second export is byte-identical.
    public var exportJSON: JSONValue {
        var pairs: [(String, JSONValue)] = [("id", .string(id.description))]
        for (key, value) in fields(derived: true) {
            pairs.append((key, value))
            if key == "score" { pairs.append(("typed_score", .optional(enteredScore) { .int(Int64($0)) })) }
        }
        return .object(pairs)
    }

    /// The entry object of the changes feed (`Specs/server.md`): the API entry plus `typed_score` after `score`, so a
    /// client that pulls it restores a typed 1–10 score as typed.
    public var changeJSON: JSONValue {
        guard case .object(let pairs) = json else { return json }
        var out: [(String, JSONValue)] = []
        for (key, value) in pairs {
            out.append((key, value))
            if key == "score" { out.append(("typed_score", .optional(enteredScore) { .int(Int64($0)) })) }
        }
        return .object(out)
    }

    /// The fields a `mood.created` event carries (no ledger timestamps, no derived values).
    var creationJSON: JSONValue { .object(fields(derived: false)) }

    /// The data fields in API order; `derived` adds the classification and the derived score (else the typed one).
    private func fields(derived: Bool) -> [(String, JSONValue)] {
        var pairs: [(String, JSONValue)] = [
            ("logged_at", .string(loggedAt.iso8601)),
            ("utc_offset_minutes", .int(Int64(loggedAt.utcOffsetMinutes))),
            ("kind", .string(kind.wireName)),
            ("valence", .optional(valence) { .double(Valence.display($0)) }),
        ]
        if derived { pairs.append(("valence_classification", .optional(valenceClassification) { .string($0.wireName) })) }
        pairs += [
            ("score", .optional(derived ? score : enteredScore) { .int(Int64($0)) }),
            ("labels", .array(labels.map { .string($0.wireName) })),
            ("associations", .array(associations.map { .string($0.wireName) })),
            ("tags", .array(tags.map { .string($0) })),
            ("notes", .optional(notes) { .string($0) }),
            ("source", .string(source.rawValue)),
            ("source_id", .optional(sourceID) { .string($0) }),
        ]
        return pairs
    }
}
