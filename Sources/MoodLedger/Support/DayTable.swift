/// A map from local dates to values, stored densely by day number: no hashing on the replay hot path.
///
/// Ten years of days is 3,650 slots; the table grows at either end as dates arrive.
public struct DayTable<Value: Sendable & Equatable>: Sendable, Equatable {
    private var base: Int32 = 0
    private var slots: [Value?] = []
    /// How many days hold a value.
    public private(set) var count = 0

    public init() {}

    /// A table whose first slot is `base` (bulk builds).
    init(base: LocalDate, slots: [Value?]) {
        self.base = base.daysSinceEpoch
        self.slots = slots
        count = slots.reduce(0) { $0 + ($1 == nil ? 0 : 1) }
    }

    /// The value of a day, if any.
    public subscript(day: LocalDate) -> Value? {
        get {
            let index = Int(day.daysSinceEpoch) - Int(base)
            return index >= 0 && index < slots.count ? slots[index] : nil
        }
        set {
            if newValue == nil {
                let index = Int(day.daysSinceEpoch) - Int(base)
                guard index >= 0, index < slots.count, slots[index] != nil else { return }
                slots[index] = nil
                count -= 1
            } else {
                let index = makeSlot(day)
                if slots[index] == nil { count += 1 }
                slots[index] = newValue
            }
        }
    }

    /// Mutates a day's value in place (creating it from `default` first), then drops it if `isEmpty` says so.
    @inline(__always)
    public mutating func modify<R>(_ day: LocalDate, default make: @autoclosure () -> Value,
                                   removeIf isEmpty: (Value) -> Bool, _ body: (inout Value) -> R) -> R {
        let index = makeSlot(day)
        // Move the value out (leaving nil) so its arrays stay uniquely referenced: mutating `slots[index]!` in
        // place would copy them on every call.
        var value: Value
        if let existing = slots[index] {
            value = existing
            slots[index] = nil
        } else {
            value = make()
            count += 1
        }
        let result = body(&value)
        if isEmpty(value) {
            count -= 1
        } else {
            slots[index] = value
        }
        return result
    }

    /// The days that hold a value, ascending.
    public var days: [LocalDate] {
        var result: [LocalDate] = []
        result.reserveCapacity(count)
        for (offset, slot) in slots.enumerated() where slot != nil {
            result.append(LocalDate(daysSinceEpoch: base + Int32(offset)))
        }
        return result
    }

    /// Every (day, value), ascending.
    public var pairs: [(LocalDate, Value)] {
        slots.enumerated().compactMap { offset, slot in slot.map { (LocalDate(daysSinceEpoch: base + Int32(offset)), $0) } }
    }

    private mutating func makeSlot(_ day: LocalDate) -> Int {
        let number = day.daysSinceEpoch
        if slots.isEmpty {
            base = number
            slots = [nil]
            return 0
        }
        if number < base {
            let grow = Int(base - number)
            slots.insert(contentsOf: repeatElement(nil, count: grow), at: 0)
            base = number
        } else if Int(number - base) >= slots.count {
            slots.append(contentsOf: repeatElement(nil, count: Int(number - base) - slots.count + 1))
        }
        return Int(number - base)
    }

    public static func == (a: DayTable, b: DayTable) -> Bool { a.count == b.count && a.pairs.elementsEqual(b.pairs, by: ==) }
}

extension Optional {
    /// Returns the value and leaves `nil` behind, so the caller holds the only reference.
    mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
