import MoodLedger

/// Daylio CSV exports, all four header versions (`Specs/imports-exports.md`).
enum DaylioImporter {
    /// Built-in mood names → level (1 awful … 5 rad), compared lowercased with spaces collapsed.
    static let defaultMoods: [String: Int] = [
        "rad": 5, "awesome": 5, "great": 5, "super": 5, "amazing": 5,
        "good": 4, "fine": 4,
        "meh": 3, "average": 3, "okay": 3, "ok": 3, "normal": 3, "neutral": 3,
        "bad": 2, "sad": 2, "down": 2,
        "awful": 1, "terrible": 1, "horrible": 1, "fugly": 1
    ]

    static func key(_ name: String) -> String { WordNormalizer.custom(name) }

    /// A Daylio export read row by row (a whole file, or a stream of records that never holds the file).
    struct Rows: RowReader {
        let options: ImportOptions
        let names: [String]
        let time: Int, mood: Int, activities: Int, note: Int
        let fullDate: Int?, year: Int?, date: Int?, title: Int?
        var moods: [String: Int] = [:]
        /// Every mood name no level is known for, in order of appearance.
        var unmapped: [String] = []
        /// Rows already seen per local minute (ms as if UTC): the `#n` of the source id.
        var seen = OccurrenceCounter()

        /// Reads the header. - Throws: ``ImportError`` when it is not a Daylio export header.
        init(header: CSVReader.Record, options: ImportOptions) throws(ImportError) {
            self.options = options
            names = header.fields.map { $0.trimmingWhitespace().lowercased() }
            let names = self.names
            func column(_ name: String) -> Int? { names.firstIndex(of: name) }
            guard let time = column("time"), let mood = column("mood"), let activities = column("activities"),
                let note = column("note")
            else {
                throw ImportError(
                    line: 1, field: nil, problem: "not a Daylio export header (needs time, mood, activities, note)")
            }
            (self.time, self.mood, self.activities, self.note) = (time, mood, activities, note)
            (fullDate, year, date, title) = (column("full_date"), column("year"), column("date"), column("note_title"))
            guard fullDate != nil || (year != nil && date != nil) else {
                throw ImportError(line: 1, field: "full_date", problem: "needs full_date, or year and date")
            }
            for (name, level) in DaylioImporter.defaultMoods { moods[DaylioImporter.key(name)] = level }
            for (name, level) in options.moodMap { moods[DaylioImporter.key(name)] = level }
        }

        /// Fails when some mood names had no level (listing every one), after the whole file was read.
        mutating func finish() throws(ImportError) {
            seen = OccurrenceCounter()  // the file is read: no row is numbered again
            guard !unmapped.isEmpty else { return }
            var error = ImportError(
                line: 0, field: "mood",
                problem: "unmapped mood name(s): \(unmapped.map { "\"\($0)\"" }.joined(separator: ", ")); "
                    + "map them with --mood-map \"Name=level,…\" (levels 1 awful … 5 rad)")
            error.unmappedMoods = unmapped
            throw error
        }

        /// The draft of one record (`nil` for an unmapped mood, which ``finish()`` reports).
        /// What one activity of a row became.
        enum Activity {
            case none, association(String), tag(String), tooLong
        }

        /// Activities already parsed, by their text in the file.
        private var activityCache: [Substring: Activity] = [:]

        mutating func draft(_ record: CSVReader.Record, plan: inout ImportPlan) throws(ImportError) -> MoodDraft? {
            let line = record.line
            guard record.fields.count == names.count else {
                throw ImportError(
                    line: line, field: nil,
                    problem: "has \(record.fields.count) fields, the header has \(names.count)")
            }
            let f = record.fields
            let day: LocalDate
            if let fullDate {
                guard let parsed = LocalDate(f[fullDate].trimmingWhitespace()) else {
                    throw ImportError(line: line, field: "full_date", problem: "not a real date yyyy-MM-dd")
                }
                day = parsed
            } else {
                guard let parsed = yearAndDate(f[year!], f[date!]) else {
                    throw ImportError(line: line, field: "date", problem: "not a real date (year + month and day)")
                }
                day = parsed
            }
            guard let minutes = clock(f[time]) else {
                throw ImportError(line: line, field: "time", problem: "not a time (HH:mm or h:mm am/pm)")
            }
            let moodName = f[mood].trimmingWhitespace()
            guard let level = moods[key(moodName)] else {
                if !unmapped.contains(moodName) { unmapped.append(moodName) }
                return nil
            }
            guard (1...5).contains(level) else {
                throw ImportError(line: line, field: "mood", problem: "mood level must be 1...5")
            }
            var associations: [String] = []
            var tags: [String] = []
            for activity in f[activities].split(separator: "|") {
                // An export repeats a few activities on every row: each is parsed once.
                let parsed: Activity
                if let known = activityCache[activity] {
                    parsed = known
                } else {
                    let name = String(activity).trimmingWhitespace()
                    if name.isEmpty {
                        parsed = .none
                    } else if let word = try? MoodAssociation.parse(name), !word.isCustom {
                        parsed = .association(word.name)
                    } else {
                        parsed = name.count <= MoodRules.maximumTagLength ? .tag(name) : .tooLong
                    }
                    if activityCache.count < 4_096 { activityCache[activity] = parsed }
                }
                switch parsed {
                case .none: continue
                case .association(let name): if !associations.contains(name) { associations.append(name) }
                case .tag(let name): if !tags.contains(name) { tags.append(name) }
                case .tooLong:
                    throw ImportError(
                        line: line, field: "activities", problem: "an activity is longer than 100 characters")
                }
            }
            let noteText = [title.map { f[$0] } ?? "", f[note]].map(HTMLText.plain).filter { !$0.isEmpty }
                .joined(separator: "\n")
            let localMs = day.utcMidnightMilliseconds + Int64(minutes) * 60_000
            let stamp = day.description + "T" + ISO8601.pad(minutes / 60, 2) + ":" + ISO8601.pad(minutes % 60, 2)
            let occurrence = seen.count(localMs)  // rows at the same minute: #0, #1, … in file order
            // The zone's offset at that instant (DST right); a skipped or repeated local time is reported.
            let zone = options.zone ?? .fixed(minutes: options.utcOffsetMinutes)
            let (loggedAt, adjustment) = zone.resolve(localMilliseconds: localMs)
            if let adjustment { plan.adjustedTimes.append("line \(line): " + zone.explain(adjustment, local: stamp)) }
            var draft = MoodDraft(
                valence: Valence.from(daylioLevel: level), associations: associations, tags: tags,
                loggedAt: loggedAt,
                source: .import, sourceID: "daylio:\(stamp)#\(occurrence)", suggestLabels: false)
            draft.notes = try Importer.notes(
                noteText.isEmpty ? nil : noteText, line: line, options: options, plan: &plan)
            return draft
        }
    }

    /// `15:26`, `6:50 pm`, `12:19 am` → minutes after midnight.
    static func clock(_ text: String) -> Int? {
        // `H:mm` or `HH:mm` (what exports write), read from the bytes; anything else takes the general path.
        let bytes = text.utf8
        if bytes.count == 4 || bytes.count == 5, bytes.allSatisfy({ (48...58).contains($0) }) {
            let digits = bytes.map { Int($0) - 48 }
            let colon = digits.count - 3
            if digits[colon] == 10, !digits.enumerated().contains(where: { $0.offset != colon && $0.element == 10 }) {
                let h = digits[..<colon].reduce(0) { $0 * 10 + $1 }
                let m = digits[colon + 1] * 10 + digits[colon + 2]
                return h < 24 && m < 60 ? h * 60 + m : nil
            }
        }
        var t = text.trimmingWhitespace().lowercased()
        var pm: Bool?
        if t.hasSuffix("am") || t.hasSuffix("pm") {
            pm = t.hasSuffix("pm")
            t = String(t.dropLast(2)).trimmingWhitespace()
        }
        let parts = t.split(separator: ":")
        guard parts.count == 2, let h = Int(parts[0]), let m = Int(parts[1]), (0..<60).contains(m) else { return nil }
        if let pm {
            guard (1...12).contains(h) else { return nil }
            return ((h % 12) + (pm ? 12 : 0)) * 60 + m
        }
        guard (0..<24).contains(h) else { return nil }
        return h * 60 + m
    }

    static let months = [
        "january", "february", "march", "april", "may", "june", "july", "august", "september",
        "october", "november", "december"
    ]

    /// The oldest header: `year` plus an English `date` such as `September 13` or `13 September` (or `Sep 13`).
    static func yearAndDate(_ year: String, _ date: String) -> LocalDate? {
        guard let y = Int(year.trimmingWhitespace()) else { return nil }
        let words = date.lowercased().split(whereSeparator: { $0 == " " || $0 == "." || $0 == "," })
        guard words.count == 2 else { return nil }
        let (a, b) = (String(words[0]), String(words[1]))
        func month(_ word: String) -> Int? {
            months.firstIndex { $0 == word || (word.count >= 3 && $0.hasPrefix(word)) }.map { $0 + 1 }
        }
        if let m = month(a), let d = Int(b) { return LocalDate(year: y, month: m, day: d) }
        if let d = Int(a), let m = month(b) { return LocalDate(year: y, month: m, day: d) }
        return nil
    }
}

/// Notes exported as HTML: `<br>` becomes a newline, other tags are dropped, common entities decoded.
enum HTMLText {
    static let entities = [
        "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": "\"", "&#39;": "'", "&apos;": "'",
        "&nbsp;": " "
    ]

    static func plain(_ html: String) -> String {
        // Text without markup, entities or line breaks is itself, trimmed.
        if !html.utf8.contains(where: {
            $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r")
        }) {
            return html.trimmingWhitespace()
        }
        var out = ""
        var index = html.startIndex
        while index < html.endIndex {
            let c = html[index]
            if c == "<", let close = html[index...].firstIndex(of: ">") {
                let tag = html[html.index(after: index)..<close].lowercased().trimmingWhitespace()
                let name = tag.split(whereSeparator: { $0 == " " || $0 == "/" }).first.map(String.init) ?? ""
                if ["br", "p", "div", "li"].contains(name) || tag == "/p" || tag == "/div" { out += "\n" }
                index = html.index(after: close)
                continue
            }
            if c == "&", let semicolon = html[index...].prefix(8).firstIndex(of: ";"),
                let decoded = entities[String(html[index...semicolon])]
            {
                out += decoded
                index = html.index(after: semicolon)
                continue
            }
            out.append(c)
            index = html.index(after: index)
        }
        // Collapse the blank runs the removed tags leave.
        return out.split(separator: "\n", omittingEmptySubsequences: false).map { String($0).trimmingWhitespace() }
            .joined(separator: "\n").trimmingWhitespace()
    }
}
