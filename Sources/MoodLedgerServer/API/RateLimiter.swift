import Synchronization

/// Per-user budgets: writes counted in **entries** from a token bucket (a burst that lets a first sync of a whole
/// history through, refilled at a sustained rate that still stops abuse), reads in fixed hourly windows; with the
/// `RateLimit-*` headers of the IETF draft and `Retry-After` on 429 (`Specs/server.md`, *Rate limits*).
final class RateLimiter: Sendable {
    /// Which budget a request draws on.
    enum Class: Hashable, Sendable {
        case write
        case read
        /// An erasure (`?erase=true`): each rewrites the user's log, so they have a budget of their own.
        case erase
    }

    struct Decision {
        var allowed: Bool
        var limit: Int
        var remaining: Int
        /// Seconds until the budget is whole again (writes) or the window resets (reads).
        var reset: Int
        /// Seconds until this request's cost is available (a refused request only).
        var retryAfter: Int = 0

        var headers: [(name: String, value: String)] {
            var headers = [
                ("RateLimit-Limit", "\(limit)"), ("RateLimit-Remaining", "\(remaining)"),
                ("RateLimit-Reset", "\(reset)")
            ]
            if !allowed { headers.append(("Retry-After", "\(max(1, retryAfter))")) }
            return headers
        }
    }

    private let writesPerHour: Int
    private let writeBurst: Int
    private let readsPerWindow: Int
    private let erasuresPerWindow: Int
    private let windowMilliseconds: Int64
    private struct Window { var start: Int64; var used: Int }
    /// A write bucket: tokens (in millionths of an entry, so refills are exact) as of `at`.
    private struct Bucket { var micro: Int64; var at: Int64 }
    private let windows = PlainLock([String: Window]())
    private let erasureWindows = PlainLock([String: Window]())
    private let buckets = PlainLock([String: Bucket]())

    /// - Parameters:
    ///   - writesPerHour: the sustained rate, entries an hour a write bucket refills at; 0 turns the limit off.
    ///   - writeBurst: the bucket's size: entries one user may write at once (a first sync).
    ///   - readsPerWindow: GET and HEAD requests per window; 0 turns the limit off.
    ///   - erasuresPerWindow: `?erase=true` requests per window; 0 turns the limit off.
    ///   - windowMilliseconds: the read and erasure window, default one hour.
    init(
        writesPerHour: Int, writeBurst: Int, readsPerWindow: Int, erasuresPerWindow: Int = 0,
        windowMilliseconds: Int64 = 3_600_000
    ) {
        self.erasuresPerWindow = erasuresPerWindow
        self.writesPerHour = writesPerHour
        self.writeBurst = max(1, writeBurst)
        self.readsPerWindow = readsPerWindow
        self.windowMilliseconds = windowMilliseconds
    }

    /// Draws `cost` from `user`'s budget at time `now` (ms): entries for writes (a batch costs its items), one for a
    /// read; or says it is spent (nothing drawn).
    func take(user: String, _ kind: Class, cost: Int = 1, now: Int64) -> Decision? {
        switch kind {
        case .write: takeWrite(user: user, cost: max(1, cost), now: now)
        case .read: takeWindow(user: user, limit: readsPerWindow, windows: windows, now: now)
        case .erase: takeWindow(user: user, limit: erasuresPerWindow, windows: erasureWindows, now: now)
        }
    }

    private func takeWrite(user: String, cost: Int, now: Int64) -> Decision? {
        guard writesPerHour > 0 else { return nil }
        let full = Int64(writeBurst) * 1_000_000
        // Millionths of an entry a millisecond: writesPerHour × 1,000,000 millionths in 3,600,000 ms.
        let perMillisecond = Double(writesPerHour) / 3.6
        return buckets.withLock { buckets in
            var bucket = buckets[user] ?? Bucket(micro: full, at: now)
            let elapsed = max(0, now - bucket.at)
            bucket.micro = min(full, bucket.micro + Int64(Double(elapsed) * perMillisecond))
            bucket.at = now
            let need = Int64(cost) * 1_000_000
            // Whole seconds, rounded up, until the bucket has gained `micro` millionths of an entry.
            func seconds(toGain micro: Int64) -> Int {
                Int((Double(max(0, micro)) / perMillisecond / 1000).rounded(.up))
            }
            guard bucket.micro >= need else {
                buckets[user] = bucket
                return Decision(
                    allowed: false, limit: writeBurst, remaining: Int(bucket.micro / 1_000_000),
                    reset: seconds(toGain: full - bucket.micro), retryAfter: seconds(toGain: need - bucket.micro))
            }
            bucket.micro -= need
            buckets[user] = bucket
            return Decision(
                allowed: true, limit: writeBurst, remaining: Int(bucket.micro / 1_000_000),
                reset: seconds(toGain: full - bucket.micro))
        }
    }

    private func takeWindow(
        user: String, limit: Int, windows: PlainLock<[String: Window]>, now: Int64
    ) -> Decision? {
        guard limit > 0 else { return nil }
        let key = user
        return windows.withLock { windows in
            var window = windows[key] ?? Window(start: now, used: 0)
            if now - window.start >= windowMilliseconds { window = Window(start: now, used: 0) }
            let reset = Int((window.start + windowMilliseconds - now + 999) / 1000)
            guard window.used < limit else {
                windows[key] = window
                return Decision(allowed: false, limit: limit, remaining: 0, reset: reset, retryAfter: reset)
            }
            window.used += 1
            windows[key] = window
            return Decision(allowed: true, limit: limit, remaining: limit - window.used, reset: reset)
        }
    }
}
