/// A projection kept whole in memory: it folds events, ends batches, and writes itself as one entry of the snapshot's
/// projections section, decoded on open (`Specs/ledger.md`, *Where a projection goes*). A new one is a type that
/// conforms and a line in ``KeptProjections/types``; nothing else in the ledger or the snapshot changes.
///
/// The projections read through a snapshot row by row — entries, analytics, the outbox, the record index and the
/// revisions — are laid out for that reading (rows by day, aggregates beside their days, a revision beside its row)
/// and have sections of their own.
package protocol Projection: Sendable, Equatable {
    /// Its name and version, as the snapshot's schema and projections section spell it: `conflicts=2`.
    static var schema: String { get }
    /// The event types it folds: no other event reaches ``apply(_:)`` (a replay skips the call).
    static var eventTypes: [EventType] { get }
    /// The projection before the first event.
    init()
    /// Decodes what ``encoded()`` wrote, every value checked (no seq past the covered `seq`), nothing left over.
    init(decoding bytes: UnsafeRawBufferPointer, seq: UInt64) throws(ByteReader.Malformed)
    /// Its bytes in a snapshot.
    func encoded() -> [UInt8]
    /// Folds one event of a type it folds.
    mutating func apply(_ recorded: RecordedEvent)
    /// The record types it reads beside events: records the other folds skip (a sync batch's carrier), each handed
    /// to ``attached(type:payload:)`` in its place in the batch. Empty for most.
    static var attachmentTypes: [UInt16] { get }
    /// Reads a record of one of ``attachmentTypes``.
    mutating func attached(type: UInt16, payload: UnsafeRawBufferPointer)
    /// The batch being folded ended at `seq`, its last record (a record the folds skip may end a batch).
    mutating func endBatch(at seq: UInt64)
    /// The `ledger.erased` at `seq` (folded already) left `kept` as the only current entries (HealthKit's copies,
    /// when it keeps them). Its rewrite redacts every earlier record of any other entry, so what this projection
    /// keeps of such a record must go here, or a replay of the rewritten log would differ: a projection cannot tell
    /// from the records alone which entries are current. Called by the state, which can; in a replay on two
    /// threads once the record folds come back, so it forgets only what came from records before `seq`.
    mutating func erasedEverything(at seq: UInt64, keeping kept: Set<EntryID>)
}

extension Projection {
    package static var attachmentTypes: [UInt16] { [] }
    package mutating func attached(type: UInt16, payload: UnsafeRawBufferPointer) {}
    package mutating func endBatch(at seq: UInt64) {}
    package mutating func erasedEverything(at seq: UInt64, keeping kept: Set<EntryID>) {}

    /// Whether `other` is of this type and equal to this one.
    fileprivate func isEqual(to other: any Projection) -> Bool { (other as? Self) == self }
}

/// The projections kept whole, listed once.
package struct KeptProjections: Sendable, Equatable {
    /// Every projection kept whole, in the order of the snapshot's projections section.
    static let types: [any Projection.Type] = [
        ConflictsFold.self,
        RequestRecords.self,
        FailureStreaks.self
    ]

    /// Every record type beside events that one of them reads.
    static let attachmentTypes: [UInt16] = types.flatMap { $0.attachmentTypes }

    /// Whether a record the folds skip is read by one of them (the replay keeps such a record's payload).
    @inline(__always)
    static func reads(attachment type: UInt16) -> Bool { attachmentTypes.contains(type) }

    /// Their part of the snapshot's schema string: each one's name and version, in order.
    static var schema: String { types.map { $0.schema }.joined(separator: "/") }

    /// Per projection, a bit for each event type it folds; and all of them together.
    private static let masks: [UInt64] = types.map { $0.eventTypes.reduce(0) { $0 | 1 << UInt64($1.rawValue) } }
    private static let mask = masks.reduce(0, |)

    private var all: [any Projection] = types.map { $0.init() }
    /// Whether an event reached a projection since the last batch ended (else ending the batch is skipped).
    private var touched = false

    init() {}

    /// The projection of type `P`.
    subscript<P: Projection>(_ type: P.Type) -> P {
        for projection in all { if let found = projection as? P { return found } }
        preconditionFailure("\(P.schema) is not listed in KeptProjections.types")
    }

    /// Whether one of them folds events of `type`.
    @inline(__always)
    static func folds(_ type: EventType) -> Bool { mask & 1 << UInt64(type.rawValue) != 0 }

    /// Folds one event into each projection that folds its type: most events reach none, at the cost of one test.
    @inline(__always)
    mutating func apply(_ recorded: RecordedEvent) {
        let bit: UInt64 = 1 << UInt64(recorded.event.type.rawValue)
        guard Self.mask & bit != 0 else { return }
        touched = true
        for index in all.indices where Self.masks[index] & bit != 0 { all[index].apply(recorded) }
    }

    /// Hands a record the folds skip to each projection that reads its type.
    mutating func attached(type: UInt16, payload: UnsafeRawBufferPointer) {
        guard Self.reads(attachment: type) else { return }
        for index in all.indices where Swift.type(of: all[index]).attachmentTypes.contains(type) {
            all[index].attached(type: type, payload: payload)
        }
    }

    /// Hands each the entries an erasure of every entry kept (``Projection/erasedEverything(at:keeping:)``).
    mutating func erasedEverything(at seq: UInt64, keeping kept: Set<EntryID>) {
        for index in all.indices { all[index].erasedEverything(at: seq, keeping: kept) }
    }

    /// Ends the batch being folded in each, when an event reached one since the last.
    mutating func endBatch(at seq: UInt64) {
        guard touched else { return }
        touched = false
        for index in all.indices { all[index].endBatch(at: seq) }
    }

    /// The projections section: `varint n · n × (schema string · varint length · bytes)`, in ``types`` order.
    func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: 64)
        w.varint(UInt64(all.count))
        for projection in all {
            w.string(type(of: projection).schema)
            w.bytes(projection.encoded())
        }
        return w.bytes
    }

    /// Decodes the projections section: exactly ``types``, in order, each decoded by its own type.
    init(decoding bytes: UnsafeRawBufferPointer, seq: UInt64) throws(ByteReader.Malformed) {
        var r = ByteReader(bytes)
        guard try r.varint() == UInt64(Self.types.count) else {
            throw ByteReader.Malformed(what: "not the projections this code keeps")
        }
        all = []
        for type in Self.types {
            guard try r.string("schema") == type.schema else {
                throw ByteReader.Malformed(what: "not the projections this code keeps")
            }
            let count = try r.count()  // at most the bytes left
            let start = r.position
            r.position += count
            do {
                let own = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)])
                all.append(try type.init(decoding: own, seq: seq))
            } catch {
                throw ByteReader.Malformed(what: "\(type.schema): \(error.what)")
            }
        }
        guard r.isAtEnd else { throw ByteReader.Malformed(what: "trailing bytes") }
    }

    /// Equal when each projection is (whether a batch touched them is no part of what they answer).
    package static func == (a: KeptProjections, b: KeptProjections) -> Bool {
        a.all.count == b.all.count && zip(a.all, b.all).allSatisfy { $0.isEqual(to: $1) }
    }
}
