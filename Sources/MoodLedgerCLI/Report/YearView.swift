import Foundation
import MoodLedger

/// `moodledger year`: a year in pixels in the terminal — weeks as columns, Monday to Sunday as rows; ANSI 256-colour
/// blocks when colour is on, else the class digit 1–9 (1 most unpleasant, 9 most pleasant) and `·` for no entry.
enum YearView {
    static func render(_ state: LedgerState, year: Int, color: Bool) -> String {
        let start = LocalDate(year: year, month: 1, day: 1)!
        let end = LocalDate(year: year, month: 12, day: 31)!
        var grid = Array(repeating: Array(repeating: " ", count: 54), count: 7)
        var sum = 0.0
        var days = 0
        var day = start
        while day <= end {
            let (column, row) = day.yearGridCell
            if let mean = state.analytics.days[day]?.averageValence {
                let bin = MoodColors.bin(mean)
                grid[row][column] = color ? "\u{1B}[38;5;\(MoodColors.ansi[bin])m█\u{1B}[0m" : String(bin + 1)
                sum += mean
                days += 1
            } else {
                grid[row][column] = "·"
            }
            day = day.advanced(by: 1)
        }
        let columns = end.yearGridCell.column + 1
        var monthLine = Array(repeating: Character(" "), count: columns + 3)
        for month in 1...12 {
            let column = LocalDate(year: year, month: month, day: 1)!.yearGridCell.column
            for (offset, letter) in ReportHTML.months[month - 1].enumerated() where column + offset < monthLine.count {
                monthLine[column + offset] = letter
            }
        }
        var lines = [
            "\(year): "
                + (days == 0
                    ? "no entries"
                    : "average valence \(ReportHTML.number(sum / Double(days))) over \(days) day\(days == 1 ? "" : "s")")
        ]
        lines.append(
            "    " + String(monthLine).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression))
        for (row, name) in ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].enumerated() {
            var text = grid[row][0..<columns].joined()
            while text.hasSuffix(" ") { text.removeLast() }
            lines.append(name + " " + text)
        }
        let legend =
            color
            ? (0..<9).map { "\u{1B}[38;5;\(MoodColors.ansi[$0])m█\u{1B}[0m" }.joined()
            : "123456789"
        lines.append("    " + legend + "  unpleasant → pleasant (average valence −1 … +1); · no entry")
        return lines.joined(separator: "\n")
    }
}
