import MoodInterchange
import MoodLedger

extension SyncEngine {
    /// Pulls the remote's changes since the cursor, page by page. Each page's `remote.applied` events and the
    /// `sync.pulled` that moves the cursor past them are appended as one batch: the cursor never runs ahead of
    /// the changes. A server revision below the cursor means the server went back (a restore): what it lacks is
    /// re-queued and the cursor follows it down.
    ///
    /// Long because a page's steps — fetch, a server that went back, apply, one batch with the cursor — share the
    /// run's cursor, page count and went-back state, and each can end the run; they read in the order they happen.
    func pull(into report: inout SyncReport, book: inout RunBook) async throws {
        var pages = 0
        var wentBack = false
        while true {
            if cancelRequested.load(ordering: .relaxed) { return }  // no further page for a cancelled run
            if pages == SyncLimits.pullPagesPerRun {
                report.pullError =
                    "pull: stopped after \(pages) pages in this run (the feed says it has more): the next run goes on"
                return
            }
            pages += 1
            let cursor = ledger.read { $0.outbox.progress(.backend).cursor }
            guard let path = dialect.changesPath(since: cursor, limit: configuration.pullPageSize) else {
                guard dialect.dialect != .progress else {
                    report.pullSkipped =
                        "the progress dialect lists scores, not mood entries: this device only pushes there"
                    return
                }
                return try await pullList(into: &report)
            }
            let page: SyncPlanner.ChangesPage
            switch await fetch(path) {
            case .failure(let message):
                report.pullError = message
                return
            case .unauthorized(let message):
                throw SyncError(
                    .unauthorized,
                    "the server refused the credentials (\(message))")
            case .page(let fetched):
                page = fetched
            }
            if let refusal = SyncPlanner.refusal(of: page, cursor: cursor) {
                report.pullError = "pull: " + refusal + ": the page is refused, nothing of it applied"
                return
            }
            // The account the page came from: recorded the first time; another one (erased and created again) is a
            // server that went back to nothing: what the old account acknowledged is re-queued, the feed read again
            // from 0.
            var accountChange: (reason: String, requeued: Int)?
            if heardAccounts.withLock({ $0.latest != nil }) {
                _ = try ledger.execute { state, _ in
                    let account = self.planner.accountEvents(self.takeHeardAccounts(), in: state)
                    accountChange = account.changed.map { ($0, account.events.count - 1) }
                    return (account.events, .none, false)
                }
            }
            if let (reason, requeued) = accountChange {
                if wentBack {
                    report.pullError = "pull: the server's account changed again in this run: stopped"
                    return
                }
                wentBack = true
                report.serverWentBack = true
                report.wentBack = report.wentBack ?? reason
                report.requeued += requeued
                continue
            }
            if page.revision < cursor {
                if wentBack {
                    report.pullError =
                        "pull: the changes feed's revision went back again in this run (\(cursor) to \(page.revision)): stopped"
                    return
                }
                wentBack = true
                report.serverWentBack = true
                _ = try ledger.execute { state, _ in
                    let events = SyncPlanner.wentBack(in: state, cursor: cursor, to: page.revision)
                    report.requeued += events.count - 1
                    return (events, .none, false)
                }
                continue
            }
            var applied = 0
            var conflicts = 0
            var merged = 0
            var failure: String?
            var newMerges: [SyncMerge] = []
            // Changes that meet unsent changes here are merged: their bases, in one pass over the log.
            let meeting = ledger.read { state in
                Set(
                    page.changes.filter { change in
                        change.entry != nil
                            && (SyncPlanner.hasUnsentChange(change.id, in: state)
                                || state.outbox.record(OutboxKey(entryID: change.id, destination: .backend))?.operation
                                    == .delete)
                    }.map(\.id))
            }
            let bases = try ledger.syncBases(of: meeting)
            // Changes that say they replaced this device's own edit: the base before that edit, to tell the loss.
            let replacing = ledger.read { state in
                Dictionary(
                    page.changes.compactMap { change -> (EntryID, UInt64)? in
                        guard let replaced = change.replaced, change.entry != nil,
                            !SyncPlanner.hasUnsentChange(change.id, in: state),
                            state.outbox.record(OutboxKey(entryID: change.id, destination: .backend))?.revision
                                == replaced.revision
                        else { return nil }
                        return (change.id, replaced.revision)
                    }, uniquingKeysWith: { first, _ in first })
            }
            let priorBases = try ledger.syncBases(of: Set(replacing.keys), before: replacing)
            _ = try ledger.execute { state, _ in
                var events: [MoodEvent] = []
                applied = 0
                conflicts = 0
                merged = 0
                newMerges = []
                for change in page.changes {
                    do {
                        guard
                            let event = try SyncPlanner.decide(
                                change, in: state, bases: bases,
                                lostBase: replacing[change.id].flatMap { _ in priorBases[change.id] },
                                feedRevision: page.revision)
                        else { continue }
                        if case .remoteApplied(let remote) = event, remote.conflict { conflicts += 1 }
                        if case .syncMerged(let merge) = event {
                            newMerges.append(merge)
                            merged += 1
                            if !merge.conflicts.isEmpty { conflicts += 1 }
                        }
                        events.append(event)
                        applied += 1
                    } catch let error as MoodError {
                        failure =
                            "change \(change.id) at revision \(change.revision) is not a valid entry: \(error.field ?? "entry") \(error.rule)"
                        return ([], .none, false)
                    } catch {
                        failure = "change \(change.id): \(error)"
                        return ([], .none, false)
                    }
                }
                if events.isEmpty && page.nextSince == cursor
                    && page.revision == state.outbox.progress(.backend).serverRevision
                {
                    return ([], .none, false)
                }
                events.append(
                    .syncPulled(SyncPull(cursor: page.nextSince, serverRevision: page.revision, applied: applied)))
                return (events, .none, false)
            }
            if let failure {
                report.pullError = failure
                return
            }
            for merge in newMerges { book.noteMerge(merge) }
            report.pulled += applied
            report.conflicts += conflicts
            report.mergedAtPull += merged
            if !page.hasMore { return }
            if page.nextSince <= cursor {
                report.pullError =
                    "pull: the changes feed says it has more but its cursor did not advance (\(cursor) to \(page.nextSince)): stopped"
                return
            }
        }
    }

    enum Fetched {
        case page(SyncPlanner.ChangesPage)
        case failure(String)
        case unauthorized(String)
    }

    private func fetch(_ path: String) async -> Fetched {
        var refreshed = false
        while true {
            let credentials: SyncCredentials
            do { credentials = try await currentCredentials(refresh: refreshed) } catch {
                return .unauthorized(error.message)
            }
            let request = SyncRequest(
                method: "GET", path: path,
                maximumResponseBytes: SyncLimits.changesPageBytes(limit: configuration.pullPageSize))
            switch await ask(request, credentials: credentials) {
            case .failure(let kind, let message):
                return .failure("pull: \(kind): \(message)")
            case .response(let status, _, let body):
                if status == 401 {
                    if refreshed {
                        return .unauthorized("HTTP 401: \(SyncPolicy.serverMessage(body) ?? "unauthorized")")
                    }
                    refreshed = true
                    continue
                }
                guard status == 200 else {
                    return .failure("pull: HTTP \(status)" + (SyncPolicy.serverMessage(body).map { ": \($0)" } ?? ""))
                }
                guard let page = SyncPlanner.parsePage(body) else {
                    return .failure("pull: the changes feed's answer is not the documented shape")
                }
                guard page.changes.count <= configuration.pullPageSize else {
                    return .failure(
                        "pull: the changes feed answered \(page.changes.count) changes where \(configuration.pullPageSize) were asked for"
                    )
                }
                return .page(page)
            }
        }
    }
}
