/// A file that cannot be imported: the line (1-based; 0 when not known) and field, and what is wrong.
/// Never contains notes text.
public struct ImportError: Error, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var field: String?
    public var problem: String
    /// For unmapped Daylio moods: every unmapped name.
    public var unmappedMoods: [String] = []

    public init(line: Int, field: String?, problem: String) {
        self.line = line
        self.field = field
        self.problem = problem
    }

    public var description: String {
        (line > 0 ? "line \(line)" : "file") + (field.map { ", field \($0)" } ?? "") + ": \(problem)"
    }
}

/// One row or record of a file, ready to log.
public struct ImportRow: Sendable, Equatable {
    /// Where it came from in the file (1-based line, or record index for JSON).
    public var line: Int
    public var draft: MoodDraft

    /// A row from `line` of a file.
    public init(line: Int, draft: MoodDraft) {
        self.line = line
        self.draft = draft
    }
}
