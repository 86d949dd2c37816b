/// A map from local dates to values, stored densely by day number: no hashing on the replay hot path.
///
/// Ten years of days is 3,650 slots; the table grows at either end as dates arrive. Values live in a plain array
/// (absent days hold a shared `empty` value) so that mutation through ``modify(_:default:removeIf:_:)`` happens in
/// place, without copying the value's arrays.
package struct DayTable<Value: Sendable & Equatable>: Sendable, Equatable {
    private let empty: Value
    private var base: Int32 = 0
    private var slots: [Value] = []
    private var present: [Bool] = []
    /// How many days hold a value.
    package private(set) var count = 0

    /// An empty table; `empty` fills the slots of days without a value.
    package init(empty: Value) { self.empty = empty }

    /// A table whose first slot is `base` (bulk builds).
    init(empty: Value, base: LocalDate, slots: [Value?]) {
        self.empty = empty
        self.base = base.daysSinceEpoch
        self.slots = slots.map { $0 ?? empty }
        present = slots.map { $0 != nil }
        count = present.reduce(0) { $0 + ($1 ? 1 : 0) }
    }

    /// The value of a day, if any.
    package subscript(day: LocalDate) -> Value? {
        get {
            let index = Int(day.daysSinceEpoch) - Int(base)
            return index >= 0 && index < slots.count && present[index] ? slots[index] : nil
        }
        set {
            if let newValue {
                let index = makeSlot(day)
                if !present[index] { count += 1 }
                slots[index] = newValue
                present[index] = true
            } else {
                let index = Int(day.daysSinceEpoch) - Int(base)
                guard index >= 0, index < slots.count, present[index] else { return }
                slots[index] = empty
                present[index] = false
                count -= 1
            }
        }
    }

    /// Mutates a day's value in place (creating it from `default` first), then drops it if `isEmpty` says so.
    @inline(__always)
    package mutating func modify<R>(
        _ day: LocalDate, default make: @autoclosure () -> Value,
        removeIf isEmpty: (Value) -> Bool, _ body: (inout Value) -> R
    ) -> R {
        let index = makeSlot(day)
        if !present[index] {
            slots[index] = make()
            present[index] = true
            count += 1
        }
        let result = body(&slots[index])
        if isEmpty(slots[index]) {
            slots[index] = empty
            present[index] = false
            count -= 1
        }
        return result
    }

    /// The days that hold a value, ascending.
    package var days: [LocalDate] {
        var result: [LocalDate] = []
        result.reserveCapacity(count)
        for (offset, isPresent) in present.enumerated() where isPresent {
            result.append(LocalDate(daysSinceEpoch: base + Int32(offset)))
        }
        return result
    }

    /// Every (day, value), ascending.
    package var pairs: [(LocalDate, Value)] {
        present.indices.compactMap { offset in
            present[offset] ? (LocalDate(daysSinceEpoch: base + Int32(offset)), slots[offset]) : nil
        }
    }

    private mutating func makeSlot(_ day: LocalDate) -> Int {
        let number = day.daysSinceEpoch
        if slots.isEmpty {
            base = number
            slots = [empty]
            present = [false]
            return 0
        }
        if number < base {
            let grow = Int(base - number)
            slots.insert(contentsOf: repeatElement(empty, count: grow), at: 0)
            present.insert(contentsOf: repeatElement(false, count: grow), at: 0)
            base = number
        } else if Int(number - base) >= slots.count {
            let grow = Int(number - base) - slots.count + 1
            slots.append(contentsOf: repeatElement(empty, count: grow))
            present.append(contentsOf: repeatElement(false, count: grow))
        }
        return Int(number - base)
    }

    package static func == (a: DayTable, b: DayTable) -> Bool {
        a.count == b.count && a.pairs.elementsEqual(b.pairs, by: ==)
    }
}

extension Optional {
    /// Returns the value and leaves `nil` behind, so the caller holds the only reference.
    mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
