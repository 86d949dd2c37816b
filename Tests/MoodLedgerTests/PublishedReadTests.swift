import Dispatch
import Foundation
import MoodLedger
import Synchronization
import TestSupport
import Testing

@testable import EventLog

/// Reads take the last published commit: they never wait for a write's `fdatasync`, and never see part of a commit.
@Suite("Reads never wait for a write")
struct PublishedReadTests {
    static func open(_ dir: TemporaryDirectory, io: FaultInjectingIO) throws -> Ledger {
        var options = Ledger.Options()
        options.createIfMissing = true
        options.io = io
        options.durability = .always
        return try Ledger.open(at: dir.path, options: options)
    }

    @Test("While a commit waits in its fdatasync, reads answer at once, from the commit before")
    func readsDuringSync() throws {
        let dir = TemporaryDirectory("published-sync")
        let io = FaultInjectingIO()
        let ledger = try Self.open(dir, io: io)
        defer { ledger.close() }
        let first = try ledger.log(MoodDraft(valence: 0.5, labels: ["calm"])).entry.id
        let before = ledger.lastSeq
        let inSync = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        io.plan.withLock { plan in
            plan.pausedSync = {
                inSync.signal()
                release.wait()
            }
        }
        let written = DispatchSemaphore(value: 0)
        let second = Mutex<EntryID?>(nil)
        Thread {
            let id = try? ledger.log(MoodDraft(valence: -0.5, labels: ["sad"])).entry.id
            second.withLock { $0 = id }
            written.signal()
        }.start()
        inSync.wait()
        // The writer holds its lock inside fdatasync now. Every read below would block until `release` if it took
        // that lock: the reads run on a thread of their own, and the test waits for them (a read that waited would
        // never finish, and the test fails on the timeout instead of hanging).
        let answers = Mutex<(entry: Bool, count: Int, seq: UInt64, page: Int)?>(nil)
        let read = DispatchSemaphore(value: 0)
        Thread {
            let entry = ledger.entry(first) != nil
            let count = ledger.read { $0.entries.count }
            let page = (try? ledger.read { try $0.list(EntryQuery(limit: 10)) }.entries.count) ?? -1
            answers.withLock { $0 = (entry, count, ledger.lastSeq, page) }
            read.signal()
        }.start()
        let answered = read.wait(timeout: .now() + 60) == .success
        release.signal()
        written.wait()
        #expect(answered, "the reads waited for the writer's fdatasync")
        let seen = answers.withLock { $0 }
        #expect(seen?.entry == true && seen?.count == 1 && seen?.page == 1 && seen?.seq == before)
        // Once the commit is acknowledged, it is what reads see.
        let id = try #require(second.withLock { $0 })
        #expect(ledger.entry(id) != nil && ledger.read { $0.entries.count } == 2)
    }

    @Test("Seeded readers beside writers of two-entry commits never see an odd count (part of a commit)")
    func wholeCommits() throws {
        var random = SeededRandom()
        let dir = TemporaryDirectory("published-whole")
        var options = Ledger.Options()
        options.createIfMissing = true
        options.durability = .batched
        let ledger = try Ledger.open(at: dir.path, options: options)
        defer { ledger.close() }
        let commits = Int.random(in: 150...300, using: &random)
        let seed = random.seed
        let written = DispatchSemaphore(value: 0)
        let writer = Thread {
            defer { written.signal() }
            for index in 0..<commits {
                let pair = (0..<2).map { half in
                    MoodEntry(
                        id: EntryID(high: seed, low: UInt64(index * 2 + half) + 1),
                        loggedAt: LoggedAt(
                            milliseconds: 1_760_000_000_000 + Int64(index) * 60_000, utcOffsetMinutes: 0),
                        valence: 0.25)
                }
                _ = try? ledger.execute { _, _ in ([.created(pair[0]), .created(pair[1])], pair[0].id, true) }
            }
        }
        let odd = Atomic<Int>(0)
        let done = Atomic<Bool>(false)
        let readers = (0..<2).map { _ in
            Thread {
                while !done.load(ordering: .relaxed) {
                    let (count, seq) = ledger.read { ($0.entries.count, $0.seq) }
                    if count % 2 != 0 || UInt64(count) != seq { odd.add(1, ordering: .relaxed) }
                }
            }
        }
        for reader in readers { reader.start() }
        writer.start()
        written.wait()
        done.store(true, ordering: .relaxed)
        #expect(odd.load(ordering: .relaxed) == 0, "seed \(seed): a reader saw part of a commit")
        #expect(ledger.read { $0.entries.count } == commits * 2)
    }
}
