import MoodLedger

/// RFC 4180 records read from a byte source in chunks, so an import never holds the whole file: the bytes of one
/// record at a time are split off (with ``CSVReader``'s quoting rules) and parsed by ``CSVReader``.
struct CSVStream {
    /// Fills the buffer with the next bytes of the file; returns how many (0 at the end).
    let read: (UnsafeMutableRawBufferPointer) throws -> Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var scan = 0
    private var atEnd = false
    private var line = 1
    private var checkedBOM = false
    // The quoting state at `scan`, as CSVReader keeps it.
    private var inQuotes = false
    private var fieldEmpty = true
    private var afterClosingQuote = false

    init(read: @escaping (UnsafeMutableRawBufferPointer) throws -> Int) { self.read = read }

    /// The next record (blank lines skipped), or `nil` at the end.
    /// - Throws: ``ImportError`` for malformed quoting or invalid UTF-8 (naming the line); what `read` throws.
    mutating func next() throws -> CSVReader.Record? {
        while true {
            if let end = try findRecordEnd() {
                let bytes = buffer[start..<end]
                let recordLine = line
                line += bytes.reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
                start = end
                scan = end
                if start > 1 << 20 {
                    buffer.removeFirst(start)
                    scan -= start
                    start = 0
                }
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    throw ImportError(line: recordLine, field: nil, problem: "not UTF-8 text")
                }
                if !bytes.contains(where: { $0 == UInt8(ascii: "\"") || $0 == 13 }) {
                    // No quotes and no carriage returns (most records): the fields are the text between commas, as
                    // CSVReader would find them, without walking it scalar by scalar.
                    let body = text.utf8.last == 10 ? text.utf8.dropLast() : text.utf8[...]
                    if body.isEmpty { continue }  // a blank line
                    let fields = body.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
                    return CSVReader.Record(line: recordLine, fields: fields.map { String(Substring($0)) })
                }
                let records: [CSVReader.Record]
                do { records = try CSVReader.records(text) } catch {
                    throw ImportError(
                        line: recordLine + max(0, error.line - 1), field: error.field, problem: error.problem)
                }
                guard let record = records.first else { continue }  // a blank line
                return CSVReader.Record(line: recordLine + record.line - 1, fields: record.fields)
            }
            if atEnd {
                if inQuotes { throw ImportError(line: line, field: nil, problem: "unterminated quoted field") }
                return nil
            }
        }
    }

    /// Scans for the end (just past the newline) of the record starting at `start`, reading more as needed.
    /// Returns `nil` when more bytes were read but no end found yet, or the file ended with no bytes left.
    private mutating func findRecordEnd() throws -> Int? {
        while true {
            while scan < buffer.count {
                let byte = buffer[scan]
                if inQuotes {
                    if byte == UInt8(ascii: "\"") {
                        guard scan + 1 < buffer.count || atEnd else { break }  // need the next byte: `""` or a close
                        if scan + 1 < buffer.count, buffer[scan + 1] == UInt8(ascii: "\"") {
                            scan += 2
                            continue
                        }
                        inQuotes = false
                        afterClosingQuote = true
                    }
                    scan += 1
                    continue
                }
                switch byte {
                case UInt8(ascii: ","):
                    fieldEmpty = true
                    afterClosingQuote = false
                case 13:
                    break
                case 10:
                    scan += 1
                    fieldEmpty = true
                    afterClosingQuote = false
                    return scan
                case UInt8(ascii: "\"") where fieldEmpty && !afterClosingQuote:
                    inQuotes = true
                    fieldEmpty = false
                default:
                    fieldEmpty = false
                }
                scan += 1
            }
            if atEnd { return scan > start ? scan : nil }
            try fill()
        }
    }

    private mutating func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        let count = try chunk.withUnsafeMutableBytes { try read($0) }
        if count == 0 {
            atEnd = true
            return
        }
        var bytes = chunk[0..<count]
        if !checkedBOM {
            checkedBOM = true
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        }
        buffer += bytes
    }
}
