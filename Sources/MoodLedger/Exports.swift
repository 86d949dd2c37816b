// The model is part of the ledger's API: `import MoodLedger` brings the entries, events and their codec too.
@_exported import MoodModel
