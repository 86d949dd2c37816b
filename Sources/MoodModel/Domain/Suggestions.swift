/// What the older apps suggested: labels for a score, associations from note keywords. See `Specs/mood-model.md`.
public enum Suggestions {
    /// The labels suggested for a score logged without labels.
    /// - Parameters:
    ///   - score: 1…10.
    ///   - notes: the notes, searched case-insensitively for the extra words.
    public static func labels(forScore score: Int, notes: String?) -> [MoodLabel] {
        let text = notes?.lowercased() ?? ""
        var names: [String]
        switch score {
        case ...1: names = ["sad", "hopeless"] + (text.contains("lonely") ? ["lonely"] : [])
        case 2: names = ["anxious", "worried"] + (text.contains("stress") ? ["stressed"] : [])
        case 3: names = ["frustrated", "annoyed"]
        case 4: names = ["irritated"]
        case 5: names = ["calm", "content"]
        case 6: names = ["content", "peaceful"]
        case 7: names = ["happy", "peaceful"]
        case 8: names = ["happy", "confident"] + (text.contains("excit") ? ["excited"] : [])
        case 9: names = ["excited", "grateful"]
        default: names = ["passionate", "hopeful"]
        }
        return names.map(MoodLabel.named)
    }

    /// The older app kept one `MoodKind` per entry: it is the entry's first label, or `content` when there is none.
    /// The other direction is the label itself (that app's kinds are Apple label names).
    /// - Parameter labels: the entry's labels.
    public static func legacyMoodKind(for labels: [MoodLabel]) -> MoodLabel {
        labels.first ?? .named("content")
    }

    /// Keyword → association. A keyword ending in `*` matches any word starting with it; others match whole words.
    public static let associationKeywords: [(keyword: String, association: String)] = [
        ("work", "work"), ("job", "work"), ("office", "work"), ("boss", "work"), ("meeting", "work"),
        ("deadline*", "work"), ("colleague*", "work"),
        ("family", "family"), ("mom", "family"), ("dad", "family"), ("mother", "family"), ("father", "family"),
        ("parents", "family"), ("kids", "family"), ("children", "family"), ("sister", "family"),
        ("brother", "family"),
        ("friend*", "friends"), ("party", "friends"),
        ("exercise*", "fitness"), ("workout*", "fitness"), ("gym", "fitness"), ("run", "fitness"),
        ("running", "fitness"), ("yoga", "fitness"), ("sport*", "fitness"),
        ("partner", "partner"), ("wife", "partner"), ("husband", "partner"), ("girlfriend", "partner"),
        ("boyfriend", "partner"),
        ("doctor", "health"), ("sick", "health"), ("health*", "health"), ("ill", "health"),
        ("money", "money"), ("bills", "money"), ("rent", "money"), ("budget*", "money"),
        ("school", "education"), ("exam*", "education"), ("study*", "education"), ("class", "education"),
        ("travel*", "travel"), ("trip", "travel"), ("flight", "travel"), ("vacation", "travel"),
        ("weather", "weather"), ("rain*", "weather"), ("sunny", "weather"),
        ("dating", "dating"),
        ("hobby", "hobbies"), ("hobbies", "hobbies"), ("music", "hobbies"), ("reading", "hobbies"),
        ("meditat*", "selfCare"), ("selfcare", "selfCare"), ("spa", "selfCare"),
        ("chores", "tasks"), ("errands", "tasks"), ("todo", "tasks"),
        ("church", "spirituality"), ("prayer*", "spirituality"),
        ("news", "currentEvents"), ("politic*", "currentEvents"),
        ("neighbo*", "community"), ("volunteer*", "community")
    ]

    /// The associations suggested by keywords in the notes, in the order of first appearance in the table.
    /// - Parameter notes: the notes text; words are split at anything not a letter.
    public static func associations(forNotes notes: String?) -> [MoodAssociation] {
        guard let notes else { return [] }
        let words = notes.lowercased().split(whereSeparator: { !$0.isLetter }).map(String.init)
        var result: [MoodAssociation] = []
        for (keyword, association) in associationKeywords {
            let matches: Bool
            if keyword.hasSuffix("*") {
                let prefix = String(keyword.dropLast())
                matches = words.contains { $0.hasPrefix(prefix) }
            } else {
                matches = words.contains(keyword)
            }
            let word = MoodAssociation.named(association)
            if matches, !result.contains(word) { result.append(word) }
        }
        return result
    }
}
