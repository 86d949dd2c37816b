import EventLog
import Foundation
import Platform
import Synchronization

/// The users' open ledgers, at most `capacity` at once (`Specs/server.md`, *Many accounts*): a request leases its
/// user's ledger for as long as it needs it; a ledger that is not open is opened on a worker (never on an event loop),
/// one open per user at a time and no lock held across it; at capacity the least recently used ledger that no request
/// holds and that has nothing waiting is closed first. When every open ledger is in use, a request waits for one to
/// be given back rather than fail.
final class LedgerPool: Sendable {
    /// A request's hold on a ledger: given back when the last closure that captured it is released.
    final class Lease: Sendable {
        let user: UserLedger
        /// nil: a ledger opened for this request alone (read-only), closed when the lease ends.
        private let pool: LedgerPool?
        /// Whether the call that made this lease opened the ledger (after the request arrived: what it read is as
        /// fresh as the request needs).
        let opened: Bool
        fileprivate init(_ user: UserLedger, pool: LedgerPool?, opened: Bool = false) {
            self.user = user
            self.pool = pool
            self.opened = opened
        }

        /// A lease of a ledger outside the pool, opened for one request: closed when the lease ends.
        static func detached(_ user: UserLedger) -> Lease { Lease(user, pool: nil) }

        deinit {
            if let pool { pool.giveBack(user.name) } else { user.ledger.close() }
        }
    }

    private struct Slot {
        var user: UserLedger
        var leases: Int
    }

    private struct State {
        var slots: [String: Slot] = [:]
        /// The open ledgers no request holds, least recently given back first: a ledger to close to make room is found
        /// at the front, not by scanning every slot under the lock.
        var idle = RecencyList<String>()
        /// Users whose ledger is being opened (by one worker; others for the same user wait).
        var opening: Set<String> = []
        /// Users whose ledger is being closed to make room: a request for them waits until it is (it holds the lock).
        var closing: Set<String> = []

        /// Leases an open ledger.
        mutating func lease(_ name: String) -> UserLedger? {
            guard var slot = slots[name] else { return nil }
            if slot.leases == 0 { idle.remove(name) }
            slot.leases += 1
            slots[name] = slot
            return slot.user
        }

        /// Takes the least recently used idle ledger with nothing waiting out of the pool, marking it closing.
        mutating func takeVictim() -> UserLedger? {
            guard let name = idle.first(where: { slots[$0]?.user.isQuiet == true }), let slot = slots[name] else {
                return nil
            }
            idle.remove(name)
            slots[name] = nil
            closing.insert(name)
            return slot.user
        }

        /// Takes a ledger out of the pool.
        mutating func take(_ name: String) -> UserLedger? {
            idle.remove(name)
            return slots.removeValue(forKey: name)?.user
        }
    }

    /// Most ledgers open at once.
    let capacity: Int
    /// How long a request waits for a ledger to be given back before it is answered 503.
    let patienceSeconds: Double
    private let state = PlainLock(State())
    private let open: @Sendable (String) throws -> UserLedger
    private let log: @Sendable (String) -> Void

    /// A pool that opens ledgers with `open`.
    init(
        capacity: Int, patienceSeconds: Double = 30, log: @escaping @Sendable (String) -> Void,
        open: @escaping @Sendable (String) throws -> UserLedger
    ) {
        self.capacity = max(1, capacity)
        self.patienceSeconds = patienceSeconds
        self.log = log
        self.open = open
    }

    /// The default capacity: 1,024 ledgers (two descriptors each), fewer when the descriptor limit leaves less room
    /// beside `connections` connections and a reserve of 64.
    static func defaultCapacity(connections: Int) -> Int {
        let limit = SystemIO.openFileLimit()
        return max(8, min(1024, (limit - connections - 64) / 2))
    }

    /// The user's ledger if it is open, leased; `nil` when it must be opened first (on a worker).
    func leaseIfOpen(_ name: String) -> Lease? {
        state.withLock { $0.lease(name) }.map { Lease($0, pool: self) }
    }

    /// The user's ledger, leased: opened if need be, after closing the least recently used idle one at capacity.
    /// Blocks (a worker only).
    /// - Throws: the open's error; ``APIFailure`` 503 when no ledger was given back within ``patienceSeconds``.
    func lease(_ name: String) throws -> Lease {
        let deadline = Date().addingTimeInterval(patienceSeconds)
        while true {
            enum Step {
                case leased(UserLedger)
                case wait
                case open(evict: UserLedger?)
            }
            let step = state.withLock { state -> Step in
                if let user = state.lease(name) { return .leased(user) }
                if state.opening.contains(name) || state.closing.contains(name) { return .wait }
                var victim: UserLedger?
                if state.slots.count + state.opening.count + state.closing.count >= capacity {
                    guard let oldest = state.takeVictim() else { return .wait }
                    victim = oldest
                }
                state.opening.insert(name)
                return .open(evict: victim)
            }
            switch step {
            case .leased(let user):
                return Lease(user, pool: self)
            case .wait:
                guard Date() < deadline else {
                    throw APIFailure(
                        503, "busy", "every open ledger is in use; try again shortly", headers: [("Retry-After", "1")])
                }
                Thread.sleep(forTimeInterval: 0.001)
            case .open(let victim):
                if let victim { close(victim) }
                do {
                    let user = try open(name)
                    state.withLock { state in
                        state.opening.remove(name)
                        state.slots[name] = Slot(user: user, leases: 1)
                    }
                    return Lease(user, pool: self, opened: true)
                } catch let error as EventLogError
                    where error.errno == .tooManyOpenFiles || error.errno == .tooManyOpenFilesInSystem
                {
                    // Out of descriptors (connections took them): close another idle ledger, or wait for one.
                    state.withLock { _ = $0.opening.remove(name) }
                    guard Date() < deadline else {
                        throw APIFailure(
                            503, "busy", "out of file descriptors; try again shortly", headers: [("Retry-After", "1")])
                    }
                    if !evictOne() { Thread.sleep(forTimeInterval: 0.001) }
                } catch {
                    state.withLock { _ = $0.opening.remove(name) }
                    throw error
                }
            }
        }
    }

    /// Closes the least recently used idle ledger; `false` when none is idle.
    private func evictOne() -> Bool {
        let victim = state.withLock { $0.takeVictim() }
        if let victim { close(victim) }
        return victim != nil
    }

    /// Syncs and closes a ledger taken out to make room, then lets requests for its user open it again.
    private func close(_ user: UserLedger) {
        do { _ = try user.ledger.flush() } catch { log("\(user.name): a sync before closing failed: \(error)") }
        user.ledger.close()
        state.withLock { _ = $0.closing.remove(user.name) }
    }

    fileprivate func giveBack(_ name: String) {
        state.withLock { state in
            guard var slot = state.slots[name] else { return }
            slot.leases = max(0, slot.leases - 1)
            state.slots[name] = slot
            if slot.leases == 0 { state.idle.append(name) }
        }
    }

    /// Takes a ledger out of the pool (the caller closes it); `nil` when it is not open.
    func remove(_ name: String) -> UserLedger? { state.withLock { $0.take(name) } }

    /// Takes out every ledger whose user `keep` rejects (the caller closes them).
    func remove(where reject: (String) -> Bool) -> [UserLedger] {
        state.withLock { state in
            let names = state.slots.keys.filter(reject)
            return names.compactMap { state.take($0) }
        }
    }

    /// How many ledgers are open.
    var count: Int { state.withLock { $0.slots.count } }
}
