import MoodLedger

/// The server's routes (`Specs/server.md`, `Specs/openapi.yaml`) and the methods each allows.
struct Route {
    enum Name: Equatable {
        case health
        case moodCollection
        case moodBatch
        case moodChanges
        case moodTrends
        case moodLabelAnalytics
        case moodAssociationAnalytics
        case moodDaily(String)
        case moodItem(String)
        case wellnessCollection
        case wellnessAnalytics
        case wellnessItem(String)
        case progress
    }

    var name: Name
    var allowed: [String]

    /// Whether answering `method` here reads entry revisions (ETags, the changes feed, idempotent writes).
    func readsRevisions(_ method: String) -> Bool {
        if method != "GET" { return true }
        switch name {
        case .moodItem, .wellnessItem, .moodChanges: return true
        default: return false
        }
    }

    /// The route's one spelling: what idempotency keys are scoped by, so `/api/v1/mood`, `/api/v1/mood/` and
    /// `/api/v1/%6dood` are one route (an entry id in its canonical lowercase form).
    var canonicalPath: String {
        func id(_ text: String) -> String { EntryID(text)?.description ?? text }
        switch name {
        case .health: return "/health"
        case .moodCollection: return "/api/v1/mood"
        case .moodBatch: return "/api/v1/mood/batch"
        case .moodChanges: return "/api/v1/mood/changes"
        case .moodTrends: return "/api/v1/mood/trends"
        case .moodLabelAnalytics: return "/api/v1/mood/analytics/labels"
        case .moodAssociationAnalytics: return "/api/v1/mood/analytics/associations"
        case .moodDaily(let date): return "/api/v1/mood/daily/" + date
        case .moodItem(let item): return "/api/v1/mood/" + id(item)
        case .wellnessCollection: return "/api/v1/wellness/mood-entries"
        case .wellnessAnalytics: return "/api/v1/wellness/mood-entries/analytics"
        case .wellnessItem(let item): return "/api/v1/wellness/mood-entries/" + id(item)
        case .progress: return "/api/v1/progress"
        }
    }

    /// The route of a path (percent-decoded segment by segment), or `nil`.
    static func match(_ path: String) -> Route? {
        var raw = path
        if raw.count > 1, raw.hasSuffix("/") { raw.removeLast() }
        let segments = raw.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { segment in
            segment.utf8.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") })
                ? HTTPRequest.percentDecode(String(segment).replacingPlus()) ?? "\u{FFFD}" : String(segment)
        }
        switch segments {
        case ["health"]: return Route(name: .health, allowed: ["GET"])
        case ["api", "v1", "mood"]: return Route(name: .moodCollection, allowed: ["GET", "POST"])
        case ["api", "v1", "mood", "changes"]: return Route(name: .moodChanges, allowed: ["GET"])
        case ["api", "v1", "mood", "batch"]: return Route(name: .moodBatch, allowed: ["POST"])
        case ["api", "v1", "mood", "trends"]: return Route(name: .moodTrends, allowed: ["GET"])
        case ["api", "v1", "mood", "analytics", "labels"]: return Route(name: .moodLabelAnalytics, allowed: ["GET"])
        case ["api", "v1", "mood", "analytics", "associations"]:
            return Route(name: .moodAssociationAnalytics, allowed: ["GET"])
        case ["api", "v1", "wellness", "mood-entries"]:
            return Route(name: .wellnessCollection, allowed: ["GET", "POST"])
        case ["api", "v1", "wellness", "mood-entries", "analytics"]:
            return Route(name: .wellnessAnalytics, allowed: ["GET"])
        case ["api", "v1", "progress"]: return Route(name: .progress, allowed: ["GET", "POST"])
        default: break
        }
        if segments.count == 5, Array(segments[0..<4]) == ["api", "v1", "mood", "daily"] {
            return Route(name: .moodDaily(segments[4]), allowed: ["GET"])
        }
        if segments.count == 4, Array(segments[0..<3]) == ["api", "v1", "mood"] {
            return Route(name: .moodItem(segments[3]), allowed: ["GET", "PUT", "DELETE"])
        }
        if segments.count == 5, Array(segments[0..<4]) == ["api", "v1", "wellness", "mood-entries"] {
            return Route(name: .wellnessItem(segments[4]), allowed: ["GET", "PUT", "DELETE"])
        }
        return nil
    }
}

extension String {
    /// In a path, `+` is a plus sign (only query strings use it for spaces).
    fileprivate func replacingPlus() -> String { utf8.contains(UInt8(ascii: "+")) ? replacing("+", with: "%2B") : self }
}
