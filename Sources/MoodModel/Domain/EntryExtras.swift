/// The fields of an entry that need the heap, in one immutable object shared by the entry's copies.
///
/// The notes' and the source id's UTF-8 bytes live in the object's own tail, so an entry with notes or a source id
/// costs one allocation (24 bytes and the text), not a box and strings (80 bytes, then a string of 32 bytes and the
/// text for each): a third of the entries of a large ledger have notes, and each entry from HealthKit a source id of
/// 44 bytes. Tags and word lists that do not pack are rare and share one more object.
final class EntryExtras: ManagedBuffer<EntryExtras.Header, UInt8>, Equatable {
    /// The editable form of the boxed values.
    struct Fields: Equatable {
        var tags: [String] = []
        var notes: String?
        var sourceID: String?
        /// Labels that do not pack into the entry (custom words, or more than five), else `nil`.
        var labels: [MoodLabel]?
        /// Associations likewise.
        var associations: [MoodAssociation]?

        var isEmpty: Bool { tags.isEmpty && notes == nil && sourceID == nil && labels == nil && associations == nil }
    }

    /// Tags and spilled word lists, when any.
    final class Rare: Sendable, Equatable {
        let tags: [String]
        let labels: [MoodLabel]?
        let associations: [MoodAssociation]?

        init(tags: [String], labels: [MoodLabel]?, associations: [MoodAssociation]?) {
            self.tags = tags
            self.labels = labels
            self.associations = associations
        }

        static func == (a: Rare, b: Rare) -> Bool {
            a === b || (a.tags == b.tags && a.labels == b.labels && a.associations == b.associations)
        }
    }

    /// What precedes the tail: the ``Rare`` object's reference when there is one (held retained, released by
    /// `deinit`), the notes' bytes, then the source id's. Never changed after creation (the object is shared). Eight
    /// bytes, the lengths 32-bit (the codec's strings are bounded by the record's size, far below 2³⁰), so the tail
    /// starts 24 bytes into the object: a reference in every object's header, where few have one, would put about
    /// half of them a malloc size class higher.
    struct Header {
        /// The notes' byte count; −1: no notes.
        var notesCount: Int32
        /// The source id's byte count + 1 (0: no source id), with ``EntryExtras/rareBit`` set when the tail starts
        /// with a ``Rare`` reference.
        var sourceIDField: Int32
    }

    /// The bit of ``Header/sourceIDField`` that says the tail starts with a ``Rare`` reference.
    private static let rareBit: Int32 = 1 << 30

    /// An object for the fields, or `nil` when they are all empty (so that an entry's representation is canonical).
    static func make(_ fields: Fields) -> EntryExtras? {
        guard !fields.isEmpty else { return nil }
        return withBytes(of: fields.notes) { notes in
            withBytes(of: fields.sourceID) { sourceID in
                make(
                    notes: notes, sourceID: sourceID, tags: fields.tags, labels: fields.labels,
                    associations: fields.associations)
            }
        }
    }

    /// Calls `body` with a string's UTF-8 bytes, or with `nil`.
    private static func withBytes<R>(of text: String?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
        guard var text else { return body(nil) }
        return text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }

    /// An object holding these values, the notes and the source id given as their UTF-8 bytes (already validated:
    /// the codec hands the bytes it read without building a `String`); `nil` when all are empty.
    static func make(
        notes: UnsafeRawBufferPointer?, sourceID: UnsafeRawBufferPointer?, tags: [String],
        labels: [MoodLabel]?, associations: [MoodAssociation]?
    ) -> EntryExtras? {
        let rare =
            tags.isEmpty && labels == nil && associations == nil
            ? nil : Rare(tags: tags, labels: labels, associations: associations)
        guard notes != nil || sourceID != nil || rare != nil else { return nil }
        let notesCount = notes?.count ?? 0
        let sourceIDCount = sourceID?.count ?? 0
        precondition(notesCount < Int(Int32.max), "notes of 2 GB in an entry")
        precondition(sourceIDCount < Int(rareBit) - 1, "a source id of 1 GB in an entry")
        let rareBytes = rare == nil ? 0 : MemoryLayout<UnsafeRawPointer>.size
        let object = create(minimumCapacity: rareBytes + notesCount + sourceIDCount) { _ in
            Header(
                notesCount: notes == nil ? -1 : Int32(notesCount),
                sourceIDField: (rare == nil ? 0 : rareBit) | (sourceID == nil ? 0 : Int32(sourceIDCount) + 1))
        }
        object.withUnsafeMutablePointerToElements { tail in
            if let rare {
                UnsafeMutableRawPointer(tail).storeBytes(
                    of: Unmanaged.passRetained(rare).toOpaque(), as: UnsafeMutableRawPointer.self)
            }
            if let notes, notesCount > 0 {
                (tail + rareBytes).update(from: notes.bindMemory(to: UInt8.self).baseAddress!, count: notesCount)
            }
            if let sourceID, sourceIDCount > 0 {
                (tail + rareBytes + notesCount).update(
                    from: sourceID.bindMemory(to: UInt8.self).baseAddress!, count: sourceIDCount)
            }
        }
        return unsafeDowncast(object, to: EntryExtras.self)
    }

    deinit {
        if hasRare { withUnsafeMutablePointerToElements { Self.rareReference(in: $0).release() } }
    }

    /// The reference at the start of a tail that holds one.
    private static func rareReference(in tail: UnsafeMutablePointer<UInt8>) -> Unmanaged<Rare> {
        Unmanaged.fromOpaque(UnsafeRawPointer(tail).load(as: UnsafeRawPointer.self))
    }

    // The header never changes after `make`: its fields are read through its pointer, as reading `header` (a class
    // property) paid a dynamic exclusivity check each time, once an event for a third of a replay's events.
    private var notesCount: Int32 { withUnsafeMutablePointerToHeader { $0.pointee.notesCount } }
    private var sourceIDField: Int32 { withUnsafeMutablePointerToHeader { $0.pointee.sourceIDField } }
    private var sourceIDCount: Int32 { (sourceIDField & ~Self.rareBit) - 1 }
    private var hasRare: Bool { sourceIDField & Self.rareBit != 0 }
    /// Where the notes start in the tail (after the ``Rare`` reference, if any).
    private var notesStart: Int { hasRare ? MemoryLayout<UnsafeRawPointer>.size : 0 }
    private var rare: Rare? {
        guard hasRare else { return nil }
        return withUnsafeMutablePointerToElements { Self.rareReference(in: $0).takeUnretainedValue() }
    }

    /// The notes' bytes (`nil`: no notes), for as long as `body` runs.
    func withNotesBytes<R>(_ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        let count = Int(notesCount)
        guard count >= 0 else { return try body(nil) }
        let start = notesStart
        return try withUnsafeMutablePointerToElements {
            try body(UnsafeRawBufferPointer(start: $0 + start, count: count))
        }
    }

    /// The source id's bytes (`nil`: none), for as long as `body` runs.
    func withSourceIDBytes<R>(_ body: (UnsafeRawBufferPointer?) throws -> R) rethrows -> R {
        let count = Int(sourceIDCount)
        guard count >= 0 else { return try body(nil) }
        let start = notesStart + max(0, Int(notesCount))
        return try withUnsafeMutablePointerToElements {
            try body(UnsafeRawBufferPointer(start: $0 + start, count: count))
        }
    }

    var hasNotes: Bool { notesCount >= 0 }
    var notes: String? { withNotesBytes { $0.map { String(decoding: $0, as: UTF8.self) } } }
    var hasSourceID: Bool { sourceIDCount >= 0 }
    var sourceID: String? { withSourceIDBytes { $0.map { String(decoding: $0, as: UTF8.self) } } }
    var tags: [String] { rare?.tags ?? [] }
    var spilledLabels: [MoodLabel]? { rare?.labels }
    var spilledAssociations: [MoodAssociation]? { rare?.associations }

    /// The values in their editable form.
    var fields: Fields {
        Fields(tags: tags, notes: notes, sourceID: sourceID, labels: spilledLabels, associations: spilledAssociations)
    }

    static func == (a: EntryExtras, b: EntryExtras) -> Bool {
        if a === b { return true }
        guard a.notesCount == b.notesCount, a.sourceIDField == b.sourceIDField,
            a.rare == b.rare
        else { return false }
        // Same counts and both with a reference or neither: the texts are at the same place, notes then source id.
        let (start, length) = (a.notesStart, max(0, Int(a.notesCount)) + max(0, Int(a.sourceIDCount)))
        return a.withUnsafeMutablePointerToElements { x in
            b.withUnsafeMutablePointerToElements { y in
                UnsafeRawBufferPointer(start: x + start, count: length).elementsEqual(
                    UnsafeRawBufferPointer(start: y + start, count: length))
            }
        }
    }
}
