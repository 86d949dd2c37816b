public enum MoodLedgerPlaceholder {}
