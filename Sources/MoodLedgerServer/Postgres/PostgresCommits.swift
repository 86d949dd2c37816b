/// The node's write transactions, several users' writes in each (in ``Turns``): a user's group of writes waits while
/// a transaction is under way, and every group waiting when it ends goes into the next one — one `COMMIT` (one WAL flush) for many
/// users' writes, as a user's own writes already share one (`Specs/server.md`, *Writes, reads and several nodes*).
///
/// A transaction holds the groups in the order of their users' names, so two nodes' transactions take the rows' locks
/// in one order and never deadlock on each other. A group whose statement fails (its guard: its user's fold was not
/// the database's; a unique violation) is answered that error alone, and the others are run again, without it, in a
/// transaction of their own: nothing of theirs had been committed. Any other failure is every group's.
final class PostgresCommits: Sendable {
    typealias Statement = (String, [PostgresValue])

    /// One user's group of writes, and its outcome.
    ///
    /// `@unchecked Sendable`: `error` is written by the round that commits the group before the group's thread is
    /// woken, and read by that thread after.
    final class Group: @unchecked Sendable {
        let user: String
        let statements: [Statement]
        var error: Error?

        init(user: String, statements: [Statement]) {
            self.user = user
            self.statements = statements
        }
    }

    /// Most groups in one transaction.
    static let groupLimit = 64

    private let pool: PostgresPool
    private let turns = Turns<Group>()

    init(pool: PostgresPool) { self.pool = pool }

    /// Commits `statements`, one user's, in a transaction with whatever other users' groups wait at the time.
    /// - Throws: the error of a statement of these, or of the transaction (``PostgresError``).
    func commit(user: String, _ statements: [Statement]) throws {
        let group = Group(user: user, statements: statements)
        turns.submit(group, take: Self.transaction, run: run)
        if let error = group.error { throw error }
    }

    /// How many of the waiting groups, oldest first, one transaction holds: at most ``groupLimit`` groups and
    /// ``PostgresStore/pipelineLimit`` statements (a larger group goes alone).
    private static func transaction(_ waiting: [Group]) -> Int {
        var statements = 0
        for (index, group) in waiting.enumerated() {
            statements += group.statements.count
            if index == groupLimit || (index > 0 && statements > PostgresStore.pipelineLimit) { return index }
        }
        return waiting.count
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
