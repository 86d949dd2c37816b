#if canImport(BackgroundTasks) && canImport(UIKit) && !os(watchOS)
    import BackgroundTasks
    import Foundation
    import MoodLedger
    import UIKit

    /// A ledger's sync driven by iOS's background tasks (`Specs/sync.md`, *In the background*): a refresh task for
    /// the quick, frequent run and a processing task (network required) for a long one; a run under way when the app
    /// leaves the foreground is finished inside a `beginBackgroundTask` window. Every run is the engine's
    /// `try await engine.run()`: one per ledger at a time, and cancelled cleanly when iOS ends the time it gave
    /// (the requests in flight are answered and recorded, the rest stays due for the next run).
    ///
    /// The app lists both identifiers under `BGTaskSchedulerPermittedIdentifiers` in its Info.plist, turns on the
    /// *Background fetch* and *Background processing* modes, calls ``register()`` before it finishes launching and
    /// ``schedule()`` when it goes to the background. The ledger holds no file lock between writes, so a suspended
    /// app is never ended for holding one.
    @available(iOS 18.0, tvOS 18.0, visionOS 2.0, *)
    public final class BackgroundSync: Sendable {
        /// The refresh task's identifier (a short run: iOS gives it about 30 seconds).
        public let refreshIdentifier: String
        /// The processing task's identifier (a long run, network required, often at night on power).
        public let processingIdentifier: String
        /// The engine each task runs.
        public let engine: SyncEngine
        /// The earliest a scheduled refresh begins, in seconds from scheduling.
        public let refreshInterval: TimeInterval

        /// Creates the driver of `engine`'s background runs.
        public init(
            engine: SyncEngine, refreshIdentifier: String, processingIdentifier: String,
            refreshInterval: TimeInterval = 15 * 60
        ) {
            self.engine = engine
            self.refreshIdentifier = refreshIdentifier
            self.processingIdentifier = processingIdentifier
            self.refreshInterval = refreshInterval
        }

        /// Registers the two tasks' handlers. Call it once, before the app finishes launching (iOS's rule).
        public func register() {
            for identifier in [refreshIdentifier, processingIdentifier] {
                _ = BGTaskScheduler.shared.register(forTaskWithIdentifier: identifier, using: nil) { task in
                    self.handle(BackgroundTaskBox(task))
                }
            }
        }

        /// Asks iOS for the next refresh (not before ``refreshInterval``) and a processing task when the network is
        /// there. A request already pending is replaced.
        /// - Throws: `BGTaskScheduler`'s error (not permitted in the Info.plist, too many requests, unavailable in
        ///   the simulator).
        public func schedule() throws {
            let refresh = BGAppRefreshTaskRequest(identifier: refreshIdentifier)
            refresh.earliestBeginDate = Date(timeIntervalSinceNow: refreshInterval)
            try BGTaskScheduler.shared.submit(refresh)
            let processing = BGProcessingTaskRequest(identifier: processingIdentifier)
            processing.requiresNetworkConnectivity = true
            try BGTaskScheduler.shared.submit(processing)
        }

        /// Finishes a run when the app leaves the foreground: starts one (or joins the one under way) inside a
        /// `beginBackgroundTask` window, and cancels it cleanly when iOS says the window is ending.
        @MainActor
        public func finishInBackground() {
            let engine = self.engine
            let run = Task { try await engine.run() }
            let window = BackgroundWindow()
            window.identifier = UIApplication.shared.beginBackgroundTask(withName: "MoodLedger sync") {
                // Called on the main thread as the window ends: the run stops at its next request boundary.
                run.cancel()
                MainActor.assumeIsolated { window.end() }
            }
            Task { @MainActor in
                _ = await run.result
                window.end()
            }
        }

        /// One task iOS started: the next is scheduled, the run starts, the expiration cancels it, and the task is
        /// completed with whether the run left nothing pending.
        private func handle(_ box: BackgroundTaskBox) {
            try? schedule()
            let engine = self.engine
            let run = Task { try await engine.run() }
            box.task.expirationHandler = { run.cancel() }
            Task {
                let report = try? await run.value
                box.task.setTaskCompleted(success: report?.isComplete ?? false)
            }
        }
    }

    /// A background task handed to the run's tasks.
    // @unchecked Sendable: a `BGTask` is documented as usable from any thread; the box only passes it on.
    private final class BackgroundTaskBox: @unchecked Sendable {
        let task: BGTask
        init(_ task: BGTask) { self.task = task }
    }

    /// The `beginBackgroundTask` window of one run, ended once.
    @MainActor
    private final class BackgroundWindow {
        var identifier: UIBackgroundTaskIdentifier = .invalid

        func end() {
            guard identifier != .invalid else { return }
            UIApplication.shared.endBackgroundTask(identifier)
            identifier = .invalid
        }
    }
#endif
