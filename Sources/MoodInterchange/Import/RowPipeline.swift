import Dispatch
import MoodLedger
import Synchronization

/// Reads an ``ImportStream`` on a second thread while the caller decides and writes the rows it has read: parsing a
/// CSV row and validating its draft (``prepare``: what needs no ledger state) cost about as much as deciding,
/// encoding and writing it, so on two cores the import takes about half the time. Rows cross in batches (a lock and a
/// wake-up per batch, not per row), at most ``depth`` batches ahead.
///
/// The stream is the reading thread's alone from ``init(_:)`` until ``finish()`` returns it: the caller calls
/// ``finish()`` on every path (also after an error of its own), which stops the reader and waits for it.
final class RowPipeline: Sendable {
    /// Rows a batch holds.
    static let batchSize = 1_024
    /// Batches read ahead of the caller at most (about 32,000 rows, some 10 MB however large the file: enough to ride
    /// out the caller's pauses, such as its entry table growing, without stopping the reader).
    static let depth = 32

    /// A row read, with its draft validated into an entry (or why not) by ``prepare``.
    struct Prepared: Sendable {
        var row: ImportRow
        var entry: Result<MoodEntry, MoodError>
    }

    private struct Shared {
        var batches: [[Prepared]] = []
        var finished = false
        var cancelled = false
        var failure: (any Error)?
    }

    /// The stream, touched only by the reading thread until `done` is signalled, then only by ``finish()``.
    private final class Holder: @unchecked Sendable {
        var stream: ImportStream
        init(_ stream: ImportStream) { self.stream = stream }
    }

    private let shared = Mutex(Shared())
    private let ready = DispatchSemaphore(value: 0)
    /// Room for batches: made with value 0 and signalled ``depth`` times, because a semaphore released below the value
    /// it was made with traps (libdispatch), and a reader stopped early leaves batches nobody took.
    private let space = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let holder: Holder
    private let prepare: @Sendable (MoodDraft) -> Result<MoodEntry, MoodError>
    /// The batch being handed out: only the caller's thread touches it.
    private let current = Taken()

    /// The rows of the batch being handed out, last row first (the reader reverses each batch, so each row is moved
    /// out from the end, not copied): only the caller's thread — the one that calls ``next()`` — touches them, so no
    /// lock guards them.
    private final class Taken: @unchecked Sendable {
        @exclusivity(unchecked) var rows: [Prepared] = []
    }

    /// Starts reading `stream` on a second thread, each row's draft validated there by `prepare`.
    init(_ stream: ImportStream, prepare: @escaping @Sendable (MoodDraft) -> Result<MoodEntry, MoodError>) {
        holder = Holder(stream)
        self.prepare = prepare
        for _ in 0..<Self.depth { space.signal() }
        DispatchQueue.global(qos: .userInitiated).async { [self] in read() }
    }

    private func read() {
        defer { done.signal() }
        do {
            var batch: [Prepared] = []
            batch.reserveCapacity(Self.batchSize)
            while let row = try holder.stream.next() {
                batch.append(Prepared(row: row, entry: prepare(row.draft)))
                guard batch.count == Self.batchSize else { continue }
                batch.reverse()  // handed out from the end (see ``Taken``)
                space.wait()
                let cancelled = shared.withLock { shared in
                    if !shared.cancelled { shared.batches.append(batch) }
                    return shared.cancelled
                }
                if cancelled { return }
                ready.signal()
                batch = []
                batch.reserveCapacity(Self.batchSize)
            }
            if !batch.isEmpty {
                batch.reverse()
                space.wait()
                shared.withLock { $0.batches.append(batch) }
            }
            shared.withLock { $0.finished = true }
        } catch {
            shared.withLock {
                $0.failure = error
                $0.finished = true
            }
        }
        ready.signal()
    }

    /// The next row, in the stream's order, or nil at its end.
    /// - Throws: what the stream threw, once the rows read before it are handed out.
    func next() throws -> Prepared? {
        if let row = current.rows.popLast() { return row }
        while true {
            let (batch, finished, failure) = shared.withLock { shared -> ([Prepared]?, Bool, (any Error)?) in
                if !shared.batches.isEmpty { return (shared.batches.removeFirst(), false, nil) }
                return (nil, shared.finished, shared.failure)
            }
            if let batch {
                space.signal()
                current.rows = batch
                return current.rows.popLast()
            }
            if finished {
                if let failure { throw failure }
                return nil
            }
            ready.wait()
        }
    }

    /// Stops the reading thread (if it has not finished), waits for it, and returns the stream as it left it.
    func finish() -> ImportStream {
        shared.withLock { $0.cancelled = true }
        space.signal()  // a reader waiting for room sees the cancellation
        done.wait()
        return holder.stream
    }
}
