import MoodLedger

/// A route of the server (`Specs/server.md`, `Specs/openapi.yaml`): which one a path names, and the methods the
/// table gives it a handler for.
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
    /// The route's line of ``MoodServer/routes``.
    fileprivate var entry: MoodServer.RouteEntry
    /// The path's parameter (the `*` segment: an entry id, a date), or "".
    private(set) var parameter: String

    /// The methods this route answers (405 and `Allow` are derived from them).
    var allowed: [String] { entry.handlers.map(\.method) }

    /// The handler of `method` here, if the route has one.
    func handler(for method: String) -> MoodServer.RouteHandler? {
        entry.handlers.first { $0.method == method }?.handle
    }

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
        let parameter = EntryID(self.parameter)?.description ?? self.parameter
        return "/" + entry.path.map { $0 == "*" ? parameter : $0 }.joined(separator: "/")
    }

    /// The route of a path (percent-decoded segment by segment), or `nil`.
    static func match(_ path: String) -> Route? {
        var raw = path
        if raw.count > 1, raw.hasSuffix("/") { raw.removeLast() }
        let segments = raw.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { segment in
            segment.utf8.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") })
                ? HTTPRequest.percentDecode(String(segment).replacingPlus()) ?? "\u{FFFD}" : String(segment)
        }
        // Fixed paths before parameterised ones: `/api/v1/mood/changes` is not an entry id.
        for entry in MoodServer.routes where entry.path == segments {
            return Route(name: entry.name(""), entry: entry, parameter: "")
        }
        for entry in MoodServer.routes where entry.path.count == segments.count {
            guard let star = entry.path.firstIndex(of: "*"),
                zip(entry.path, segments).allSatisfy({ $0 == "*" || $0 == $1 })
            else { continue }
            return Route(name: entry.name(segments[star]), entry: entry, parameter: segments[star])
        }
        return nil
    }
}

extension String {
    /// In a path, `+` is a plus sign (only query strings use it for spaces).
    fileprivate func replacingPlus() -> String { utf8.contains(UInt8(ascii: "+")) ? replacing("+", with: "%2B") : self }
}
