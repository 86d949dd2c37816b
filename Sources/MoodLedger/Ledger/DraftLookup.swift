/// What deciding a logged draft asks of the current entries (``Ledger/decide(_:in:now:options:validated:)``): the
/// state's entries, or an import's, which holds the entries it creates apart (``ImportScratch``).
protocol DraftLookup {
    /// The entry holding a (source, source id), if any.
    func entry(source: MoodSource, sourceID: String) throws -> MoodEntry?
    /// Whether an entry with this id is current.
    func contains(_ id: EntryID) -> Bool
    /// The day's daily mood, if it has one.
    func dailyMood(on day: LocalDate) throws -> MoodEntry?
}

extension EntriesState: DraftLookup {}

extension ImportScratch: DraftLookup {}
