import MoodLedger

/// RFC 4180 CSV: quoted fields with `""` escapes and line breaks inside quotes; CRLF or LF. Tracks line numbers.
struct CSVReader {
    struct Record {
        /// The line the record starts on (1-based).
        var line: Int
        var fields: [String]
    }

    /// Splits a whole text into records. A UTF-8 BOM is dropped.
    /// - Throws: ``ImportError`` for an unterminated quote or text after a closing quote.
    static func records(_ text: String) throws(ImportError) -> [Record] {
        var scalars = Array(text.unicodeScalars)
        if scalars.first == "\u{FEFF}" { scalars.removeFirst() }
        var records: [Record] = []
        var fields: [String] = []
        var field = String.UnicodeScalarView()
        var line = 1
        var recordLine = 1
        var index = 0
        var inQuotes = false
        var quotedFieldStartLine = 0
        var afterClosingQuote = false
        func endField() {
            fields.append(String(field))
            field = String.UnicodeScalarView()
            afterClosingQuote = false
        }
        while index < scalars.count {
            let c = scalars[index]
            index += 1
            if inQuotes {
                if c == "\"" {
                    if index < scalars.count, scalars[index] == "\"" {
                        field.append("\"")
                        index += 1
                    } else {
                        inQuotes = false
                        afterClosingQuote = true
                    }
                } else {
                    if c == "\n" { line += 1 }
                    field.append(c)
                }
                continue
            }
            switch c {
            case ",":
                endField()
            case "\r":
                continue
            case "\n":
                endField()
                if !(fields.count == 1 && fields[0].isEmpty) {
                    records.append(Record(line: recordLine, fields: fields))
                }
                fields = []
                line += 1
                recordLine = line
            case "\"" where field.isEmpty && !afterClosingQuote:
                inQuotes = true
                quotedFieldStartLine = line
            default:
                if afterClosingQuote {
                    throw ImportError(line: line, field: nil, problem: "text after a closing quote")
                }
                field.append(c)
            }
        }
        if inQuotes {
            throw ImportError(line: quotedFieldStartLine, field: nil, problem: "unterminated quoted field")
        }
        if !field.isEmpty || !fields.isEmpty || afterClosingQuote {
            endField()
            records.append(Record(line: recordLine, fields: fields))
        }
        return records
    }

    /// One RFC 4180 field: quoted when it holds a comma, quote, CR or LF.
    static func quote(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return field }
        return "\"" + field.replacingAll("\"", with: "\"\"") + "\""
    }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = Substring(self)
        while let range = rest.range(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}

extension Substring {
    func range(of target: String) -> Range<Substring.Index>? {
        guard let first = target.first else { return nil }
        var index = startIndex
        while index < endIndex {
            if self[index] == first, self[index...].hasPrefix(target) {
                return index..<self.index(index, offsetBy: target.count)
            }
            index = self.index(after: index)
        }
        return nil
    }
}
