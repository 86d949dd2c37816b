/// The backend API's list filters (`Specs/ledger.md`, *Queries*).
public struct EntryQuery: Sendable, Equatable {
    /// First local date, inclusive.
    public var from: LocalDate?
    /// Last local date, inclusive.
    public var to: LocalDate?
    public var source: MoodSource?
    public var label: MoodLabel?
    public var association: MoodAssociation?
    /// Entries carrying this tag (compared case-insensitively).
    public var tag: String?
    /// Entries whose notes contain this text (case-insensitively).
    public var search: String?
    public var minValence: Double?
    public var maxValence: Double?
    /// 1…100, default 30.
    public var limit = 30
    /// ≥ 0, default 0.
    public var offset = 0

    /// A query: every filter it leaves out matches everything; the first page of 30, newest first.
    public init(
        from: LocalDate? = nil, to: LocalDate? = nil, source: MoodSource? = nil, label: MoodLabel? = nil,
        association: MoodAssociation? = nil, tag: String? = nil, search: String? = nil, minValence: Double? = nil,
        maxValence: Double? = nil, limit: Int = 30, offset: Int = 0
    ) {
        self.from = from
        self.to = to
        self.source = source
        self.label = label
        self.association = association
        self.tag = tag
        self.search = search
        self.minValence = minValence
        self.maxValence = maxValence
        self.limit = limit
        self.offset = offset
    }
}

/// One page of a list, newest first.
public struct EntryPage: Sendable, Equatable {
    public var entries: [MoodEntry]
    /// How many entries match in all.
    public var total: Int
    public var limit: Int
    public var offset: Int
    /// A page.
    public init(entries: [MoodEntry], total: Int, limit: Int, offset: Int) {
        self.entries = entries
        self.total = total
        self.limit = limit
        self.offset = offset
    }

    /// Whether entries follow this page.
    public var hasMore: Bool { offset + entries.count < total }

    /// `{"entries": [...], "total", "limit", "offset", "has_more"}`.
    public var json: JSONValue {
        .object([
            ("entries", .array(entries.map(\.json))), ("total", .int(Int64(total))),
            ("limit", .int(Int64(limit))), ("offset", .int(Int64(offset))), ("has_more", .bool(hasMore))
        ])
    }

    /// ``json`` written straight into `out`, byte for byte the same text.
    /// - Parameters:
    ///   - out: the text to append to.
    ///   - writeEntries: writes the `entries` array (a server may reuse cached entry texts); by default each entry's
    ///     ``MoodEntry/writeJSON(to:userID:typedScore:)``.
    package func writeJSON(
        to out: inout JSONBytes, entries writeEntries: (([MoodEntry], inout JSONBytes) -> Void)? = nil
    ) {
        out.beginObject()
        out.key("entries")
        if let writeEntries {
            writeEntries(entries, &out)
        } else {
            out.beginArray()
            for entry in entries { entry.writeJSON(to: &out) }
            out.endArray()
        }
        out.key("total")
        out.int(Int64(total))
        out.key("limit")
        out.int(Int64(limit))
        out.key("offset")
        out.int(Int64(offset))
        out.key("has_more")
        out.bool(hasMore)
        out.endObject()
    }
}

extension LedgerState {
    /// Lists entries matching `query`, newest first, one page at a time.
    /// - Throws: ``MoodError`` for a limit outside 1…100, a negative offset or `from` after `to`.
    public func list(_ query: EntryQuery) throws(MoodError) -> EntryPage {
        guard MoodRules.pageSizeRange.contains(query.limit) else { throw .invalid("limit", "must be 1...100") }
        return try matches(query)
    }

    /// Every entry matching `query` from its offset on, newest first, in one pass (`limit` is not used): what
    /// paging through ``list(_:)`` to the end gives, without asking again from the newest day for every page.
    /// - Throws: ``MoodError`` for a negative offset, `from` after `to` or a valence filter outside −1…1.
    public func listAll(_ query: EntryQuery) throws(MoodError) -> EntryPage {
        var all = query
        all.limit = .max
        var page = try matches(all)
        page.limit = max(page.entries.count, 1)
        return page
    }

    /// The page of `query`, its limit already checked.
    private func matches(_ query: EntryQuery) throws(MoodError) -> EntryPage {
        guard query.offset >= 0 else { throw .invalid("offset", "must not be negative") }
        if let from = query.from, let to = query.to, from > to { throw .invalid("from", "must not be after to") }
        for (field, value) in [("min_valence", query.minValence), ("max_valence", query.maxValence)] {
            if let value, !(-1...1).contains(value) { throw .invalid(field, "must be a number from -1 to 1") }
        }
        if query.source == nil, query.label == nil, query.association == nil, query.minValence == nil,
            query.maxValence == nil, query.tag == nil, query.search == nil
        {
            return unfilteredPage(query)
        }
        let minQ = query.minValence.map(Valence.fixed)
        let maxQ = query.maxValence.map(Valence.fixed)
        var total = 0
        var page: [MoodEntry] = []
        for day in entries.activeDays.reversed() {
            if let to = query.to, day > to { continue }
            if let from = query.from, day < from { break }
            // The analytics projection is the label and association index: skip days without the word.
            if let label = query.label, analytics.days[day]?.labels[label] == nil { continue }
            if let association = query.association, analytics.days[day]?.associations[association] == nil { continue }
            for entry in entries.entries(on: day) {
                if let source = query.source, entry.source != source { continue }
                if let label = query.label, !entry.labelList.contains(label) { continue }
                if let association = query.association, !entry.associationList.contains(association) { continue }
                if let tag = query.tag?.lowercased(), !entry.tags.contains(where: { $0.lowercased() == tag }) {
                    continue
                }
                if let search = query.search?.lowercased(), !(entry.notes?.lowercased().contains(search) ?? false) {
                    continue
                }
                if minQ != nil || maxQ != nil {
                    guard let q = entry.valenceGrid else { continue }
                    if let minQ, q < minQ { continue }
                    if let maxQ, q > maxQ { continue }
                }
                if total >= query.offset && page.count < query.limit { page.append(entry) }
                total += 1
            }
        }
        return EntryPage(entries: page, total: total, limit: query.limit, offset: query.offset)
    }

    /// A page by date range only: the total from per-day counts, and only the page's entries built.
    private func unfilteredPage(_ query: EntryQuery) -> EntryPage {
        let days = activeDays(from: query.from, to: query.to)
        var total = 0
        for day in days { total += entries.count(on: day) }
        var page: [MoodEntry] = []
        var skip = query.offset
        for day in days.reversed() where page.count < query.limit {
            let count = entries.count(on: day)
            if skip >= count {
                skip -= count
                continue
            }
            let wanted = min(count, skip + min(query.limit - page.count, count))
            page += entries.newest(wanted, on: day).dropFirst(skip)
            skip = 0
        }
        return EntryPage(entries: page, total: total, limit: query.limit, offset: query.offset)
    }
}

extension EntryQuery: Codable {
    private enum Key: String, CodingKey {
        case from, to, source, label, association, tag, search, limit, offset
        case minValence = "min_valence"
        case maxValence = "max_valence"
    }

    /// Decodes the list route's parameters as a JSON object (absent: no filter, the first page of 30).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        self.init(
            from: try c.decodeIfPresent(LocalDate.self, forKey: .from),
            to: try c.decodeIfPresent(LocalDate.self, forKey: .to),
            source: try c.decodeIfPresent(MoodSource.self, forKey: .source),
            label: try c.decodeIfPresent(MoodLabel.self, forKey: .label),
            association: try c.decodeIfPresent(MoodAssociation.self, forKey: .association),
            tag: try c.decodeIfPresent(String.self, forKey: .tag),
            search: try c.decodeIfPresent(String.self, forKey: .search),
            minValence: try c.decodeIfPresent(Double.self, forKey: .minValence),
            maxValence: try c.decodeIfPresent(Double.self, forKey: .maxValence),
            limit: try c.decodeIfPresent(Int.self, forKey: .limit) ?? 30,
            offset: try c.decodeIfPresent(Int.self, forKey: .offset) ?? 0)
    }

    /// Encodes the filters given, the limit and the offset.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encodeIfPresent(from, forKey: .from)
        try c.encodeIfPresent(to, forKey: .to)
        try c.encodeIfPresent(source, forKey: .source)
        try c.encodeIfPresent(label, forKey: .label)
        try c.encodeIfPresent(association, forKey: .association)
        try c.encodeIfPresent(tag, forKey: .tag)
        try c.encodeIfPresent(search, forKey: .search)
        try c.encodeIfPresent(minValence, forKey: .minValence)
        try c.encodeIfPresent(maxValence, forKey: .maxValence)
        try c.encode(limit, forKey: .limit)
        try c.encode(offset, forKey: .offset)
    }
}
