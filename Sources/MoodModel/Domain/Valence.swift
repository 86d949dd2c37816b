/// Valence arithmetic: the fixed-point grid, the 1–10 score translation and Apple-style classification.
///
/// Valences are kept on a grid of 2⁻⁴⁰ (about 12 decimal digits) so that sums, subtractions and class boundaries
/// are exact integer arithmetic; see `Specs/mood-model.md`.
public enum Valence {
    /// Grid units per 1.0 of valence: 2⁴⁰.
    public static let scale: Int64 = 1 << 40

    /// The grid value of a valence (exact for a valence already on the grid).
    @inlinable @inline(__always)
    public static func fixed(_ valence: Double) -> Int64 { Int64((valence * Double(scale)).rounded()) }

    /// The valence of a grid value.
    @inlinable @inline(__always)
    public static func value(_ fixed: Int64) -> Double { Double(fixed) / Double(scale) }

    /// The shortest decimal (as a Double) that lies on the same grid point: what JSON shows, e.g. 0.555555555556
    /// for score 8 rather than the grid's binary 0.5555555555556566. Parsing it back gives the same valence.
    public static func display(_ valence: Double) -> Double {
        let q = fixed(valence)
        var scale = 1.0
        for _ in 0..<15 {
            let candidate = (valence * scale).rounded() / scale
            if fixed(candidate) == q { return candidate }
            scale *= 10
        }
        return valence
    }

    /// Rounds a valence onto the grid.
    public static func quantized(_ valence: Double) -> Double { value(fixed(valence)) }

    /// score → valence: (s − 5.5) / 4.5, on the grid.
    /// - Parameter score: an integer 1…10.
    public static func from(score: Int) -> Double { quantized((Double(score) - 5.5) / 4.5) }

    /// valence → score: round((v + 1) × 4.5 + 1), clamped to 1…10. Every score 1…10 round-trips.
    public static func score(for valence: Double) -> Int {
        let raw = ((valence + 1) * 4.5 + 1).rounded(.toNearestOrAwayFromZero)
        return Int(min(10, max(1, raw)))
    }

    /// Apple's raw values of the strongly negative and positive labels, one bit each (raw values are 1…38): a
    /// bit test, where a set of labels cost each process 100,000 instructions to build (the vocabulary's lookup
    /// tables and a hashed set) before its first score.
    static let strongNegative = rawValueMask(["hopeless", "overwhelmed", "ashamed", "scared"])
    static let strongPositive = rawValueMask(["passionate", "grateful", "proud", "hopeful"])

    private static func rawValueMask(_ names: [String]) -> UInt64 {
        names.reduce(0) { mask, name in mask | 1 << UInt64(LabelDomain.canonicalNames.firstIndex(of: name)! + 1) }
    }

    /// The score derived from a valence and labels: the base score, −1 if a strongly negative label is present and
    /// the base is above 3, else +1 if a strongly positive label is present and the base is below 8.
    public static func score(for valence: Double, labels: [MoodLabel]) -> Int {
        score(for: valence, labels: WordList(labels))
    }

    static func score(for valence: Double, labels: WordList<LabelDomain>) -> Int {
        let base = score(for: valence)
        var negative = false
        var positive = false
        labels.forEach { label in
            guard let raw = label.appleRawValue else { return }
            if strongNegative & 1 << UInt64(raw) != 0 { negative = true }
            if strongPositive & 1 << UInt64(raw) != 0 { positive = true }
        }
        if base > 3, negative { return base - 1 }
        if base < 8, positive { return base + 1 }
        return base
    }

    /// Daylio's level 1 (awful) … 5 (rad) → (L − 3) / 2.
    public static func from(daylioLevel level: Int) -> Double { Double(level - 3) / 2 }

    /// The grid points nearest to k/7 for k = 1, 3, 5: the class boundaries.
    static let boundaries: [Int64] = [1, 3, 5].map { k in
        let exact = Double(k) * Double(scale) / 7  // exact to far below one grid step
        return Int64(exact.rounded(.toNearestOrAwayFromZero))
    }

    /// The class of a valence, compared exactly on the grid against the grid points nearest to ±1/7, ±3/7, ±5/7.
    public static func classification(of valence: Double) -> ValenceClassification {
        let q = fixed(valence)
        let (b1, b3, b5) = (boundaries[0], boundaries[1], boundaries[2])
        if q < -b5 { return .veryUnpleasant }
        if q < -b3 { return .unpleasant }
        if q < -b1 { return .slightlyUnpleasant }
        if q <= b1 { return .neutral }
        if q <= b3 { return .slightlyPleasant }
        if q <= b5 { return .pleasant }
        return .veryPleasant
    }
}

/// Seven classes like Apple's `HKStateOfMind.ValenceClassification` (raw values 1…7).
public enum ValenceClassification: Int, Sendable, CaseIterable {
    case veryUnpleasant = 1
    case unpleasant, slightlyUnpleasant, neutral, slightlyPleasant, pleasant, veryPleasant

    /// snake_case wire name, e.g. `slightly_pleasant`.
    public var wireName: String {
        switch self {
        case .veryUnpleasant: return "very_unpleasant"
        case .unpleasant: return "unpleasant"
        case .slightlyUnpleasant: return "slightly_unpleasant"
        case .neutral: return "neutral"
        case .slightlyPleasant: return "slightly_pleasant"
        case .pleasant: return "pleasant"
        case .veryPleasant: return "very_pleasant"
        }
    }
}
