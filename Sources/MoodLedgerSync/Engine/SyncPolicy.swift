import MoodLedger

/// What an answer means for an outbox item (`Specs/sync.md`, *Classification*).
public enum SyncVerdict: Sendable, Equatable {
    /// Delivered: the remote id and the server's revision of the change (0 if it gave none).
    case delivered(remoteID: String, revision: UInt64)
    /// Try again later: status (nil for a network error), error text, the server's `Retry-After` in ms.
    case retry(status: Int?, error: String, retryAfter: Int64?)
    /// Never going to work as sent: parked until the entry changes.
    case park(status: Int?, error: String)
    /// The credentials were refused.
    case unauthorized(error: String)
    /// A conditional send found the entry changed there (412): the destination's current version (`nil`: deleted
    /// there), its revision and id, to merge with (`Specs/sync.md`, *Merging*).
    case stale(theirs: MoodEntry?, revision: UInt64, remoteID: String)
    /// An update the destination answered 404 for (deleted there, by another device) was created again: the edit
    /// here brings the entry back; recorded as a merge with the deletion before the success.
    case recreated(remoteID: String, revision: UInt64)
}

/// The rules of a send: how an answer is classified and how long to wait before the next attempt.
public enum SyncPolicy {
    /// The backoff base: 1 s.
    public static let baseMilliseconds: Int64 = 1_000
    /// The backoff cap: 15 min.
    public static let capMilliseconds: Int64 = 15 * 60_000
    /// After this many failed attempts in a row an item is parked, if they also span ``parkAfterMilliseconds``. A run
    /// counts a failed item once (it is not sent again in that run), so parking takes at least this many runs.
    public static let maximumAttempts = 10
    /// The shortest time from the first failure of a streak to parking: 24 hours. An outage of minutes or hours
    /// never parks anything, however often `sync --now` runs.
    public static let parkAfterMilliseconds: Int64 = 24 * 3_600_000

    /// The longest wait the policy ever draws: a `Retry-After` is honoured up to a day (the backoff cap is less).
    public static let longestWaitMilliseconds: Int64 = 86_400_000

    /// When an item whose recorded retry time is `next` is due, as seen at `now`: `next`, unless it lies further
    /// ahead than the policy ever waits — recorded while the device's clock was ahead (a year, say) — which is due
    /// now: no wrong clock holds an item back for longer than the longest wait.
    public static func retryTime(_ next: Int64?, now: Int64) -> Int64? {
        guard let next else { return nil }
        return next > now &+ longestWaitMilliseconds ? now : next
    }

    /// The upper bound of the full-jitter delay after the `attempts`-th failure: `min(cap, base · 2^attempts)`.
    public static func backoffCeiling(attempts: Int) -> Int64 {
        let exponent = min(max(attempts, 0), 30)
        return min(capMilliseconds, baseMilliseconds << Int64(exponent))
    }

    /// The retry time after a failure: `now + U(0, ceiling)`, but never before the server's `Retry-After`.
    /// - Parameters:
    ///   - attempts: attempts so far, this one included.
    ///   - retryAfter: the server's `Retry-After` in ms, if any.
    ///   - random: the generator (seeded in tests).
    public static func nextAttempt<G: RandomNumberGenerator>(
        now: Int64, attempts: Int, retryAfter: Int64?,
        using random: inout G
    ) -> Int64 {
        let jitter = Int64.random(in: 0...backoffCeiling(attempts: attempts), using: &random)
        return now + max(jitter, retryAfter ?? 0)
    }

    /// Classifies an answer to an operation.
    public static func classify(
        _ operation: SyncOperation, status: Int, headers: [(name: String, value: String)],
        body: [UInt8], entryID: EntryID, now: Int64
    ) -> SyncVerdict {
        // The server's message matters only when something went wrong: a success's body is read once, for its id.
        var message: String? { serverMessage(body) }
        switch status {
        case 200..<300:
            let json = try? JSONParser.parse(String(decoding: body, as: UTF8.self))
            let given = json?["data"]?["id"]
            if let given, given != .null {
                // What a server says is data: an id is a short string of printable characters, or the answer is
                // refused for this item alone (the rest of the batch is recorded as usual).
                guard let remoteID = given.stringValue, isUsableRemoteID(remoteID) else {
                    return .park(
                        status: status,
                        error:
                            "HTTP \(status): the server's id for this entry is not usable (not a string of 1 to \(SyncLimits.remoteIDBytes) bytes without control characters)"
                    )
                }
                return .delivered(remoteID: remoteID, revision: revision(headers))
            }
            return .delivered(remoteID: entryID.description, revision: revision(headers))
        case 401:
            return .unauthorized(error: "HTTP 401: \(message ?? "unauthorized")")
        case 404 where operation == .delete:
            return .delivered(remoteID: entryID.description, revision: 0)  // already gone: done
        case 300..<400:
            // A redirect on a write is not followed (the body and the credentials would go elsewhere) and says
            // nothing about the item: a server being moved or a proxy's login page. Retried, with where it pointed.
            let location = headers.first { $0.name.lowercased() == "location" }.map {
                " (to \(ConsoleText.escaped(String($0.value.prefix(200)))), not followed)"
            }
            return .retry(
                status: status, error: "HTTP \(status)\(location ?? ""): a redirect, not followed",
                retryAfter: retryAfter(headers, now: now))
        case 408, 409, 412, 425, 429, 500..<600:
            let text = message
            return .retry(
                status: status, error: "HTTP \(status)" + (text.map { ": \($0)" } ?? ""),
                retryAfter: retryAfter(headers, now: now))
        default:
            let text = message
            return .park(status: status, error: "HTTP \(status)" + (text.map { ": \($0)" } ?? ""))
        }
    }

    /// The field on which a write's answer describes another record than the one sent, if any: an answer carries
    /// `data` with the record's fields, and where it has `logged_at` (compared to the second), `notes` (trimmed),
    /// `valence` (within 10⁻⁶) or `quantity` that the request also sent, they must agree. A stray answer — another
    /// request's, read for this one — is caught here before anything is recorded (`Specs/sync.md`, *What the client
    /// refuses*). Fields the answer leaves out, or a server's own normalisations (a label's spelling), are not read.
    static func contradiction(sent: [UInt8]?, answer: [UInt8]) -> String? {
        guard let sent, let request = try? JSONParser.parse(String(decoding: sent, as: UTF8.self)),
            let json = try? JSONParser.parse(String(decoding: answer, as: UTF8.self)), let data = json["data"],
            case .object = data
        else { return nil }
        if let mine = request["logged_at"]?.stringValue.flatMap(ISO8601.parse),
            let theirs = data["logged_at"]?.stringValue.flatMap(ISO8601.parse),
            mine.milliseconds / 1000 != theirs.milliseconds / 1000
        {
            return "logged_at"
        }
        if let mine = request["notes"], let theirs = data["notes"], mine != .null || theirs != .null {
            let trim = { (value: JSONValue) -> Substring in
                let text = Substring(value.stringValue ?? "")
                return text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed().reduce(into: "") {
                    $0.append($1)
                }
            }
            if trim(mine) != trim(theirs) { return "notes" }
        }
        for field in ["valence", "quantity"] {
            if let mine = request[field]?.doubleValue, let theirs = data[field]?.doubleValue, abs(mine - theirs) > 1e-6
            {
                return field
            }
        }
        return nil
    }

    /// Whether the record an answer describes (`data`) holds the same source and source id as the request sent: the
    /// server's own record of that source record (a HealthKit sample another client posted first).
    static func sameSourceKey(sent: [UInt8]?, answer: [UInt8]) -> Bool {
        guard let sent, let request = try? JSONParser.parse(String(decoding: sent, as: UTF8.self)),
            let json = try? JSONParser.parse(String(decoding: answer, as: UTF8.self)), let data = json["data"],
            let sourceID = request["source_id"]?.stringValue, !sourceID.isEmpty,
            data["source_id"]?.stringValue == sourceID
        else { return false }
        return request["source"]?.stringValue == data["source"]?.stringValue
    }

    /// Whether an answer's body names a record: `data.id` present and not null.
    static func namesRecord(_ body: [UInt8]) -> Bool {
        guard let json = try? JSONParser.parse(String(decoding: body, as: UTF8.self)), let id = json["data"]?["id"]
        else { return false }
        return id != .null
    }

    /// The server's revision from an `ETag` (`"17"` or `W/"17"`), else 0.
    static func revision(_ headers: [(name: String, value: String)]) -> UInt64 {
        guard var tag = headers.first(where: { $0.name.lowercased() == "etag" })?.value else { return 0 }
        if tag.hasPrefix("W/") { tag.removeFirst(2) }
        let digits = tag.filter { $0 != "\"" }
        guard let value = UInt64(digits), value <= UInt64(Int64.max) else { return 0 }
        return value
    }

    /// `error.message` of the seed's envelope, after `error.field` when the server names one and the message does not
    /// start with it (`valence: must be within -1...1`), or a plain-text body's first line; at most 200 characters.
    static func serverMessage(_ body: [UInt8]) -> String? {
        let text = String(decoding: body.prefix(4096), as: UTF8.self)
        var message: String?
        if let json = try? JSONParser.parse(text) {
            message =
                json["error"]?["message"]?.stringValue ?? json["error"]?.stringValue ?? json["message"]?.stringValue
            if let field = json["error"]?["field"]?.stringValue, !field.isEmpty, let text = message,
                !text.hasPrefix(field + ":")
            {
                message = field + ": " + text
            }
        } else if !text.isEmpty {
            message = text.split(separator: "\n").first.map(String.init)
        }
        guard let message else { return nil }
        var result = ConsoleText.escaped(String(message.filter { !$0.isNewline }))
        guard !result.isEmpty else { return nil }
        if result.count > SyncLimits.serverMessageCharacters {
            result = String(result.prefix(SyncLimits.serverMessageCharacters)) + "…"
        }
        return result
    }

    /// Whether a remote id may be kept: 1 to ``SyncLimits/remoteIDBytes`` UTF-8 bytes, no control character.
    static func isUsableRemoteID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= SyncLimits.remoteIDBytes
            && !id.unicodeScalars.contains { ConsoleText.isControl($0) }
    }

    /// `Retry-After` in ms from now: delta-seconds or an IMF-fixdate (RFC 9110 §10.2.3).
    public static func retryAfter(_ headers: [(name: String, value: String)], now: Int64) -> Int64? {
        guard let value = headers.first(where: { $0.name.lowercased() == "retry-after" })?.value else { return nil }
        if let seconds = Int64(value), seconds >= 0 { return min(seconds, 86_400) * 1000 }
        // "Sun, 06 Nov 1994 08:49:37 GMT"
        let parts = value.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]),
            let month = months.firstIndex(of: String(parts[2])), let year = Int(parts[3]),
            let date = LocalDate(year: year, month: month + 1, day: day)
        else { return nil }
        let clock = parts[4].split(separator: ":").compactMap { Int64($0) }
        guard clock.count == 3, (0..<24).contains(clock[0]), (0..<60).contains(clock[1]), (0..<61).contains(clock[2])
        else { return nil }
        let at = (Int64(date.daysSinceEpoch) * 86_400 + clock[0] * 3600 + clock[1] * 60 + clock[2]) * 1000
        return min(max(0, at - now), 86_400_000)
    }
}
