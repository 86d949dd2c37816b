/// A mood entry as the ledger holds it: the current state of one record, rebuilt from its events.
///
/// Held by the million and copied on every event a replay folds, so the value is 72 bytes of plain fields plus one
/// optional reference: the fields that need the heap (tags, notes, source id, word lists that do not pack into the
/// entry's one word of them) live together in one immutable `EntryExtras` box, absent when all are empty. Copying
/// an entry retains at most one object, and most entries hold none.
public struct MoodEntry: Sendable, Equatable, Identifiable {
    /// The entry's identity.
    public var id: EntryID
    /// When it was logged, with the user's UTC offset.
    public var loggedAt: LoggedAt
    /// Momentary emotion or daily mood.
    public var kind: MoodKind
    /// Where the entry came from.
    public var source: MoodSource
    /// The typed score in one byte (0: none); see ``enteredScore``.
    private var typedScore: UInt8
    /// Whether ``extras`` holds a source id. This and ``spilledLists`` say what the box holds without reaching it:
    /// they sit in the padding after ``typedScore`` (the entry stays 72 bytes), set wherever ``extras`` is
    /// (``noteExtras()``). The box is far away in memory, and a getter from another module that reaches into it is
    /// handed a copy of the entry (its extras retained and released): a replay asks this of every entry it creates,
    /// most of which hold no source id.
    package private(set) var hasSourceID: Bool
    /// Which word lists spilled into ``extras`` (bit 0 the labels, bit 1 the associations): an empty list's part of
    /// ``packedWords`` is zero as a spilled one's is, and the analytics' bulk read of every entry asks the box only
    /// for a list that did spill.
    private var spilledLists: UInt8
    /// The valence as its grid value (``Valence/fixed(_:)``); `Int64.min`: none: eight bytes where an optional `Double` takes sixteen.
    private var grid: Int64
    /// Both word lists when each is at most five of Apple's words: the labels' ``WordList/compact(width:)`` form in
    /// bits 0–32 (6 bits a word), the associations' in bits 33–60 (5 bits a word). A list that does not fit is in
    /// ``extras`` and its part here is 0. One word holds both lists.
    private var packedWords: UInt64
    /// Tags, notes, source id and spilled word lists; `nil` when all are empty (canonical: equality compares
    /// contents). Safe to share across threads though `ManagedBuffer` is not `Sendable`: nothing changes the object
    /// after ``EntryExtras/make(notes:sourceID:tags:labels:associations:)`` returns it.
    nonisolated(unsafe) private var extras: EntryExtras?
    /// When the ledger recorded the creating event (milliseconds since 1970).
    public var createdAt: Int64
    /// When the ledger recorded the latest event that changed the entry.
    public var updatedAt: Int64

    /// The entry as an event's entry body keeps it (`Specs/events.md`, *Entry body*): its content, without the
    /// ledger's created and updated times, which the fold sets. An event made with it reads back from the log equal.
    package var bodyContent: MoodEntry {
        var content = self
        content.createdAt = 0
        content.updatedAt = 0
        return content
    }

    /// Valence −1…+1; `nil` when only labels were given. Set values are rounded onto the 2⁻⁴⁰ grid; read back, a
    /// value is the shortest decimal on its grid point (``Valence/display(_:)``), so a valence written with up to
    /// eleven decimals reads back `==` as written (`0.4` is `0.4`, never the grid's `0.3999999999996362`).
    public var valence: Double? {
        get { grid == .min ? nil : Valence.display(Valence.value(grid)) }
        set { grid = newValue.map(Valence.fixed) ?? .min }
    }

    /// The valence's grid value, if any (what analytics sum).
    package var valenceGrid: Int64? { grid == .min ? nil : grid }

    /// The valence's grid value and both word lists of the entry `entry` points to, read where it is held: a getter
    /// called on `entry.pointee` from another module is handed a copy of the whole entry (its extras retained and
    /// released), and the analytics' bulk build reads these three of every entry.
    @inline(__always)
    package static func analyticsFields(
        of entry: UnsafePointer<MoodEntry>
    ) -> (grid: Int64?, labels: WordList<LabelDomain>, associations: WordList<AssociationDomain>) {
        let grid = entry.pointee.grid
        let words = entry.pointee.packedWords
        // The extras are taken (retained) only where the word cannot answer: a reference loaded for every entry was
        // retained and released, reaching each entry's extras far away in memory (~19 ms of the analytics' build
        // at 1M).
        let spilled = entry.pointee.spilledLists
        let labelList =
            spilled & labelsSpilled != 0
            ? labels(words, spilled, entry.pointee.extras) : WordList(compact: words & labelMask, width: labelWidth)
        let associationList =
            spilled & associationsSpilled != 0
            ? associations(words, spilled, entry.pointee.extras)
            : WordList(compact: words >> associationShift, width: associationWidth)
        return (grid == .min ? nil : grid, labelList, associationList)
    }

    /// The labels held in `words` (their part of ``packedWords``), or spilled into `extras` (`spilled`:
    /// ``spilledLists``), which is read only for a list that spilled: an entry's extras are far from it in memory,
    /// and a bulk read of every entry then waited on them.
    @inline(__always)
    private static func labels(_ words: UInt64, _ spilled: UInt8, _ extras: EntryExtras?) -> WordList<LabelDomain> {
        if spilled & labelsSpilled != 0, let list = extras?.spilledLabels { return WordList(list) }
        return WordList(compact: words & labelMask, width: labelWidth)
    }

    /// The associations held in `words` (their part of ``packedWords``), or spilled into `extras` (read only for a
    /// list that spilled, as ``labels(_:_:_:)``).
    @inline(__always)
    private static func associations(
        _ words: UInt64, _ spilled: UInt8, _ extras: EntryExtras?
    ) -> WordList<AssociationDomain> {
        if spilled & associationsSpilled != 0, let list = extras?.spilledAssociations { return WordList(list) }
        return WordList(compact: words >> associationShift, width: associationWidth)
    }

    /// The 1–10 score the user typed, if they typed one (never adjusted by labels).
    public var enteredScore: Int? {
        get { typedScore == 0 ? nil : Int(typedScore) }
        set { typedScore = newValue.map { UInt8(clamping: $0) } ?? 0 }
    }

    /// Labels, packed inline when they can be (see ``WordList``).
    package var labelList: WordList<LabelDomain> {
        get { Self.labels(packedWords, spilledLists, extras) }
        set {
            let compact = newValue.compact(width: Self.labelWidth)
            packedWords = packedWords & ~Self.labelMask | (compact ?? 0)
            if compact == nil || spilledLists & Self.labelsSpilled != 0 {
                update { $0.labels = compact == nil ? newValue.array : nil }
            }
        }
    }

    /// Associations, packed inline when they can be.
    package var associationList: WordList<AssociationDomain> {
        get { Self.associations(packedWords, spilledLists, extras) }
        set {
            let compact = newValue.compact(width: Self.associationWidth)
            packedWords = packedWords & Self.labelMask | (compact ?? 0) << Self.associationShift
            if compact == nil || spilledLists & Self.associationsSpilled != 0 {
                update { $0.associations = compact == nil ? newValue.array : nil }
            }
        }
    }

    /// The layout of ``packedWords``: 38 labels fit 6 bits, 18 associations 5.
    private static let labelWidth: UInt64 = 6
    private static let associationWidth: UInt64 = 5
    private static let associationShift: UInt64 = 33
    private static let labelMask: UInt64 = 1 << associationShift - 1
    /// The bits of ``spilledLists``.
    private static let labelsSpilled: UInt8 = 1
    private static let associationsSpilled: UInt8 = 2

    /// Both lists in the entry's word, and those that do not fit as arrays for the extras.
    private static func pack(
        _ labels: WordList<LabelDomain>, _ associations: WordList<AssociationDomain>
    )
        -> (word: UInt64, labels: [MoodLabel]?, associations: [MoodAssociation]?)
    {
        let compactLabels = labels.compact(width: labelWidth)
        let compactAssociations = associations.compact(width: associationWidth)
        return (
            (compactLabels ?? 0) | (compactAssociations ?? 0) << associationShift,
            compactLabels == nil ? labels.array : nil, compactAssociations == nil ? associations.array : nil
        )
    }

    /// Labels, in the order given, without duplicates.
    public var labels: [MoodLabel] {
        get { labelList.array }
        set { labelList = WordList(newValue) }
    }

    /// Associations, in the order given, without duplicates.
    public var associations: [MoodAssociation] {
        get { associationList.array }
        set { associationList = WordList(newValue) }
    }

    /// Free-form context tags (e.g. imported activities), without duplicates.
    public var tags: [String] {
        get { extras?.tags ?? [] }
        set { if !newValue.isEmpty || extras?.tags.isEmpty == false { update { $0.tags = newValue } } }
    }

    /// Notes, trimmed; never empty.
    public var notes: String? {
        get { extras?.notes }
        set { if newValue != nil || extras?.hasNotes == true { update { $0.notes = newValue } } }
    }

    /// The source's own identifier, unique per source.
    public var sourceID: String? {
        get { extras?.sourceID }
        set { if newValue != nil || hasSourceID { update { $0.sourceID = newValue } } }
    }

    /// Replaces the extras box by a changed copy (the box is shared by every copy of the entry, so it never changes
    /// in place), or by nothing when all its fields are empty.
    private mutating func update(_ change: (inout EntryExtras.Fields) -> Void) {
        var fields = extras?.fields ?? EntryExtras.Fields()
        change(&fields)
        extras = EntryExtras.make(fields)
        noteExtras()
    }

    /// Sets the fields that say what ``extras`` holds (``hasSourceID``, ``spilledLists``) from the box, which the
    /// caller has just made: every assignment of ``extras`` is followed by this.
    private mutating func noteExtras() {
        hasSourceID = extras?.hasSourceID == true
        spilledLists =
            (extras?.spilledLabels != nil ? Self.labelsSpilled : 0)
            | (extras?.spilledAssociations != nil ? Self.associationsSpilled : 0)
    }

    /// Creates an entry.
    public init(
        id: EntryID, loggedAt: LoggedAt, kind: MoodKind = .momentaryEmotion, valence: Double? = nil,
        enteredScore: Int? = nil, labels: [MoodLabel] = [], associations: [MoodAssociation] = [],
        tags: [String] = [], notes: String? = nil, source: MoodSource = .manual, sourceID: String? = nil,
        createdAt: Int64 = 0, updatedAt: Int64 = 0
    ) {
        let words = Self.pack(WordList(labels), WordList(associations))
        self.init(
            id: id, loggedAt: loggedAt, kind: kind, grid: valence.map(Valence.fixed) ?? .min,
            typedScore: enteredScore.map { UInt8(clamping: $0) } ?? 0, packedWords: words.word, source: source,
            extras: EntryExtras.make(
                EntryExtras.Fields(
                    tags: tags, notes: notes, sourceID: sourceID,
                    labels: words.labels, associations: words.associations)))
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Creates an entry from values already in their stored form (the codec's path: no intermediate arrays, and the
    /// notes and source id as the validated UTF-8 bytes it read, copied once into the entry's extras).
    init(
        id: EntryID, loggedAt: LoggedAt, kind: MoodKind, grid: Int64, typedScore: UInt8,
        labels: WordList<LabelDomain>, associations: WordList<AssociationDomain>, tags: [String],
        notesBytes: UnsafeRawBufferPointer?, source: MoodSource, sourceIDBytes: UnsafeRawBufferPointer?
    ) {
        let words = Self.pack(labels, associations)
        self.init(
            id: id, loggedAt: loggedAt, kind: kind, grid: grid, typedScore: typedScore, packedWords: words.word,
            source: source,
            extras: EntryExtras.make(
                notes: notesBytes, sourceID: sourceIDBytes, tags: tags, labels: words.labels,
                associations: words.associations))
    }

    /// The one initializer that sets the fields (`extras` already holds the word lists that do not pack, if any).
    private init(
        id: EntryID, loggedAt: LoggedAt, kind: MoodKind, grid: Int64, typedScore: UInt8, packedWords: UInt64,
        source: MoodSource, extras: EntryExtras?
    ) {
        self.id = id
        self.loggedAt = loggedAt
        self.kind = kind
        self.source = source
        self.typedScore = typedScore
        self.grid = grid
        self.packedWords = packedWords
        self.extras = extras
        self.hasSourceID = false
        self.spilledLists = 0
        self.createdAt = 0
        self.updatedAt = 0
        noteExtras()
    }

    /// The notes' UTF-8 bytes (`nil`: no notes), for as long as `body` runs (the codec writes them without a `String`).
    func withNotesBytes<R>(_ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        guard let extras else { return try body(nil) }
        return try extras.withNotesBytes(body)
    }

    /// The source id's UTF-8 bytes (`nil`: none), for as long as `body` runs (no `String` built).
    package func withSourceIDBytes<R>(_ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        guard let extras else { return try body(nil) }
        return try extras.withSourceIDBytes(body)
    }

    /// Whether the entry comes from `source` with a source id of these UTF-8 bytes (no `String` built).
    package func hasSourceKey(_ source: MoodSource, _ sourceID: UnsafeRawBufferPointer) -> Bool {
        self.source == source && withSourceIDBytes { $0?.elementsEqual(sourceID) ?? false }
    }

    /// The 1–10 score: the one typed, else derived from valence and labels; `nil` without a valence.
    public var score: Int? {
        if let enteredScore { return enteredScore }
        return valence.map { Valence.score(for: $0, labels: labelList) }
    }

    /// The valence class; `nil` without a valence.
    public var valenceClassification: ValenceClassification? { valence.map(Valence.classification(of:)) }

    /// The user's local day.
    public var localDate: LocalDate { loggedAt.localDate }

    /// Whether edits and deletes are refused: entries from HealthKit are read-only here.
    public var isReadOnly: Bool { source == .healthkit }
}
