import MoodLedger

/// A merge told in words (`sync explain`, `conflicts`): per field, what the base, here and the server had and what
/// the result took. Notes are shown only where the caller allows (never in `sync explain`).
public enum MergeStory {
    /// One field's value in a version, for people: `valence 0.3`, `score 7`, a word list, a time. `nil` version:
    /// the entry did not exist there.
    public static func value(_ field: MergeFields, of entry: MoodEntry?, showNotes: Bool) -> String {
        guard let entry else { return "(deleted)" }
        switch field {
        case .mood:
            if let score = entry.enteredScore { return "score \(score)" }
            return entry.valence.map { "valence \(Valence.display($0))" } ?? "(none)"
        case .loggedAt: return entry.loggedAt.iso8601
        case .kind: return entry.kind.wireName
        case .notes:
            guard let notes = entry.notes else { return "(none)" }
            return showNotes ? "\"\(notes)\"" : "(\(notes.count) characters)"
        case .labels: return list(entry.labels.map(\.wireName))
        case .associations: return list(entry.associations.map(\.wireName))
        case .tags: return list(entry.tags)
        default: return "(present)"
        }
    }

    /// The value as JSON (`conflicts --json`).
    public static func json(_ field: MergeFields, of entry: MoodEntry?) -> JSONValue {
        guard let entry else { return .null }
        switch field {
        case .mood:
            if let score = entry.enteredScore { return .object([("score", .int(Int64(score)))]) }
            return .object([("valence", .optional(entry.valence) { .double(Valence.display($0)) })])
        case .loggedAt: return .string(entry.loggedAt.iso8601)
        case .kind: return .string(entry.kind.wireName)
        case .notes: return .optional(entry.notes) { .string($0) }
        case .labels: return .array(entry.labels.map { .string($0.wireName) })
        case .associations: return .array(entry.associations.map { .string($0.wireName) })
        case .tags: return .array(entry.tags.map { .string($0) })
        default: return .bool(true)
        }
    }

    /// The merge in sentences: one per field that changed on either side, then the result.
    public static func sentences(_ merge: SyncMerge, showNotes: Bool = false) -> [String] {
        let outcome = ThreeWayMerge.outcomes(base: merge.base, here: merge.here, theirs: merge.theirs)
        let base = merge.baseRevision > 0 ? "revision \(merge.baseRevision)" : "an unknown base"
        var lines = ["Merged with the server's revision \(merge.serverRevision) (base: \(base))."]
        for field in outcome.fields where field.changedHere || field.changedThere {
            let name = MergeFields.named.first { $0.field == field.field }?.name ?? "field"
            let show = { (entry: MoodEntry?) in value(field.field, of: entry, showNotes: showNotes) }
            if field.field == .existence {
                lines.append(
                    merge.here == nil
                        ? "Deleted here while the server changed it (\(changedNames(merge.base, merge.theirs))): "
                            + (merge.merged == nil
                                ? "the deletion wins; the server's change is lost." : "the server's version is kept.")
                        : "Deleted on the server while changed here: "
                            + (merge.merged == nil
                                ? "the deletion wins; the change here is lost." : "the change here brings it back."))
                continue
            }
            if field.conflict {
                // A conflict's values are shown as `conflicts` shows them (notes included: the user's own data,
                // needed to choose a side).
                let full = { (entry: MoodEntry?) in value(field.field, of: entry, showNotes: true) }
                let serverWon =
                    merge.merged.map {
                        !ThreeWayMerge.changed(field.field, from: merge.theirs, to: $0)
                            && ThreeWayMerge.changed(field.field, from: merge.here, to: $0)
                    } ?? false
                lines.append(
                    "\(name): conflict — base \(full(merge.base)), here \(full(merge.here)), server \(full(merge.theirs)) → "
                        + "\(full(merge.merged)) "
                        + (serverWon
                            ? "(the server's: another device's write replaced this device's value)."
                            : "(here's: this device's write reaches the server last)."))
            } else if field.changedHere && field.changedThere {
                lines.append("\(name): changed on both sides → \(show(merge.merged)).")
            } else if field.changedHere {
                lines.append("\(name): changed here (\(show(merge.base)) → \(show(merge.here))), kept.")
            } else {
                lines.append("\(name): changed on the server (\(show(merge.base)) → \(show(merge.theirs))), taken.")
            }
        }
        return lines
    }

    private static func changedNames(_ a: MoodEntry?, _ b: MoodEntry?) -> String {
        guard let b else { return "deleted" }
        let names = MergeFields.named.filter {
            $0.field != .existence && ThreeWayMerge.changed($0.field, from: a, to: b)
        }.map(\.name)
        return names.isEmpty ? "no field" : names.joined(separator: ", ")
    }

    private static func list(_ words: [String]) -> String {
        words.isEmpty ? "[]" : "[" + words.joined(separator: ", ") + "]"
    }
}
