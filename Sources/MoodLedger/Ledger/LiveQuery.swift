import Observation

/// A value of a ledger kept current on the main actor, for SwiftUI (`Observable`): `value` is the value now, and is replaced after
/// every commit that changes it (``Ledger/observe(_:)-(EntryQuery)``); a view that reads it is redrawn then.
///
/// ```swift
/// struct MoodList: View {
///     @State private var page: LiveQuery<EntryPage>
///     init(ledger: Ledger) { _page = State(initialValue: LiveQuery(ledger, EntryQuery(limit: 30))) }
///     var body: some View {
///         List(page.value.entries, id: \.id) { entry in Text(entry.notes ?? "") }
///     }
/// }
/// ```
///
/// The observation ends when the object is released (or ``stop()`` is called): nothing is left running.
///
/// `Observable` by hand (an `ObservationRegistrar`, what the `@Observable` macro writes): the same on every SDK the
/// package builds with.
@MainActor
public final class LiveQuery<Value: Equatable & Sendable>: Observable {
    private let registrar = ObservationRegistrar()
    private var storedValue: Value
    private var storedError: (any Error)?
    private let task: TaskHolder

    /// The value as of the last commit delivered.
    public private(set) var value: Value {
        get {
            registrar.access(self, keyPath: \.value)
            return storedValue
        }
        set { registrar.withMutation(of: self, keyPath: \.value) { storedValue = newValue } }
    }

    /// What ended the observation, if it ended with an error (the query's, or a refresh's).
    public private(set) var error: (any Error)? {
        get {
            registrar.access(self, keyPath: \.error)
            return storedError
        }
        set { registrar.withMutation(of: self, keyPath: \.error) { storedError = newValue } }
    }

    /// Keeps `derive`'s value of `ledger` current.
    /// - Parameters:
    ///   - ledger: the ledger.
    ///   - initial: the value to show until the first one is read (it is read at once, off the main actor).
    ///   - derive: the value, from a state it must not keep.
    public init(
        _ ledger: Ledger, initial: Value, _ derive: @escaping @Sendable (LedgerState) throws -> Value
    ) {
        storedValue = initial
        let (stream, end) = ledger.observation(derive)
        task = TaskHolder(end: end)
        task.task = Task { [weak self] in
            do {
                for try await next in stream {
                    guard let self else { return }
                    if self.storedValue != next { self.value = next }
                }
            } catch {
                self?.error = error
            }
        }
    }

    /// Stops following the ledger; `value` stays as it is.
    public func stop() {
        task.end()
        task.task?.cancel()
    }
}

extension LiveQuery where Value == EntryPage {
    /// Keeps the page `query` answers current: empty until it is first read (at once).
    public convenience init(_ ledger: Ledger, _ query: EntryQuery) {
        self.init(
            ledger, initial: EntryPage(entries: [], total: 0, limit: query.limit, offset: query.offset),
            { try $0.list(query) })
    }
}

/// Ends the observation and cancels its task when released: a ``LiveQuery`` released (off the main actor too) leaves
/// nothing running, at once, whatever its task is doing then.
// @unchecked Sendable: `task` is set once, in the owner's initialiser, before any other thread sees the holder.
private final class TaskHolder: @unchecked Sendable {
    let end: @Sendable () -> Void
    var task: Task<Void, Never>?
    init(end: @escaping @Sendable () -> Void) { self.end = end }
    deinit {
        end()
        task?.cancel()
    }
}
