import Foundation
import TestSupport
import Testing

@testable import MoodLedger
@testable import MoodLedgerCLI
@testable import MoodModel

@Suite("Pictures: report, year, insights")
struct ReportTests {
    /// A small fixed ledger in 2026: a very good Monday (2 March), a bad Wednesday (4 March), walks on good days.
    static func ledger() -> CLIHarness {
        let cli = CLIHarness()
        cli.run(["init"])
        let days: [(String, String, [String])] = [
            ("2026-03-02T09:00", "0.9", ["--label", "joyful", "--association", "fitness", "--tag", "walk"]),
            ("2026-03-03T13:00", "0.4", ["--label", "calm", "--association", "fitness", "--tag", "walk"]),
            ("2026-03-04T20:00", "-0.8", ["--label", "stressed", "--association", "work"]),
            ("2026-03-05T07:30", "-0.3", ["--label", "anxious", "--association", "work"]),
            ("2026-03-06T22:00", "0.6", ["--label", "happy", "--association", "fitness", "--tag", "walk"]),
            ("2026-03-07T11:00", "-0.4", ["--label", "stressed", "--association", "work"]),
            ("2026-03-08T15:00", "0.2", ["--label", "calm", "--association", "family"]),
            ("2026-03-09T03:00", "-0.6", ["--label", "drained", "--association", "work", "--note", "private words"])
        ]
        for (time, valence, words) in days {
            cli.run(["log", "--time", time, "--valence", valence] + words)
        }
        return cli
    }

    static func html(_ cli: CLIHarness, _ extra: [String] = []) throws -> String {
        let out = cli.dir.sub("report.html")
        let result = cli.run(["report", "--out", out, "--from", "2026-01-01", "--to", "2026-05-28"] + extra)
        #expect(result.code == 0, "\(result.err)")
        return try String(contentsOfFile: out, encoding: .utf8)
    }

    @Test(
        "The report is one self-contained file: golden, no network reference, a text alternative per chart, notes only on request"
    )
    func selfContained() throws {
        let cli = Self.ledger()
        let html = try Self.html(cli)
        let check = try golden("report.html", html)
        #expect(check.matches, "re-record with MOODLEDGER_RECORD_GOLDEN=1 only for an intended change")
        for attribute in ["src=", "href=", "url(", "@import", "<script", "<link", "<img"] {
            #expect(!html.contains(attribute), "\(attribute) in the report")
        }
        #expect(!html.contains("http:") && !html.contains("https:"))
        let charts = html.components(separatedBy: "<svg").count - 1
        #expect(charts >= 6)
        // The legend runs from very unpleasant to very pleasant; the daily chart has a date axis (a label per month).
        #expect(html.contains(">−1 very unpleasant<") && html.contains(">+1 very pleasant<"))
        for month in ["2026-01", "2026-03", "2026-05"] { #expect(html.contains(">\(month)</text>"), "axis: \(month)") }
        // The period ends today (the harness's 2026-05-28): its current streak is told.
        #expect(html.contains("Current streak"))
        #expect(
            html.components(separatedBy: "<title id=").count - 1 == charts
                && html.components(separatedBy: "<desc id=").count - 1 == charts)
        #expect(html.contains("<table"))
        #expect(!html.contains("private words"))
        #expect(try Self.html(cli, ["--include-notes"]).contains("private words"))
    }

    @Test(
        "Headless Chromium renders it: the high day's cell shows the high colour, an empty day the background, the legend is there, no console error",
        .enabled(if: Browser.shouldRun, Browser.skipReason))
    func chromium() throws {
        let cli = Self.ledger()
        _ = try Self.html(cli)
        let png = cli.dir.sub("report.png")
        let stderr = try Self.screenshot(cli.dir.sub("report.html"), to: png)
        #expect(
            !stderr.contains("CONSOLE") && !stderr.contains("Uncaught") && !stderr.contains("Failed to load resource"),
            "\(stderr)")
        let high = ReportHTML.cellCentre(LocalDate("2026-03-02")!, yearIndex: 0)
        let low = ReportHTML.cellCentre(LocalDate("2026-03-04")!, yearIndex: 0)
        let empty = ReportHTML.cellCentre(LocalDate("2026-03-11")!, yearIndex: 0)
        let legendY =
            ReportHTML.headerHeight + ReportHTML.yearTitleHeight + ReportHTML.gridTop + 7 * ReportHTML.cellStep + 12 + 5
        let legend = (0..<9).map { (ReportHTML.pageMargin + ReportHTML.gridLeft + $0 * 40 + 19, legendY) }
        let pixels = try Self.pixels(png, [high, low, empty] + legend)
        #expect(pixels[0] == Self.rgb(MoodColors.hex[MoodColors.bin(Valence.quantized(0.9))]), "high day at \(high)")
        #expect(pixels[1] == Self.rgb(MoodColors.hex[MoodColors.bin(Valence.quantized(-0.8))]), "low day at \(low)")
        #expect(pixels[2] == Self.rgb(MoodColors.background), "empty day at \(empty)")
        for bin in 0..<9 { #expect(pixels[3 + bin] == Self.rgb(MoodColors.hex[bin]), "legend swatch \(bin)") }
    }

    @Test(
        "The demo ledger's report: year in pixels, trend, factor effects, weekday bars (the README's screenshot)",
        .enabled(if: Browser.shouldRun, Browser.skipReason))
    func demo() throws {
        let cli = CLIHarness()
        #expect(cli.run(["demo"]).code == 0)
        let out = cli.dir.sub("demo.html")
        // The demo's year ends the day before the harness's clock (2026-05-28): 2025-05-28 … 2026-05-27.
        #expect(cli.run(["report", "--out", out, "--from", "2025-05-28", "--to", "2026-05-27"]).code == 0)
        let html = try String(contentsOfFile: out, encoding: .utf8)
        for section in ["2025 in pixels", "2026 in pixels", "Daily averages", "Factor effects", "By weekday"] {
            #expect(html.contains(section), "\(section)")
        }
        let png = cli.dir.sub("demo.png")
        _ = try Self.screenshot(out, to: png, height: 2000)
        // The 15th of each of the demo's twelve months is coloured (not background) in the picture, mostly.
        let days =
            (6...12).map { (LocalDate(year: 2025, month: $0, day: 15)!, 0) }
            + (1...5).map { (LocalDate(year: 2026, month: $0, day: 15)!, 1) }
        let colours = try Self.pixels(png, days.map { ReportHTML.cellCentre($0.0, yearIndex: $0.1) })
        #expect(colours.filter { $0 != Self.rgb(MoodColors.background) }.count >= 10, "\(colours)")
        if Repository.recordGolden {
            try FileManager.default.createDirectory(
                atPath: Repository.root + "/Specs/images", withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: Repository.root + "/Specs/images/report.png")
            try FileManager.default.copyItem(atPath: png, toPath: Repository.root + "/Specs/images/report.png")
        }
        #expect(FileManager.default.fileExists(atPath: Repository.root + "/Specs/images/report.png"))
    }

    @Test("year: goldens with and without colour")
    func year() throws {
        let cli = Self.ledger()
        let plain = cli.run(["year", "2026"])
        #expect(plain.code == 0)
        #expect(try golden("year-2026.txt", plain.out).matches)
        var options = Ledger.Options()
        options.readOnly = true
        let ledger = try Ledger.open(at: cli.ledger, options: options)
        defer { ledger.close() }
        #expect(
            try golden("year-2026-color.txt", YearView.render(ledger.state, year: 2026, color: true) + "\n").matches)
    }

    // MARK: - Helpers

    /// Screenshots a file with headless Chromium; returns its stderr (console messages are logged there).
    static func screenshot(_ html: String, to png: String, height: Int = 900) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Browser.path())
        process.arguments = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
            "--enable-logging=stderr", "--v=0", "--window-size=1000,\(height)", "--screenshot=\(png)", "file://" + html
        ]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        return text.split(separator: "\n").filter { !$0.contains("dbus") && !$0.contains("bus.cc") }.joined(
            separator: "\n")
    }

    static func pixels(_ png: String, _ points: [(Int, Int)]) throws -> [[Int]] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            ["python3", Repository.root + "/Tests/MoodLedgerCLITests/Fixtures/png_pixels.py", png]
            + points.map { "\($0.0),\($0.1)" }
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.split(separator: "\n").map { $0.split(separator: " ").compactMap { Int($0) } }
    }

    static func rgb(_ hex: String) -> [Int] {
        let digits = Array(hex.dropFirst())
        return stride(from: 0, to: 6, by: 2).map { Int(String(digits[$0...$0 + 1]), radix: 16)! }
    }
}

/// Headless Chromium for the report's pixel tests. Without a browser those tests are skipped with this reason,
/// unless `MOODLEDGER_REQUIRE_BROWSER=1` (set by `.ci/run`, which installs Chromium) makes a missing browser a
/// failure.
enum Browser {
    static let candidates = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]

    static var installed: String? { candidates.first { FileManager.default.isExecutableFile(atPath: $0) } }

    static var required: Bool { ProcessInfo.processInfo.environment["MOODLEDGER_REQUIRE_BROWSER"] == "1" }

    static var shouldRun: Bool { required || installed != nil }

    static let skipReason: Comment = Comment(
        rawValue: "Chromium is not installed (apt-get install chromium python3 to run "
            + "this; MOODLEDGER_REQUIRE_BROWSER=1 makes its absence a failure, as in CI)")

    static func path() throws -> String {
        guard let path = installed else {
            throw CLIError(1, "chromium is not installed but MOODLEDGER_REQUIRE_BROWSER=1 asks for the browser tests")
        }
        return path
    }
}

@Suite("Report periods and the demo's dates")
struct ReportPeriodTests {
    @Test("A past period tells no current streak; a ledger quiet for a year reports its last year and says so")
    func pastPeriods() throws {
        let cli = ReportTests.ledger()
        let out = cli.dir.sub("past.html")
        #expect(cli.run(["report", "--out", out, "--from", "2026-01-01", "--to", "2026-03-31"]).code == 0)
        let past = try String(contentsOfFile: out, encoding: .utf8)
        #expect(!past.contains("Current streak") && past.contains("Longest"))
        // Two years later (the harness clock moved), the default period would be empty: the data's last year instead.
        cli.clock.advance(2 * 365 * 86_400_000)
        let quiet = cli.dir.sub("quiet.html")
        #expect(cli.run(["report", "--out", quiet]).code == 0)
        let html = try String(contentsOfFile: quiet, encoding: .utf8)
        #expect(html.contains("No entries in the last 365 days: this is the year up to the last entry (2026-03-09)"))
        #expect(html.contains("2025-03-10 to 2026-03-09"))
    }

    @Test("A fresh demo ends the day before it is built: trends of the last 30 days show it")
    func demoIsAboutNow() throws {
        let cli = CLIHarness()
        #expect(cli.run(["demo"]).code == 0)
        let trends = cli.run(["trends"])
        #expect(trends.code == 0)
        #expect(!trends.out.contains(": 0 entries"), "\(trends.out)")
        #expect(
            trends.out.contains("2026-05-27"),
            "the demo's last day is the day before the harness's today: \(trends.out)")
    }
}
