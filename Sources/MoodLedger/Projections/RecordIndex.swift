import EventLog

/// Which entries each block of 1,024 sequence numbers names (`Specs/ledger.md`, *An entry's records*): a filter of
/// 2 KiB per block that never says "no" for an entry one of the block's records names, and rarely "yes" for another.
/// An entry's history, its events and its erasure read only the blocks that may hold its records — at 10M events a
/// few dozen blocks, not the log.
///
/// A fold of the records' entry ids and sequence numbers: a redacted record keeps its entry id, so neither an
/// erasure nor a rewrite of the log changes it. The blocks a snapshot covers are read through it; the others are
/// held here, in chunks, but for the block being filled, which has a buffer of its own (a commit that writes to a
/// shared copy copies that block).
struct RecordIndex: Sendable {
    /// Records per block: the log's sparse index interval, so a block starts at an indexed record.
    static let blockRecords = LogFormat.indexInterval
    /// 64-bit words per block's filter (2 KiB).
    static let filterWords = 256
    /// Words per line (64 bytes): an id's bits all fall in one line of each block.
    static let lineWords = 8
    /// Bits set per id in its line.
    static let bitsPerID = 7

    /// The snapshot the blocks below ``imageBlocks`` are read through.
    private(set) var image: SnapshotImage?
    private var imageBlocks = 0
    /// Blocks from ``firstOwn`` up to ``currentBlock``, filled: ``filterWords`` words each.
    private var own = ChunkedArray<UInt64>()
    private var firstOwn = 0
    /// The block the last record folded is in (−1: none yet), and its words: every record folds into it (sequence
    /// numbers only grow), so a record costs one buffer's bit sets.
    private var currentBlock = -1
    private var current: [UInt64] = []
    /// The sequence numbers of the events folded that name no entry but concern every entry: `ledger.erased` (every
    /// entry named before it) and `remote.configured` (every entry's sync with that destination).
    private(set) var everyEntryEvents: [UInt64] = []

    init() {}

    /// The index a snapshot holds, read through it.
    init(image: SnapshotImage) {
        self.image = image
        imageBlocks = image.filterBlockCount
        firstOwn = imageBlocks
        everyEntryEvents = image.everyEntryEvents
    }

    /// How many blocks there are (the last may be partly filled).
    var blockCount: Int { max(imageBlocks, currentBlock + 1) }

    /// Where an id's bits go in a block's filter: its line and, per word of that line, the bits set.
    struct Probe {
        let line: Int
        let masks: [(word: Int, mask: UInt64)]

        init(_ id: EntryID) {
            let (line, g) = RecordIndex.hashes(id)
            self.line = line
            var words = [UInt64](repeating: 0, count: RecordIndex.lineWords)
            for i in 0..<RecordIndex.bitsPerID {
                let bit = Int((g >> UInt64(9 * i)) & 511)
                words[bit >> 6] |= 1 << UInt64(bit & 63)
            }
            masks = words.enumerated().compactMap { $0.element == 0 ? nil : ($0.offset, $0.element) }
        }
    }

    /// An id's line (the top 5 bits of its hash, the snapshot's id hash) and the hash whose 9-bit fields, lowest
    /// first, are the bits it sets in that line.
    @inline(__always)
    static func hashes(_ id: EntryID) -> (line: Int, bits: UInt64) {
        let h = UInt64(bitPattern: Int64(id.slotHash))
        var g = (h ^ (h >> 31)) &* 0xBF58_476D_1CE4_E5B9
        g ^= g >> 29
        return (Int(h >> 59), g)
    }

    /// Folds one record: `id` named at `seq` (the all-zero id, events about no entry, is not kept).
    @inline(__always)
    mutating func note(_ id: EntryID, seq: UInt64) {
        guard id.high | id.low != 0, seq > 0 else { return }  // the all-zero id
        let block = Int((seq - 1) / Self.blockRecords)
        if block != currentBlock { start(block) }
        let (line, g) = Self.hashes(id)
        current.withUnsafeMutableBufferPointer { words in
            let base = line * Self.lineWords
            for i in 0..<Self.bitsPerID {
                let bit = Int((g >> UInt64(9 * i)) & 511)
                words[base + bit >> 6] |= 1 << UInt64(bit & 63)
            }
        }
    }

    /// Folds a `ledger.erased` or `remote.configured` at `seq`.
    mutating func noteEveryEntryEvent(seq: UInt64) { everyEntryEvents.append(seq) }

    /// Makes `block` the current one: the current one (and any empty ones before `block`) join the filled blocks,
    /// and `block` starts from the image's filter, or empty.
    @inline(never)
    private mutating func start(_ block: Int) {
        precondition(block > currentBlock, "records are folded in sequence order")
        if currentBlock < 0 {
            firstOwn = block
        } else {
            own.append(contentsOf: current)
            for _ in currentBlock + 1..<block { own.append(contentsOf: Self.empty) }
        }
        current = (block < imageBlocks ? image?.filterBlock(block) : nil) ?? Self.empty
        currentBlock = block
    }

    private static let empty = [UInt64](repeating: 0, count: filterWords)

    /// The position in ``own`` of a filled block's first word, if `block` is one.
    private func ownBase(of block: Int) -> Int? {
        guard block >= firstOwn, block < currentBlock else { return nil }
        return (block - firstOwn) * Self.filterWords
    }

    /// Whether `block`'s filter may hold the id `probe` stands for.
    func mayName(_ probe: Probe, block: Int) -> Bool {
        if block == currentBlock {
            return probe.masks.allSatisfy { current[probe.line * Self.lineWords + $0.word] & $0.mask == $0.mask }
        }
        if let base = ownBase(of: block) {
            return probe.masks.allSatisfy { own[base + probe.line * Self.lineWords + $0.word] & $0.mask == $0.mask }
        }
        guard block < imageBlocks, let image else { return false }
        return image.filterLine(block, probe.line) { line in
            probe.masks.allSatisfy { line[$0.word] & $0.mask == $0.mask }
        }
    }

    /// The sequence numbers whose records may name one of `ids`, through `last`: the blocks whose filter may hold
    /// one (adjacent ones joined), with — `withEveryEntryEvents` — the blocks of the events about every entry.
    func ranges(
        mayNaming ids: [EntryID], through last: UInt64, withEveryEntryEvents: Bool = false
    ) -> [ClosedRange<UInt64>] {
        let probes = ids.map(Probe.init)
        var blocks: [Int] = []
        for block in 0..<blockCount where probes.contains(where: { mayName($0, block: block) }) { blocks.append(block) }
        if withEveryEntryEvents {
            blocks += everyEntryEvents.lazy.filter { $0 <= last }.map { Int(($0 - 1) / Self.blockRecords) }
            blocks.sort()
        }
        var result: [ClosedRange<UInt64>] = []
        for block in blocks {
            let lower = UInt64(block) * Self.blockRecords + 1
            guard lower <= last else { break }
            let upper = min(last, lower + Self.blockRecords - 1)
            if let previous = result.last, previous.upperBound + 1 >= lower {
                result[result.count - 1] = previous.lowerBound...max(previous.upperBound, upper)
            } else {
                result.append(lower...upper)
            }
        }
        return result
    }

    /// The filter words of `block` (empty blocks all zero), for a snapshot.
    func words(ofBlock block: Int) -> [UInt64] {
        if block == currentBlock { return current }
        if let base = ownBase(of: block) { return (0..<Self.filterWords).map { own[base + $0] } }
        if block < imageBlocks, let stored = image?.filterBlock(block) { return stored }
        return Self.empty
    }
}

extension RecordIndex: Equatable {
    /// Equal when every block's filter and the events about every entry are: however each is held.
    static func == (a: RecordIndex, b: RecordIndex) -> Bool {
        guard a.everyEntryEvents == b.everyEntryEvents else { return false }
        for block in 0..<max(a.blockCount, b.blockCount) where a.words(ofBlock: block) != b.words(ofBlock: block) {
            return false
        }
        return true
    }
}
