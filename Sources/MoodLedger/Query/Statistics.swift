/// Exact statistics over grid valences.
public struct ValenceStatistics: Sendable, Equatable {
    public var count: Int
    public var min: Double?
    public var max: Double?
    public var mean: Double?
    public var median: Double?
    /// Population standard deviation.
    public var standardDeviation: Double?

    /// Computes the statistics of grid values (not necessarily sorted); sums are exact integers.
    init(values: [Int64], sum: Int64, squareSum: Int128) {
        count = values.count
        guard !values.isEmpty else { return }
        let scale = Double(Valence.scale)
        let sorted = values.sorted()
        min = Double(sorted.first!) / scale
        max = Double(sorted.last!) / scale
        mean = Double(sum) / Double(values.count) / scale
        let middle = sorted.count / 2
        median =
            sorted.count % 2 == 1
            ? Double(sorted[middle]) / scale
            : (Double(sorted[middle - 1]) + Double(sorted[middle])) / 2 / scale
        let n = Int128(values.count)
        let numerator = n * squareSum - Int128(sum) * Int128(sum)  // n²·variance, exact
        standardDeviation = (Double(numerator) / Double(n) / Double(n)).squareRoot() / scale
    }

    /// `{"min", "max", "median", "std_deviation"}`, rounded to 4 decimals.
    var json: JSONValue {
        .object([
            ("min", .rounded(min)), ("max", .rounded(max)), ("median", .rounded(median)),
            ("std_deviation", .rounded(standardDeviation))
        ])
    }
}

extension JSONValue {
    /// A number rounded to 4 decimals (how reports show averages), or null.
    static func rounded(_ value: Double?, places: Int = 4) -> JSONValue {
        guard let value else { return .null }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        return .double((value * scale).rounded() / scale)
    }
}
