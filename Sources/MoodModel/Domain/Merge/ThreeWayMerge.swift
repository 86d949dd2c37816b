/// The field-by-field merge of `Specs/sync.md`, *Merging*: base (what the server had when the entry was last in
/// step), here, and the server's current version.
///
/// - A field changed on one side only takes that side.
/// - `labels`, `associations` and `tags` merge as sets of additions and removals against the base: what both keep,
///   plus what either added; what either removed is gone. A result over the field's limit keeps here's list and is
///   a conflict.
/// - Valence and a typed score are one field; `logged_at`, `kind` and `notes` are each a field.
/// - A field changed on both sides to different values is a conflict: here's value wins (the merging device's write
///   reaches the server last), and the conflict is recorded with both values.
/// - Without a base every difference counts as changed on both sides (scalars: here wins, a conflict; sets: union).
public enum ThreeWayMerge {
    /// What happened to one field.
    public struct FieldOutcome: Sendable, Equatable {
        public var field: MergeFields
        public var changedHere: Bool
        public var changedThere: Bool
        /// Both changed it to different values (or a set outgrew its limit): here's value was kept.
        public var conflict: Bool
    }

    /// Every field's outcome, and the conflicts among them.
    public struct Outcome: Sendable, Equatable {
        public var fields: [FieldOutcome]
        public var conflicts: MergeFields
    }

    /// The merged version of an entry changed on both sides (`here`'s id, source and timestamps are kept).
    public static func merge(base: MoodEntry?, here: MoodEntry, theirs: MoodEntry) -> MoodEntry {
        var result = here
        let take = { (field: MergeFields) -> Bool in
            changed(field, from: base, to: theirs) && !changed(field, from: base, to: here)
        }
        if take(.mood) {
            result.valence = theirs.valence
            result.enteredScore = theirs.enteredScore
        }
        if take(.loggedAt) { result.loggedAt = theirs.loggedAt }
        if take(.kind) { result.kind = theirs.kind }
        if take(.notes) { result.notes = theirs.notes }
        if let labels = mergedSet(base?.labels, here.labels, theirs.labels, limit: MoodRules.maximumLabels) {
            result.labels = labels
        }
        if let associations = mergedSet(
            base?.associations, here.associations, theirs.associations,
            limit: MoodRules.maximumAssociations)
        {
            result.associations = associations
        }
        if let tags = mergedSet(base?.tags, here.tags, theirs.tags, limit: MoodRules.maximumTags) { result.tags = tags }
        // A result an entry may not be (no valence and no labels) keeps here's version whole.
        if result.valence == nil && result.labels.isEmpty { return here }
        return result
    }

    /// What the merge of these versions does to each field; `nil` for a side means deleted there.
    public static func outcomes(base: MoodEntry?, here: MoodEntry?, theirs: MoodEntry?) -> Outcome {
        guard let here, let theirs else {
            // Deleted on one side: a conflict when the other side's version is not the base (its change is lost, or
            // it brings the entry back).
            let survivor = here ?? theirs
            let lost = survivor.map { survivor in base.map { !sameContent($0, survivor) } ?? true } ?? false
            let outcome = FieldOutcome(
                field: .existence, changedHere: here == nil || (here != nil && lost),
                changedThere: theirs == nil || (theirs != nil && lost), conflict: lost)
            return Outcome(fields: [outcome], conflicts: lost ? .existence : [])
        }
        var fields: [FieldOutcome] = []
        var conflicts: MergeFields = []
        for (_, field) in MergeFields.named where field != .existence {
            let h = changed(field, from: base, to: here)
            let t = changed(field, from: base, to: theirs)
            var conflict = h && t && changed(field, from: here, to: theirs)
            switch field {
            case .labels:
                conflict =
                    conflict
                    && mergedSet(base?.labels, here.labels, theirs.labels, limit: MoodRules.maximumLabels) == nil
            case .associations:
                conflict =
                    conflict
                    && mergedSet(
                        base?.associations, here.associations, theirs.associations,
                        limit: MoodRules.maximumAssociations) == nil
            case .tags:
                conflict =
                    conflict && mergedSet(base?.tags, here.tags, theirs.tags, limit: MoodRules.maximumTags) == nil
            default: break
            }
            fields.append(FieldOutcome(field: field, changedHere: h, changedThere: t, conflict: conflict))
            if conflict { conflicts.insert(field) }
        }
        return Outcome(fields: fields, conflicts: conflicts)
    }

    /// Whether `field` differs between two versions (always, when `a` is not known).
    public static func changed(_ field: MergeFields, from a: MoodEntry?, to b: MoodEntry) -> Bool {
        guard let a else { return true }
        switch field {
        // The typed flag is part of the mood: a device that turns a derived score into a typed one has changed it.
        // (A remote answer that carries no typed flag is read as the typed score it translates before merging.)
        case .mood: return a.valence != b.valence || a.enteredScore != b.enteredScore
        case .loggedAt: return a.loggedAt != b.loggedAt
        case .kind: return a.kind != b.kind
        case .notes: return a.notes != b.notes
        case .labels: return a.labels != b.labels
        case .associations: return a.associations != b.associations
        case .tags: return a.tags != b.tags
        default: return false
        }
    }

    /// Whether two versions carry the same data (timestamps, source and origin aside).
    public static func sameContent(_ a: MoodEntry, _ b: MoodEntry) -> Bool {
        MergeFields.named.allSatisfy { $0.field == .existence || !changed($0.field, from: a, to: b) }
    }

    /// What both sides keep plus what either added (here's order, then theirs' additions); `nil` when that is over
    /// `limit` (the caller keeps here's list). Without a base: the union.
    static func mergedSet<T: Hashable>(_ base: [T]?, _ here: [T], _ theirs: [T], limit: Int) -> [T]? {
        let baseSet = Set(base ?? [])
        let hereSet = Set(here)
        let theirSet = Set(theirs)
        var result: [T] = []
        var seen = Set<T>()
        for item in here
        where (theirSet.contains(item) || !baseSet.contains(item) || base == nil) && seen.insert(item).inserted {
            result.append(item)
        }
        for item in theirs
        where (!baseSet.contains(item) || (base == nil && !hereSet.contains(item))) && seen.insert(item).inserted {
            result.append(item)
        }
        return result.count <= limit ? result : nil
    }
}
