import Dispatch

/// The node's write transactions, several users' writes in each: a user's group of writes waits while a transaction
/// is under way, and every group waiting when it ends goes into the next one — one `COMMIT` (one WAL flush) for many
/// users' writes, as a user's own writes already share one (`Specs/server.md`, *Writes, reads and several nodes*).
///
/// A transaction holds the groups in the order of their users' names, so two nodes' transactions take the rows' locks
/// in one order and never deadlock on each other. A group whose statement fails (its guard: its user's fold was not
/// the database's; a unique violation) is answered that error alone, and the others are run again, without it, in a
/// transaction of their own: nothing of theirs had been committed. Any other failure is every group's.
final class PostgresCommits: Sendable {
    typealias Statement = (String, [PostgresValue])

    /// One user's group of writes, waiting to be committed, or for its turn to lead a transaction.
    ///
    /// `@unchecked Sendable`: `error` and `leads` are written by a leader before `done` is signalled, and read by the
    /// group's thread after.
    final class Group: @unchecked Sendable {
        let user: String
        let statements: [Statement]
        var error: Error?
        var leads = false
        let done = DispatchSemaphore(value: 0)

        init(user: String, statements: [Statement]) {
            self.user = user
            self.statements = statements
        }
    }

    /// Most groups in one transaction.
    static let groupLimit = 64

    private let pool: PostgresPool
    private let queue = PlainLock<(waiting: [Group], leading: Bool)>(([], false))

    init(pool: PostgresPool) { self.pool = pool }

    /// Commits `statements`, one user's, in a transaction with whatever other users' groups wait at the time.
    /// - Throws: the error of a statement of these, or of the transaction (``PostgresError``).
    func commit(user: String, _ statements: [Statement]) throws {
        let me = Group(user: user, statements: statements)
        var leads = queue.withLock { queue -> Bool in
            queue.waiting.append(me)
            if queue.leading { return false }
            queue.leading = true
            return true
        }
        if !leads {
            me.done.wait()
            leads = me.leads
        }
        if leads {
            lead()
            me.done.wait()
        }
        if let error = me.error { throw error }
    }

    /// Runs one transaction of the waiting groups, the leader's own first among them to be taken; the next is led by
    /// the first group that waits for it, so no group waits on transactions after its own.
    private func lead() {
        let batch = queue.withLock { queue -> [Group] in
            var taken = [queue.waiting.removeFirst()]
            var statements = taken[0].statements.count
            while let next = queue.waiting.first, taken.count < Self.groupLimit,
                statements + next.statements.count <= PostgresStore.pipelineLimit
            {
                taken.append(queue.waiting.removeFirst())
                statements += next.statements.count
            }
            return taken
        }
        run(batch)
        let next = queue.withLock { queue -> Group? in
            guard let next = queue.waiting.first else {
                queue.leading = false
                return nil
            }
            next.leads = true
            return next
        }
        for group in batch { group.done.signal() }
        next?.done.signal()
    }

    /// Commits groups in one transaction; each ends with its error set, or nil once committed.
    func run(_ batch: [Group]) {
        var pending = batch.sorted { $0.user < $1.user }
        while !pending.isEmpty {
            do {
                _ = try pool.withConnection { try $0.pipeline(pending.flatMap(\.statements)) }
                return
            } catch let error as PostgresError {
                guard error.kind == .server, let failed = error.failedStatement,
                    let culprit = Self.group(at: failed, in: pending)
                else {
                    for group in pending { group.error = error }
                    return
                }
                pending[culprit].error = error
                pending.remove(at: culprit)
            } catch {
                for group in pending { group.error = error }
                return
            }
        }
    }

    /// The position of the group whose statements hold the `index`th of the transaction's.
    private static func group(at index: Int, in groups: [Group]) -> Int? {
        var end = 0
        for (position, group) in groups.enumerated() {
            end += group.statements.count
            if index < end { return position }
        }
        return nil
    }
}
