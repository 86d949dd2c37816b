import MoodLedger

/// How `import` reads one file format. Every format is one entry of ``ImportFormat/reader``: a new format is a case
/// of ``ImportFormat`` and its entry there (the compiler asks for it), with its reader in a file of its own.
struct FormatReader {
    /// Parses a whole file into a plan; nothing is appended.
    let plan: (_ text: String, _ options: ImportOptions) throws(ImportError) -> ImportPlan
    /// For the CSV formats, read a row at a time (also as a stream that never holds the file): a reader made from
    /// the header. `nil` for the formats read whole.
    let rows: ((_ header: CSVReader.Record, _ options: ImportOptions) throws(ImportError) -> any RowReader)?

    /// A JSON format, read whole, each record by `read`.
    static func json(_ format: ImportFormat, _ read: @escaping JSONImporters.ReadRecord) -> FormatReader {
        FormatReader(
            plan: { (text, options) throws(ImportError) in
                try JSONImporters.plan(text, format: format, options: options, read: read)
            }, rows: nil)
    }

    /// A CSV format read row by row; a whole file is its rows in order. `emptyProblem`: what a file without even a
    /// header is told.
    static func csv(
        _ format: ImportFormat, emptyProblem: String,
        rows: @escaping (_ header: CSVReader.Record, _ options: ImportOptions) throws(ImportError) -> any RowReader
    ) -> FormatReader {
        FormatReader(
            plan: { (text, options) throws(ImportError) in
                let records = try CSVReader.records(text)
                guard let header = records.first else {
                    throw ImportError(line: 1, field: nil, problem: emptyProblem)
                }
                var reader = try rows(header, options)
                var plan = ImportPlan(format: format)
                for record in records.dropFirst() {
                    if let draft = try reader.draft(record, plan: &plan) {
                        plan.rows.append(ImportRow(line: record.line, draft: draft))
                    }
                }
                try reader.finish()
                return plan
            }, rows: rows)
    }
}

/// A CSV format's rows after its header, one record at a time.
protocol RowReader {
    /// The draft a record holds, or `nil` for a record skipped on purpose (noted in `plan`).
    /// - Throws: ``ImportError`` naming the line and field.
    mutating func draft(_ record: CSVReader.Record, plan: inout ImportPlan) throws(ImportError) -> MoodDraft?
    /// Called after the last record: what only the whole file can tell fails here.
    /// - Throws: ``ImportError``.
    mutating func finish() throws(ImportError)
}

extension RowReader {
    mutating func finish() throws(ImportError) {}
}

extension ImportFormat {
    /// The registry of formats: how each one is read.
    var reader: FormatReader {
        switch self {
        case .daylio:
            .csv(.daylio, emptyProblem: "empty file") { (header, options) throws(ImportError) in
                try DaylioImporter.Rows(header: header, options: options)
            }
        case .csv:
            .csv(.csv, emptyProblem: "not a moodledger CSV export (needs a logged_at column)") {
                (header, options) throws(ImportError) in
                try JSONImporters.CSVExportRows(header: header, options: options)
            }
        case .progress: .json(.progress, JSONImporters.progress)
        case .legacyMood: .json(.legacyMood, JSONImporters.legacyMood)
        case .moodAPI: .json(.moodAPI, JSONImporters.moodAPI)
        case .healthkit:
            .json(.healthkit) { (reader, _, _) throws(ImportError) in try JSONImporters.healthKit(&reader) }
        }
    }
}
