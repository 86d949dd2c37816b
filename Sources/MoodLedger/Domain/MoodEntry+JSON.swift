extension MoodEntry {
    /// The backend API's entry shape (snake_case keys), as `Specs/cli.md` lists them.
    public var json: JSONValue {
        .object(
            [("id", .string(id.description))] + fields(derived: true) + [
                ("created_at", .string(ISO8601.format(milliseconds: createdAt, offsetMinutes: 0))),
                // `null` until the entry is first changed (the backend API's rule).
                (
                    "updated_at",
                    updatedAt == createdAt ? .null : .string(ISO8601.format(milliseconds: updatedAt, offsetMinutes: 0))
                )
            ])
    }

    /// ``json`` written straight into `out`, byte for byte the same text (a server's answers use it: no tree).
    /// - Parameters:
    ///   - out: the text to append to.
    ///   - userID: adds the seed's `user_id` after `id` (single-entry answers).
    ///   - typedScore: adds `typed_score` after `score` (the changes feed's entry object, `Specs/server.md`).
    package func writeJSON(to out: inout JSONBytes, userID: String? = nil, typedScore: Bool = false) {
        out.beginObject()
        out.key("id")
        out.id(id)
        if let userID {
            out.key("user_id")
            out.string(userID)
        }
        out.key("logged_at")
        out.instant(milliseconds: loggedAt.milliseconds, offsetMinutes: loggedAt.utcOffsetMinutes)
        out.key("utc_offset_minutes")
        out.int(Int64(loggedAt.utcOffsetMinutes))
        out.key("kind")
        out.string(kind.wireName)
        out.key("valence")
        if let valence { out.double(Valence.display(valence)) } else { out.null() }
        out.key("valence_classification")
        out.string(valenceClassification?.wireName)
        out.key("score")
        out.int(score)
        if typedScore {
            out.key("typed_score")
            out.int(enteredScore)
        }
        out.key("labels")
        out.beginArray()
        labelList.forEach { $0.writeJSON(to: &out) }
        out.endArray()
        out.key("associations")
        out.beginArray()
        associationList.forEach { $0.writeJSON(to: &out) }
        out.endArray()
        out.key("tags")
        out.beginArray()
        for tag in tags { out.string(tag) }
        out.endArray()
        out.key("notes")
        out.string(notes)
        out.key("source")
        out.string(source.rawValue)
        out.key("source_id")
        out.string(sourceID)
        out.key("created_at")
        out.instant(milliseconds: createdAt, offsetMinutes: 0)
        out.key("updated_at")
        if updatedAt == createdAt { out.null() } else { out.instant(milliseconds: updatedAt, offsetMinutes: 0) }
        out.endObject()
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

    /// The fields a `mood.created` event carries (no ledger timestamps, no derived values).
    var creationJSON: JSONValue { .object(fields(derived: false)) }

    /// The data fields in API order; `derived` adds the classification and the derived score (else the typed one).
    private func fields(derived: Bool) -> [(String, JSONValue)] {
        var pairs: [(String, JSONValue)] = [
            ("logged_at", .string(loggedAt.iso8601)),
            ("utc_offset_minutes", .int(Int64(loggedAt.utcOffsetMinutes))),
            ("kind", .string(kind.wireName)),
            ("valence", .optional(valence) { .double(Valence.display($0)) })
        ]
        if derived {
            pairs.append(("valence_classification", .optional(valenceClassification) { .string($0.wireName) }))
        }
        pairs += [
            ("score", .optional(derived ? score : enteredScore) { .int(Int64($0)) }),
            ("labels", .array(labels.map { .string($0.wireName) })),
            ("associations", .array(associations.map { .string($0.wireName) })),
            ("tags", .array(tags.map { .string($0) })),
            ("notes", .optional(notes) { .string($0) }),
            ("source", .string(source.rawValue)),
            ("source_id", .optional(sourceID) { .string($0) })
        ]
        return pairs
    }
}
