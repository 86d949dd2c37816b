import MoodLedger

/// One `HKStateOfMind` sample, as the port sees it: immutable once saved (an edit is a delete plus a new sample).
public struct StateOfMindSample: Sendable, Equatable {
    /// The sample's own id: the store gives it (HealthKit's `sample.uuid`), whatever id the app saved it under.
    public var uuid: EntryID
    /// The id the app that saved the sample gave it (`HKMetadataKeyExternalUUID`): for a sample this ledger pushed,
    /// the id its outbox recorded. `nil` for a sample saved without one (another app's, logged in Health).
    public var externalID: EntryID?
    /// When it happened, with the offset it was logged in.
    public var date: LoggedAt
    public var kind: MoodKind
    public var valence: Double
    /// Apple raw values only: custom words cannot be represented.
    public var labels: [MoodLabel]
    public var associations: [MoodAssociation]
    /// The person's note, in the sample's metadata (``StateOfMindSample/notesMetadataKey``): HealthKit's State of Mind
    /// has no field for it.
    public var notes: String?
    /// The 1–10 score the person chose, in the metadata (``StateOfMindSample/scoreMetadataKey``), when the entry was
    /// logged as one: its valence is the score's exact translation (`Specs/mood-model.md`).
    public var score: Int?
    /// For a sample a MoodLedger pushed: the entry it copies (``StateOfMindSample/entryMetadataKey``). The entry is
    /// that ledger's, delivered to its backend by that ledger: another device of the person's learns it there, so a
    /// pull never imports such a sample as a new entry.
    public var ledgerEntryID: EntryID?

    /// The metadata key of the note: the Health app lists it as `Notes: …`.
    public static let notesMetadataKey = "Notes"
    /// The metadata key of the 1–10 score.
    public static let scoreMetadataKey = "MoodScore"
    /// The metadata key of the MoodLedger entry a pushed sample copies.
    public static let entryMetadataKey = "MoodLedgerEntryID"

    public init(
        uuid: EntryID, externalID: EntryID? = nil, date: LoggedAt, kind: MoodKind, valence: Double,
        labels: [MoodLabel], associations: [MoodAssociation], notes: String? = nil, score: Int? = nil,
        ledgerEntryID: EntryID? = nil
    ) {
        self.uuid = uuid
        self.externalID = externalID
        self.date = date
        self.kind = kind
        self.valence = valence
        self.labels = labels
        self.associations = associations
        self.notes = notes
        self.score = score
        self.ledgerEntryID = ledgerEntryID
    }

    /// The score a sample's metadata gives when it is one the valence translates exactly (a score beside another
    /// valence — edited in another app — is not this sample's: the valence stands).
    public var consistentScore: Int? {
        guard let score, (1...10).contains(score) else { return nil }
        return Valence.from(score: score) == Valence.quantized(valence) ? score : nil
    }

    /// The sample for an entry: HealthKit's vocabulary is Apple's fixed list, so another word with a documented
    /// nearest Apple word is sent as that word (counted as translated), and any other custom word is left out
    /// (counted as skipped); `nil` without a valence (HealthKit needs one).
    init?(entry: MoodEntry, uuid: EntryID, skippedCustomWords: inout Int, translatedWords: inout Int) {
        guard let valence = entry.valence else { return nil }
        func carried<D>(_ words: [VocabularyWord<D>]) -> [VocabularyWord<D>] {
            var result: [VocabularyWord<D>] = []
            for word in words {
                guard let apple = word.nearestApple else {
                    skippedCustomWords += 1
                    continue
                }
                if apple != word { translatedWords += 1 }
                if !result.contains(apple) { result.append(apple) }
            }
            return result
        }
        let labels = carried(entry.labels)
        let associations = carried(entry.associations)
        self.init(
            uuid: uuid, date: entry.loggedAt, kind: entry.kind, valence: valence, labels: labels,
            associations: associations, notes: entry.notes, score: entry.enteredScore, ledgerEntryID: entry.id)
    }

    /// HKStateOfMind-shaped JSON with Apple raw values and the classification (`external_uuid` after `uuid` when the
    /// sample has one; `notes` and `score`, its metadata, at the end when it has them).
    public var json: JSONValue {
        var pairs: [(String, JSONValue)] = [("uuid", .string(uuid.description))]
        if let externalID { pairs.append(("external_uuid", .string(externalID.description))) }
        pairs.append(("start_date", .string(date.iso8601)))
        pairs.append(("end_date", .string(date.iso8601)))
        pairs.append(("kind", .int(Int64(kind.rawValue))))
        pairs.append(("valence", .double(Valence.display(valence))))
        pairs.append(("valence_classification", .int(Int64(Valence.classification(of: valence).rawValue))))
        pairs.append(("labels", .array(labels.compactMap(\.appleRawValue).map { .int(Int64($0)) })))
        pairs.append(("associations", .array(associations.compactMap(\.appleRawValue).map { .int(Int64($0)) })))
        if let notes { pairs.append(("notes", .string(notes))) }
        if let score { pairs.append(("score", .int(Int64(score)))) }
        if let ledgerEntryID { pairs.append(("entry_id", .string(ledgerEntryID.description))) }
        return .object(pairs)
    }

    /// Reads and validates one sample of a store file with the rules of `import --format healthkit` (the same
    /// reader) and of new entries: every field present and in range, every word known. Nothing is dropped.
    /// - Parameters:
    ///   - json: the sample object.
    ///   - number: its 1-based position in the file, for the error.
    ///   - now: the current time in milliseconds (the future limit of `start_date`).
    /// - Throws: ``HealthStoreError`` `invalid_data`, naming the sample and the field.
    init(validating json: JSONValue, number: Int, now: Int64) throws(HealthStoreError) {
        guard case .object = json else { throw HealthStoreError(.invalidData, "sample \(number) is not an object") }
        do {
            var reader = RecordReader(record: json, number: number)
            let draft = try JSONImporters.healthKit(&reader)
            let entry = try MoodRules.validate(draft, now: now, newID: { draft.id! })
            var externalID: EntryID?
            if let external = json["external_uuid"], !external.isNull {
                guard let parsed = external.stringValue.flatMap(EntryID.init) else {
                    throw HealthStoreError(.invalidData, "sample \(number), field external_uuid: must be a UUID")
                }
                externalID = parsed
            }
            var score: Int?
            if let value = json["score"], !value.isNull {
                guard let parsed = value.intValue, (1...10).contains(parsed) else {
                    throw HealthStoreError(
                        .invalidData, "sample \(number), field score: must be an integer from 1 to 10")
                }
                score = Int(parsed)
            }
            var ledgerEntryID: EntryID?
            if let value = json["entry_id"], !value.isNull {
                guard let parsed = value.stringValue.flatMap(EntryID.init) else {
                    throw HealthStoreError(.invalidData, "sample \(number), field entry_id: must be a UUID")
                }
                ledgerEntryID = parsed
            }
            self.init(
                uuid: entry.id, externalID: externalID, date: entry.loggedAt, kind: entry.kind,
                valence: entry.valence!, labels: entry.labels, associations: entry.associations, notes: entry.notes,
                score: score, ledgerEntryID: ledgerEntryID)
        } catch let error as ImportError {
            throw HealthStoreError(
                .invalidData,
                "sample \(number)" + (error.field.map { ", field \($0)" } ?? "")
                    + ": \(error.problem)")
        } catch let error as MoodError {
            throw HealthStoreError(.invalidData, "sample \(number): \(error)")
        } catch {
            throw HealthStoreError(.invalidData, "sample \(number): \(error)")
        }
    }

    /// Reads the JSON form back (names or raw values).
    public init?(json: JSONValue) {
        guard let uuid = json["uuid"]?.stringValue.flatMap(EntryID.init), let valence = json["valence"]?.doubleValue,
            valence.isFinite, (-1...1).contains(valence),
            let date = json["start_date"]?.stringValue.flatMap(ISO8601.parse),
            let kind = json["kind"]?.intValue.flatMap(MoodKind.init(rawValue:))
        else { return nil }
        func words<D>(_ key: String) -> [VocabularyWord<D>] {
            (json[key]?.arrayValue ?? []).compactMap { item in
                item.intValue.flatMap(VocabularyWord<D>.init(appleRawValue:))
                    ?? item.stringValue.flatMap { try? VocabularyWord<D>.parse($0) }
            }
        }
        self.init(
            uuid: uuid, externalID: json["external_uuid"]?.stringValue.flatMap(EntryID.init), date: date, kind: kind,
            valence: Valence.quantized(valence), labels: words("labels"), associations: words("associations"),
            notes: json["notes"]?.stringValue, score: json["score"]?.intValue.map { Int($0) },
            ledgerEntryID: json["entry_id"]?.stringValue.flatMap(EntryID.init))
    }
}

/// Why a health store refused.
public struct HealthStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The user denied write access (HealthKit's authorization can be denied at any time).
        public static let authorizationDenied = Code(rawValue: "authorization_denied")
        /// No such sample.
        public static let notFound = Code(rawValue: "not_found")
        /// The store could not be read or written.
        public static let unavailable = Code(rawValue: "unavailable")
        /// The store holds a sample that breaks a rule (named with the sample and field); nothing was done.
        public static let invalidData = Code(rawValue: "invalid_data")
    }

    public var code: Code
    public var message: String
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
    public var description: String { message }
    /// Whether trying again later may help.
    public var retryable: Bool { code != .notFound && code != .invalidData }
}

/// HealthKit's semantics for state-of-mind samples: immutable samples, deniable authorization.
///
/// ``FileHealthStore`` simulates it for tests and the CLI; `HKHealthStoreAdapter` (Apple platforms only) wraps
/// `HKHealthStore`.
public protocol HealthStore: Sendable {
    /// Saves a new sample. The store gives it its own ``StateOfMindSample/uuid``; the `uuid` given is kept as its
    /// ``StateOfMindSample/externalID`` (`HKMetadataKeyExternalUUID`), by which the app finds it again.
    /// - Throws: ``HealthStoreError`` (`authorization_denied`, `unavailable`).
    func save(_ sample: StateOfMindSample) throws
    /// Deletes the sample the app saved under `uuid` (its ``StateOfMindSample/externalID``).
    /// - Throws: ``HealthStoreError``.
    func delete(_ uuid: EntryID) throws
    /// Every state-of-mind sample visible to the app.
    /// - Throws: ``HealthStoreError``.
    func samples() throws -> [StateOfMindSample]
    /// What changed since `anchor` (`nil`: since the beginning): HealthKit's anchored query. The ledger keeps the
    /// anchor it was given (`Specs/imports-exports.md`, *HealthKit*), so a pull reads only what changed.
    /// - Throws: ``HealthStoreError``.
    func changes(after anchor: [UInt8]?) throws -> HealthChanges
    /// Checks, before a push records any attempt, that the store can take writes — without reading its samples, so
    /// a push costs the items it sends, not the size of Health. Default: nothing to check (HealthKit answers each
    /// write itself; denied authorization is a per-item failure).
    /// - Throws: ``HealthStoreError`` when the store cannot be used at all (a store file unreadable or holding a
    ///   bad sample); the push then appends nothing.
    func checkWritable() throws
    /// ``save(_:)`` for Swift concurrency: HealthKit's own `async` call in ``HKHealthStoreAdapter``; by default the
    /// synchronous form.
    func save(_ sample: StateOfMindSample) async throws
    /// ``delete(_:)`` for Swift concurrency.
    func delete(_ uuid: EntryID) async throws
    /// ``changes(after:)`` for Swift concurrency.
    func changes(after anchor: [UInt8]?) async throws -> HealthChanges
    /// ``checkWritable()`` for Swift concurrency.
    func checkWritable() async throws
}

extension HealthStore {
    public func checkWritable() throws {}
    public func save(_ sample: StateOfMindSample) async throws { try blockingSave(sample) }
    public func delete(_ uuid: EntryID) async throws { try blockingDelete(uuid) }
    public func changes(after anchor: [UInt8]?) async throws -> HealthChanges { try blockingChanges(after: anchor) }
    public func checkWritable() async throws { try blockingCheckWritable() }

    // The synchronous forms by names of their own: inside an `async` function a call would pick the `async` overload.
    private func blockingSave(_ sample: StateOfMindSample) throws { try save(sample) }
    private func blockingDelete(_ uuid: EntryID) throws { try delete(uuid) }
    private func blockingChanges(after anchor: [UInt8]?) throws -> HealthChanges { try changes(after: anchor) }
    private func blockingCheckWritable() throws { try checkWritable() }
}

/// What an anchored query found: samples added and sample ids deleted since the anchor, and the new anchor.
public struct HealthChanges: Sendable, Equatable {
    public var added: [StateOfMindSample]
    public var deleted: [EntryID]
    /// Opaque bytes to pass to the next ``HealthStore/changes(after:)``.
    public var anchor: [UInt8]

    /// Creates a result.
    public init(added: [StateOfMindSample], deleted: [EntryID], anchor: [UInt8]) {
        self.added = added
        self.deleted = deleted
        self.anchor = anchor
    }
}
