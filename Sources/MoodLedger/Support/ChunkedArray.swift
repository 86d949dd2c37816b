import CPlatform

/// A growable array kept in chunks of 4,096 elements: appending never moves what is there (no doubling copy with
/// the old and the new buffer alive at once, no unused half), and a mutation of a shared copy copies one chunk, not
/// the whole array.
///
/// The projections keep their live values densely in these (entries changed since a snapshot, outbox pairs), where a
/// plain array's last doubling would briefly hold more than twice the values.
struct ChunkedArray<Element>: RandomAccessCollection, MutableCollection {
    private static var shift: Int { 12 }
    private static var chunkSize: Int { 1 << shift }
    private var chunks: [[Element]] = []
    /// The number of elements.
    private(set) var count = 0

    init() {}

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(position: Int) -> Element {
        _read {
            precondition(position >= 0, "index out of range")
            precondition(position < count, "index out of range")
            yield chunks[position >> Self.shift][position & (Self.chunkSize - 1)]
        }
        _modify {
            precondition(position >= 0, "index out of range")
            precondition(position < count, "index out of range")
            yield &chunks[position >> Self.shift][position & (Self.chunkSize - 1)]
        }
    }

    /// Starts loading the element at `position` into the CPU's caches (a hint; out of range: nothing).
    @inline(__always)
    func prefetch(_ position: Int) {
        guard position >= 0, position < count else { return }
        chunks[position >> Self.shift].withUnsafeBufferPointer {
            cplatform_prefetch(UnsafeRawPointer($0.baseAddress! + (position & (Self.chunkSize - 1))))
        }
    }

    /// Where the newest chunk is held: its address and its capacity in bytes (nil without a chunk). A hint for
    /// ``SystemIO/populateForWriting(address:bytes:)``: the chunk may be gone by the time it is used.
    var newestChunkStorage: (address: UInt, bytes: Int)? {
        guard let last = chunks.last, last.capacity > 0 else { return nil }
        return last.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.map { (UInt(bitPattern: $0), last.capacity * MemoryLayout<Element>.stride) }
        }
    }

    /// Adds an element at the end. A chunk after the first is allocated whole, once, when the one before it is half
    /// full: the memory appends fill next is known ahead of them (``newestChunkStorage``).
    mutating func append(_ element: consuming Element) {
        if count & (Self.chunkSize - 1) == 0, count >> Self.shift == chunks.count { addChunk() }
        chunks[count >> Self.shift].append(element)
        count += 1
        if count & (Self.chunkSize - 1) == Self.chunkSize / 2, count > Self.chunkSize,
            count >> Self.shift == chunks.count - 1
        {
            addChunk()
        }
    }

    /// Adds an empty chunk at the end, its room reserved (but for the first, which grows as a small array does).
    private mutating func addChunk() {
        var chunk: [Element] = []
        if !chunks.isEmpty { chunk.reserveCapacity(Self.chunkSize) }
        chunks.append(chunk)
    }

    /// Adds elements at the end, a chunk's worth at a time.
    mutating func append(contentsOf elements: [Element]) {
        var start = 0
        while start < elements.count {
            if count & (Self.chunkSize - 1) == 0, count >> Self.shift == chunks.count {
                var chunk: [Element] = []
                chunk.reserveCapacity(chunks.isEmpty ? elements.count - start : Self.chunkSize)
                chunks.append(chunk)
            }
            let room = Self.chunkSize - (count & (Self.chunkSize - 1))
            let end = Swift.min(elements.count, start + room)
            chunks[count >> Self.shift].append(contentsOf: elements[start..<end])
            count += end - start
            start = end
        }
    }

    /// Calls `body` with a pointer to each element in order, where it is held (no copy out of its chunk). The
    /// pointer is valid only during the call.
    func forEachInPlace(_ body: (UnsafePointer<Element>) -> Void) {
        for chunk in chunks {
            chunk.withUnsafeBufferPointer { buffer in
                guard let base = buffer.baseAddress else { return }
                for index in buffer.indices { body(base + index) }
            }
        }
    }

    /// Removes and returns the last element (the array must not be empty).
    @discardableResult
    mutating func removeLast() -> Element {
        precondition(count > 0, "removeLast from an empty ChunkedArray")
        count -= 1
        let last = count >> Self.shift
        let element = chunks[last].removeLast()
        // An emptied chunk stays (appending at a chunk boundary then allocates nothing); the one after it goes.
        if chunks[last].isEmpty, chunks.count > last + 1 { chunks.removeLast(chunks.count - last - 1) }
        return element
    }
}

extension ChunkedArray: Sendable where Element: Sendable {}
