import MoodLedger

/// The file formats `import` reads (`Specs/imports-exports.md`).
public enum ImportFormat: String, Sendable, CaseIterable {
    case daylio
    case progress
    case legacyMood = "legacy-mood"
    case moodAPI = "mood-api"
    case healthkit
    /// The tool's own CSV export (`export --format csv`).
    case csv

    /// The format a command-line name means: a raw value, or `json` for ``moodAPI`` (what `export --format json`
    /// writes), so that every export format name imports back.
    /// - Parameter name: the name as typed.
    public init?(named name: String) {
        self.init(rawValue: name == "json" ? ImportFormat.moodAPI.rawValue : name)
    }
}

/// How an import reads its file.
public struct ImportOptions: Sendable {
    /// The UTC offset of local times in the file (Daylio rows), in minutes. Default 0; the CLI passes the machine's.
    public var utcOffsetMinutes = 0
    /// The zone of local times in the file, and the offset given to instants that carry none of their own
    /// (`utc_offset_minutes`). Default `nil`: the fixed ``utcOffsetMinutes`` for local times, instants keep the
    /// offset they are written with.
    public var zone: LocalZone?
    /// Daylio mood names → levels 1…5, on top of the built-in names (case- and space-insensitive).
    public var moodMap: [String: Int] = [:]
    /// Store the older apps' suggestions for label-less 1–10 records (labels for the score, associations from note
    /// keywords). Default: `false` — only words a person or a source chose are stored.
    public var suggest = false
    /// Cut notes over 500 characters instead of failing the row. Default: `false`.
    public var truncateNotes = false

    public init() {}
}

/// What a parsed file holds, before anything is appended.
public struct ImportPlan: Sendable, Equatable {
    public var format: ImportFormat
    public var rows: [ImportRow] = []
    /// Lines whose notes were cut to 500 characters (with `truncateNotes`).
    public var truncatedLines: [Int] = []
    /// Records skipped on purpose (e.g. progress records that are not mood scores), with why.
    public var skipped: [(line: Int, reason: String)] = []
    /// Local times the zone skipped or repeated, with what was done (`line N: …`).
    public var adjustedTimes: [String] = []

    public init(format: ImportFormat) { self.format = format }

    public static func == (a: ImportPlan, b: ImportPlan) -> Bool {
        a.format == b.format && a.rows == b.rows && a.truncatedLines == b.truncatedLines
            && a.skipped.count == b.skipped.count
    }
}

/// Parses any import format into a plan.
public enum Importer {
    /// Parses a whole file; nothing is appended here.
    /// - Parameters:
    ///   - text: the file's text (a UTF-8 BOM is allowed).
    ///   - format: its format.
    ///   - options: offsets, mood map, note truncation.
    /// - Throws: ``ImportError`` naming the line and field.
    public static func plan(
        _ text: String, format: ImportFormat, options: ImportOptions = ImportOptions()
    )
        throws(ImportError) -> ImportPlan
    {
        try format.reader.plan(text, options)
    }

    /// Applies the 500-character notes rule: error, or cut and remember the line.
    static func notes(
        _ text: String?, line: Int, options: ImportOptions, plan: inout ImportPlan
    ) throws(ImportError)
        -> String?
    {
        guard let text else { return nil }
        let trimmed = text.trimmingWhitespace()
        // Counted in code points, as the validation rule counts them.
        guard trimmed.unicodeScalars.count > MoodRules.maximumNotesLength else {
            return trimmed.isEmpty ? nil : trimmed
        }
        guard options.truncateNotes else {
            throw ImportError(
                line: line, field: "notes", problem: "longer than 500 characters (use --truncate-notes to cut)")
        }
        plan.truncatedLines.append(line)
        return String(String.UnicodeScalarView(trimmed.unicodeScalars.prefix(MoodRules.maximumNotesLength)))
    }
}

/// The rows of a large file read one at a time (`Daylio` and `csv`): an import that never holds the file, its
/// rows or its events in memory (`Ledger.importStream`).
public struct ImportStream {
    private var records: CSVStream
    /// The format's row reader, mutated in place (a Daylio reader's memory of seen minutes is never copied per row).
    private var rows: any RowReader
    /// What the rows read so far noted beside themselves: notes cut, times adjusted, records skipped (no rows).
    public private(set) var plan: ImportPlan

    /// Opens a stream over `read` (which fills a buffer with the file's next bytes, 0 at the end).
    /// - Returns: `nil` for the formats read whole (the JSON ones: ``Importer/plan(_:format:options:)``).
    /// - Throws: ``ImportError`` for an empty file or a header that is not the format's.
    public static func open(
        format: ImportFormat, options: ImportOptions,
        read: @escaping (UnsafeMutableRawBufferPointer) throws -> Int
    ) throws -> ImportStream? {
        guard let makeRows = format.reader.rows else { return nil }
        var records = CSVStream(read: read)
        guard let header = try records.next() else { throw ImportError(line: 1, field: nil, problem: "empty file") }
        return ImportStream(
            records: records, rows: try makeRows(header, options), plan: ImportPlan(format: format))
    }

    /// The next row, or `nil` at the end (after which unmapped Daylio moods fail the import).
    /// - Throws: ``ImportError`` naming the line and field; what `read` throws.
    public mutating func next() throws -> ImportRow? {
        while let record = try records.next() {
            if let draft = try rows.draft(record, plan: &plan) { return ImportRow(line: record.line, draft: draft) }
        }
        try rows.finish()
        return nil
    }
}
