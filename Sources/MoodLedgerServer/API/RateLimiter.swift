import Synchronization

/// Per-user request budgets in fixed windows (the seed's defaults: 100 writes and 500 reads an hour), with the
/// `RateLimit-*` headers of the IETF draft and `Retry-After` on 429.
final class RateLimiter: Sendable {
    /// Which budget a request draws on.
    enum Class: Hashable, Sendable {
        case write
        case read
    }

    struct Decision {
        var allowed: Bool
        var limit: Int
        var remaining: Int
        /// Seconds until the window resets.
        var reset: Int

        var headers: [(name: String, value: String)] {
            var headers = [
                ("RateLimit-Limit", "\(limit)"), ("RateLimit-Remaining", "\(remaining)"),
                ("RateLimit-Reset", "\(reset)")
            ]
            if !allowed { headers.append(("Retry-After", "\(max(1, reset))")) }
            return headers
        }
    }

    private let limits: [Class: Int]
    private let windowMilliseconds: Int64
    private struct Window { var start: Int64; var used: Int }
    private let windows = PlainLock([String: Window]())

    /// - Parameters:
    ///   - writesPerWindow: POST, PUT and DELETE; 0 turns the limit off.
    ///   - readsPerWindow: GET and HEAD; 0 turns the limit off.
    ///   - windowMilliseconds: default one hour.
    init(writesPerWindow: Int, readsPerWindow: Int, windowMilliseconds: Int64 = 3_600_000) {
        limits = [.write: writesPerWindow, .read: readsPerWindow]
        self.windowMilliseconds = windowMilliseconds
    }

    /// Draws one request from `user`'s budget at time `now` (ms), or says it is spent.
    func take(user: String, _ kind: Class, now: Int64) -> Decision? {
        guard let limit = limits[kind], limit > 0 else { return nil }
        let key = "\(user)/\(kind)"
        return windows.withLock { windows in
            var window = windows[key] ?? Window(start: now, used: 0)
            if now - window.start >= windowMilliseconds { window = Window(start: now, used: 0) }
            let reset = Int((window.start + windowMilliseconds - now + 999) / 1000)
            guard window.used < limit else {
                windows[key] = window
                return Decision(allowed: false, limit: limit, remaining: 0, reset: reset)
            }
            window.used += 1
            windows[key] = window
            return Decision(allowed: true, limit: limit, remaining: limit - window.used, reset: reset)
        }
    }
}
