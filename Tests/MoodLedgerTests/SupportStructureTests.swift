import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodModel

/// The compact structures behind the projections, checked against plain Swift models on seeded random inputs.
@Suite("WordList, DayTable and WordTable against models")
struct SupportStructureTests {
    @Test("WordList packs up to eight Apple words inline, spills otherwise, and always equals its array")
    func wordList() {
        var random = SeededRandom()
        for _ in 0..<500 {
            let count = Int.random(in: 0...12, using: &random)
            var words: [MoodLabel] = []
            for _ in 0..<count {
                let word =
                    Int.random(in: 0..<6, using: &random) == 0
                    ? MoodLabel(custom: "own \(Int.random(in: 0..<5, using: &random))")
                    : MoodLabel(appleRawValue: Int.random(in: 1...LabelDomain.canonicalNames.count, using: &random))!
                if !words.contains(word) { words.append(word) }
            }
            let list = WordList(words)
            #expect(list.array == words && list.count == words.count && list.isEmpty == words.isEmpty)
            var seen: [MoodLabel] = []
            list.forEach { seen.append($0) }
            #expect(seen == words)
            for raw in 1...LabelDomain.canonicalNames.count {
                let word = MoodLabel(appleRawValue: raw)!
                #expect(list.contains(word) == words.contains(word))
            }
            #expect(list.contains(MoodLabel(custom: "own 1")) == words.contains(MoodLabel(custom: "own 1")))
            #expect(list == WordList(list.array), "the representation is canonical")
            if words.allSatisfy({ !$0.isCustom }), words.count <= 8 {
                let raws = words.map { UInt8($0.appleRawValue!) }
                let fromRaw = raws.withUnsafeBytes { WordList<LabelDomain>(rawValues: $0) }
                #expect(fromRaw == list)
            }
        }
        #expect([UInt8](repeating: 1, count: 9).withUnsafeBytes { WordList<LabelDomain>(rawValues: $0) } == nil)
        #expect([UInt8]([3, 0]).withUnsafeBytes { WordList<LabelDomain>(rawValues: $0) } == nil)
    }

    @Test("DayTable behaves as a dictionary of days, growing at either end, days ascending")
    func dayTable() {
        var random = SeededRandom()
        var table = DayTable<Int>(empty: 0)
        var model: [Int32: Int] = [:]
        for _ in 0..<3_000 {
            let day = LocalDate(daysSinceEpoch: Int32.random(in: 19_000...19_400, using: &random))
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                table[day] = nil
                model[day.daysSinceEpoch] = nil
            case 1:
                let value = Int.random(in: 1...100, using: &random)
                table[day] = value
                model[day.daysSinceEpoch] = value
            default:
                let delta = Int.random(in: -3...3, using: &random)
                table.modify(day, default: 0, removeIf: { $0 == 0 }) { $0 += delta }
                let next = (model[day.daysSinceEpoch] ?? 0) + delta
                model[day.daysSinceEpoch] = next == 0 ? nil : next
            }
            #expect(table[day] == model[day.daysSinceEpoch])
        }
        #expect(table.count == model.count)
        #expect(table.days.map(\.daysSinceEpoch) == model.keys.sorted())
        #expect(table.pairs.map { $0.1 } == model.keys.sorted().map { model[$0]! })
        var copy = DayTable<Int>(empty: 0)
        for (day, value) in model.sorted(by: { $0.key > $1.key }) { copy[LocalDate(daysSinceEpoch: day)] = value }
        #expect(copy == table, "equal contents, whatever the order they came in")
    }

    @Test("The valences' insertion index is the first element not below the value, on seeded arrays with repeats")
    func insertionIndex() {
        var random = SeededRandom()
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...40, using: &random)
            let values = (0..<count).map { _ in Int64.random(in: -6...6, using: &random) }.sorted()
            let probe = Int64.random(in: -8...8, using: &random)
            #expect(
                values.insertionIndex(of: probe) == (values.firstIndex { $0 >= probe } ?? count), "\(values) \(probe)")
        }
    }

    @Test(
        "WordTable keeps canonical and custom words apart and lists every pair; an absent word is no stat, never a zero one"
    )
    func wordTable() {
        var random = SeededRandom()
        var table = WordTable<AssociationDomain, WordStat>()
        var model: [MoodAssociation: WordStat] = [:]
        for _ in 0..<2_000 {
            let word =
                Int.random(in: 0..<4, using: &random) == 0
                ? MoodAssociation(custom: "hobby \(Int.random(in: 0..<6, using: &random))")
                : MoodAssociation(
                    appleRawValue: Int.random(in: 1...AssociationDomain.canonicalNames.count, using: &random))!
            let delta = Int.random(in: -2...2, using: &random)
            let q: Int64? = Bool.random(using: &random) ? Int64.random(in: -(1 << 40)...(1 << 40), using: &random) : nil
            table.modify(word, default: WordStat(), removeIf: \.isEmpty) { $0.add(q, delta) }
            var next = model[word] ?? WordStat()
            next.count += delta
            if let q {
                next.valenceCount += delta
                next.valenceSum += Int64(delta) * q
            }
            model[word] = next.count == 0 ? nil : next
            #expect(table[word] == model[word])
        }
        #expect(table.count == model.count && table.isEmpty == model.isEmpty)
        #expect(Dictionary(uniqueKeysWithValues: table.pairs.map { ($0.0, $0.1) }) == model)
        #expect(WordTable<LabelDomain, WordStat>().isEmpty && WordTable<LabelDomain, WordStat>().pairs.isEmpty)
    }

    @Test(
        "ByteReader's strings decode as the strict validator does: ASCII by eight-byte words, any high bit to the validator"
    )
    func strings() {
        var random = SeededRandom()
        let samples: [[UInt8]] = [Array("é".utf8), Array("🙂".utf8), [0xFF], [0xC3], [0xED, 0xA0, 0x80], [0x80], [0x00]]
        for _ in 0..<3_000 {
            var text = (0..<Int.random(in: 0...40, using: &random)).map { _ in
                UInt8.random(in: 0...0x7F, using: &random)
            }
            if Bool.random(using: &random) {
                text.insert(
                    contentsOf: samples.randomElement(using: &random)!,
                    at: Int.random(in: 0...text.count, using: &random))
            }
            let encoded: [UInt8] = [UInt8(text.count)] + text  // a one-byte varint: at most 40 + 4 bytes
            let decoded = encoded.withUnsafeBytes { buffer -> String? in
                var reader = ByteReader(buffer)
                return try? reader.string("notes")
            }
            let model = text.withUnsafeBytes { String(validating: $0, as: UTF8.self) }
            #expect(decoded == model, "bytes \(text)")
            if let decoded { #expect(Array(decoded.utf8) == text) }
        }
    }

    @Test(
        "MoodEntry keeps its heap fields in one box that is absent when they are empty: any order of edits, same value")
    func entryExtras() {
        var random = SeededRandom()
        let id = EntryID(high: 1, low: 2)
        for _ in 0..<500 {
            // Up to `limit` words, some custom: at most five of Apple's pack into the entry's word; others spill.
            func words<D: VocabularyDomain>(upTo limit: Int) -> [VocabularyWord<D>] {
                var result: [VocabularyWord<D>] = []
                for _ in 0..<Int.random(in: 0...limit, using: &random) {
                    let word =
                        Int.random(in: 0..<5, using: &random) == 0
                        ? VocabularyWord<D>(custom: "own \(Int.random(in: 0..<3, using: &random))")
                        : VocabularyWord<D>(appleRawValue: Int.random(in: 1...D.canonicalNames.count, using: &random))!
                    if !result.contains(word) { result.append(word) }
                }
                return result
            }
            let labels: [MoodLabel] = words(upTo: 10)
            let associations: [MoodAssociation] = words(upTo: 8)
            let tags = Bool.random(using: &random) ? [] : ["t\(Int.random(in: 0..<3, using: &random))"]
            // Notes live as bytes in the box's tail: none, empty, short, long, and not ASCII all round trip.
            let notes = [nil, "", "short", "a note long enough to live on the heap", "café, then 🙂 — and more"]
                .randomElement(using: &random)!
            let sourceID = Bool.random(using: &random) ? nil : "src-1"
            let direct = MoodEntry(
                id: id, loggedAt: LoggedAt(milliseconds: 0), labels: labels, associations: associations,
                tags: tags, notes: notes, sourceID: sourceID)
            // The same fields reached by edits from a full entry, in a random order, through the empty values.
            var edited = MoodEntry(
                id: id, loggedAt: LoggedAt(milliseconds: 0), labels: words(upTo: 10),
                associations: (1...6).map { MoodAssociation(appleRawValue: $0)! },
                tags: ["x", "y"], notes: "old notes", sourceID: "old")
            var edits: [(inout MoodEntry) -> Void] = [
                { $0.labels = labels }, { $0.associations = associations }, { $0.tags = tags }, { $0.notes = notes },
                { $0.sourceID = sourceID },
                { $0.labels = [] }, { $0.associations = [] }, { $0.tags = [] }, { $0.notes = nil },
                { $0.sourceID = nil }
            ]
            let clearing = Array(edits[5...]).shuffled(using: &random)
            edits = Array(edits[..<5]).shuffled(using: &random)
            for edit in clearing + edits { edit(&edited) }
            #expect(edited == direct)
            #expect(
                edited.labels == labels && edited.associations == associations && edited.tags == tags
                    && edited.notes == notes && edited.sourceID == sourceID)
            #expect(edited.labelList == WordList(labels) && edited.associationList == WordList(associations))
            // Straight from one list to another, through no empty one (a spilled list replaced by a packed one, and
            // back): the word and the box agree with a fresh entry, and so do the analytics' reads in place.
            var hopping = direct
            hopping.labels = words(upTo: 10)
            hopping.associations = words(upTo: 8)
            hopping.labels = labels
            hopping.associations = associations
            #expect(hopping == direct && hopping.labels == labels && hopping.associations == associations)
            withUnsafePointer(to: hopping) { entry in
                let fields = MoodEntry.analyticsFields(of: entry)
                #expect(fields.labels == WordList(labels) && fields.associations == WordList(associations))
            }
            // The codec writes the notes' bytes and reads them back into the box without a string in between.
            var writer = ByteWriter()
            EventCodec.writeEntryBody(edited, to: &writer, withTags: true)
            let decoded = writer.bytes.withUnsafeBytes { buffer -> MoodEntry? in
                var reader = ByteReader(buffer)
                return try? EventCodec.readEntryBody(id: id, from: &reader, withTags: true)
            }
            #expect(decoded == direct && decoded?.notes == notes)
            // The flag kept beside the box (what a replay's source-id index reads) says what the box holds, however
            // the entry was made, and stays through an edit of another of the box's fields.
            let hasSourceID = sourceID != nil
            #expect(
                direct.hasSourceID == hasSourceID && edited.hasSourceID == hasSourceID
                    && hopping.hasSourceID == hasSourceID && decoded?.hasSourceID == hasSourceID)
            let copy = edited
            edited.notes = "changed"
            #expect(copy.notes == notes, "a copy keeps its own box")
            #expect(edited.hasSourceID == hasSourceID)
            if let notes, !notes.isEmpty {
                var other = direct
                other.notes = String(notes.dropLast()) + "!"
                #expect(other != direct, "notes differing in their last character differ")
                other.notes = nil
                #expect(other != direct)
            }
        }
    }
}

@Suite("Entry ids without Foundation")
struct EntryIDTests {
    @Test("Text round trips, any case parses, and Foundation's UUID agrees; malformed text is refused")
    func text() {
        var random = SeededRandom()
        for _ in 0..<1000 {
            let id = EntryID.random(using: &random)
            #expect(EntryID(id.description) == id)
            #expect(EntryID(id.description.uppercased()) == id)
            #expect(id.description == UUID(uuidString: id.description)!.uuidString.lowercased())
        }
        let fresh = EntryID.random()
        #expect((fresh.high >> 12) & 0xF == 4 && fresh.low >> 62 == 2, "version 4, RFC 4122 variant")
        for bad in [
            "", "3f2504e0-4f89-41d3-9a0c-0305e82c330", "3f2504e04f8941d39a0c0305e82c3301",
            "3f2504e0-4f89-41d3-9a0c-0305e82c330g", "3f2504e0+4f89-41d3-9a0c-0305e82c3301",
            " 3f2504e0-4f89-41d3-9a0c-0305e82c330"
        ] {
            #expect(EntryID(bad) == nil, "\(bad)")
        }
    }
}

@Suite("The source index")
struct SourceIndexTests {
    @Test("SourceIndex answers as a dictionary of keys, also when the keys share a few hashes (collisions kept apart)")
    func againstModel() {
        for mask: UInt64 in [.max, 3] {
            var random = SeededRandom()
            var index = SourceIndex()
            index.hashMask = mask
            // 30 entries, three to each of 10 keys of two sources: the index maps a key to one of its entries.
            var values = IdentifiedTable<MoodEntry>()
            let keys = (0..<10).map {
                SourceKey(source: $0 % 2 == 0 ? .healthkit : .import, sourceID: "HK-MOOD-\($0 * 7919)")
            }
            let ids = (0..<30).map { EntryID(high: 7, low: UInt64($0)) }
            for (j, id) in ids.enumerated() {
                values.set(
                    MoodEntry(
                        id: id, loggedAt: LoggedAt(milliseconds: 0), source: keys[j % 10].source,
                        sourceID: keys[j % 10].sourceID))
            }
            var model: [SourceKey: EntryID] = [:]
            for _ in 0..<3_000 {
                let j = Int.random(in: 0..<30, using: &random)
                let key = keys[j % 10]
                var text = key.sourceID
                text.withUTF8 { bytes in
                    let bytes = UnsafeRawBufferPointer(bytes)
                    let action = Int.random(in: 0..<3, using: &random)
                    if action == 0 {
                        index.set(key.source, bytes, to: ids[j], in: values)
                        model[key] = ids[j]
                    } else if action == 1 {
                        // As an insertion indexes: by the hash alone when it is free, else the long way.
                        if !index.setIfFree(hash: SourceIndex.hash(key.source, bytes), to: ids[j]) {
                            index.set(key.source, bytes, to: ids[j], in: values)
                        }
                        model[key] = ids[j]
                    } else {
                        let held = model[key] == ids[j]
                        #expect(index.remove(key.source, bytes, heldBy: ids[j]) == held)
                        if held { model[key] = nil }
                    }
                }
                for key in keys {
                    var text = key.sourceID
                    let found = text.withUTF8 { index.entry(key.source, UnsafeRawBufferPointer($0), in: values) }
                    #expect(found == model[key], "mask \(mask)")
                }
                #expect(index.count == model.count)
            }
        }
    }
}
