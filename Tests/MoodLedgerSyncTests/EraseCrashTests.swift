import Foundation
import MoodInterchange
import MoodLedger
import TestSupport
import Testing

@Suite("Erasure across SIGKILL (the built binary)")
struct EraseCrashTests {
    @Test(
        "Killed at a random moment of erase (one entry; --all): reopening shows the entries untouched or the erasure finished, never a mix",
        arguments: [false, true])
    func killed(all: Bool) throws {
        var random = SeededRandom()
        for round in 0..<5 {
            let dir = TemporaryDirectory("erase-kill")
            let path = dir.sub("ledger")
            var options = Ledger.Options()
            options.durability = .batched
            let ledger = try Ledger.open(at: path, options: options)
            var plan = ImportPlan(format: .moodAPI)
            for i in 0..<10_000 {
                plan.rows.append(
                    ImportRow(
                        line: i + 1,
                        draft: MoodDraft(
                            valence: Double(i % 20) / 20, labels: ["calm"],
                            notes: "ordinary \(i)", suggestLabels: false)))
            }
            _ = try ledger.importPlan(plan)
            let secret = try ledger.log(MoodDraft(valence: -0.5, labels: ["sad"], notes: "kill secret")).entry.id
            for i in 0..<50 { _ = try ledger.log(MoodDraft(valence: 0.1, labels: ["calm"], notes: "after \(i)")) }
            try ledger.flush()
            let others = ledger.state.entries.all.filter { $0.id != secret }.map(\.exportJSON).map { $0.serialized() }
                .sorted()
            ledger.close()

            let process = Process()
            process.executableURL = URL(fileURLWithPath: Repository.executable("moodledger"))
            process.arguments = (all ? ["erase", "--all"] : ["erase", secret.description]) + ["--yes", "--ledger", path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let delay = Double.random(in: 0...0.4, using: &random)
            Thread.sleep(forTimeInterval: delay)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilGone()

            let reopened = try Ledger.open(at: path)
            defer { reopened.close() }
            let now = reopened.state.entries.all.filter { $0.id != secret }.map(\.exportJSON).map { $0.serialized() }
                .sorted()
            let erasedEverything = all && reopened.state.entries.count == 0
            #expect(now == others || erasedEverything, "round \(round), delay \(delay): no other entry changed or lost")
            #expect(!all || erasedEverything || reopened.state.entries.count == others.count + 1, "all or nothing")
            #expect(reopened.state.pendingErasures.isEmpty)
            let log = try Data(contentsOf: URL(fileURLWithPath: path + "/events.log"))
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.contains(".tmp-") }
            if reopened.entry(secret) == nil {
                let needles = ["kill secret"] + (all ? ["ordinary 1", "after 1"] : [])
                for needle in needles {
                    #expect(log.range(of: Data(needle.utf8)) == nil, "round \(round): finished")
                    for name in try FileManager.default.contentsOfDirectory(atPath: path + "/snapshots") {
                        let data = try Data(contentsOf: URL(fileURLWithPath: path + "/snapshots/" + name))
                        #expect(data.range(of: Data(needle.utf8)) == nil)
                    }
                }
            } else {
                #expect(log.range(of: Data("kill secret".utf8)) != nil, "round \(round): untouched")
            }
            #expect(
                leftovers.isEmpty || reopened.entry(secret) != nil,
                "a finished erasure leaves no temp file: \(leftovers)")
            #expect(try Ledger.verify(at: path).ok)
        }
    }
}
