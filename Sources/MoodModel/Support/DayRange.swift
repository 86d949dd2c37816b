import Dispatch

/// A range of local days, as days since the epoch, that a bulk build splits between the two cores.
extension ClosedRange where Bound == Int32 {
    /// What `body` gives for each half of the range, the halves on two threads at once, in order; or for the whole
    /// range on the calling thread when `parallel` is false or the range is one day.
    ///
    /// A day's part of a bulk build depends on its own entries alone, so the answer does not depend on the split.
    /// - Parameters:
    ///   - parallel: whether to use two threads.
    ///   - body: builds the part of one range of days; called from both threads at once, it only reads what is shared.
    /// - Returns: one result per part, the earlier days' first.
    package func mapHalves<Part>(parallel: Bool, _ body: (ClosedRange<Int32>) -> Part) -> [Part] {
        guard parallel, upperBound > lowerBound else { return [body(self)] }
        let middle = lowerBound + (upperBound - lowerBound) / 2
        let ranges = [lowerBound...middle, (middle + 1)...upperBound]
        var results = [Part?](repeating: nil, count: 2)
        results.withUnsafeMutableBufferPointer { results in
            nonisolated(unsafe) let results = results
            nonisolated(unsafe) let body = body
            DispatchQueue.concurrentPerform(iterations: 2) { index in results[index] = body(ranges[index]) }
        }
        return results.map { $0! }
    }
}
