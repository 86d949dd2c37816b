/// How a route spells an entry: the ledger's own form (the CLI, the changes feed) or a seed route's conventions
/// (`Specs/server.md`, *Seed shapes*).
package struct EntryJSONStyle: Sendable, Hashable {
    /// Instants in whole seconds (no fraction): what ISO8601DateFormatter's and JSONDecoder's `.iso8601` defaults parse.
    package var wholeSeconds = false
    /// `updated_at` equal to `created_at` until the entry is edited, never `null`.
    package var updatedAtAlways = false
    /// `is_healthkit` after `source_id`.
    package var healthKitFlag = false
    /// Apple's associations in camelCase (`currentEvents`, `selfCare`).
    package var camelCaseWords = false

    /// The ledger's own form: instants to the millisecond, `updated_at` `null` until edited.
    package static let ledger = EntryJSONStyle()
    /// Seed 001's mood routes: whole seconds, `updated_at` `null` until edited (as its documents show).
    package static let moodAPI = EntryJSONStyle(wholeSeconds: true)
    /// Seed 002's wellness routes: whole seconds, `is_healthkit`, `updated_at` always, camelCase associations.
    package static let wellness = EntryJSONStyle(
        wholeSeconds: true, updatedAtAlways: true, healthKitFlag: true, camelCaseWords: true)
}

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
    ///   - style: the seed route's conventions (`Specs/server.md`, *Seed shapes*); default: the ledger's own.
    package func writeJSON(
        to out: inout JSONBytes, userID: String? = nil, typedScore: Bool = false, style: EntryJSONStyle = .ledger
    ) {
        func instant(_ milliseconds: Int64, offset: Int) {
            // Whole seconds where the seed's apps parse with ISO8601DateFormatter's defaults (no fractions).
            let shown = style.wholeSeconds ? milliseconds - ((milliseconds % 1000) + 1000) % 1000 : milliseconds
            out.instant(milliseconds: shown, offsetMinutes: offset)
        }
        out.beginObject()
        out.key("id")
        out.id(id)
        if let userID {
            out.key("user_id")
            out.string(userID)
        }
        out.key("logged_at")
        instant(loggedAt.milliseconds, offset: loggedAt.utcOffsetMinutes)
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
        if style.camelCaseWords {
            // Seed 002 spells Apple's two-word associations in camelCase (`currentEvents`, `selfCare`).
            associationList.forEach { $0.isCustom ? $0.writeJSON(to: &out) : out.string($0.name) }
        } else {
            associationList.forEach { $0.writeJSON(to: &out) }
        }
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
        if style.healthKitFlag {
            out.key("is_healthkit")
            out.bool(source == .healthkit)
        }
        out.key("created_at")
        instant(createdAt, offset: 0)
        out.key("updated_at")
        if updatedAt == createdAt && !style.updatedAtAlways { out.null() } else { instant(updatedAt, offset: 0) }
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
