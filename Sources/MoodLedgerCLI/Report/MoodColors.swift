import MoodLedger

/// The colour-blind-safe diverging scale every picture uses: ColorBrewer's 9-class RdYlBu, red (−1) to blue (+1).
enum MoodColors {
    static let hex = ["#d73027", "#f46d43", "#fdae61", "#fee090", "#ffffbf", "#e0f3f8", "#abd9e9", "#74add1", "#4575b4"]
    /// The xterm-256 colours nearest to ``hex``.
    static let ansi = [160, 202, 215, 222, 229, 195, 153, 110, 67]
    /// The page background (and so an empty day).
    static let background = "#ffffff"

    /// The class 0…8 of a valence −1…+1.
    static func bin(_ valence: Double) -> Int { min(8, max(0, Int(((valence + 1) / 2 * 9).rounded(.down)))) }

    /// The lower bound of each class, for legends.
    static func lowerBound(_ bin: Int) -> Double { Double(bin) / 9 * 2 - 1 }
}

extension LocalDate {
    /// The (column, row) of this day in its year's grid: weeks as columns (the week of 1 January is column 0),
    /// Monday to Sunday as rows.
    var yearGridCell: (column: Int, row: Int) {
        let first = LocalDate(year: components.year, month: 1, day: 1)!
        let dayOfYear = first.distance(to: self)
        return ((dayOfYear + first.weekdayIndex) / 7, weekdayIndex)
    }
}
