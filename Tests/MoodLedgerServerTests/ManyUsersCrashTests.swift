import Foundation
import MoodLedger
import Synchronization
import TestSupport
import Testing

@testable import MoodLedgerServer

/// The built `moodledger serve` with many users and room for few open ledgers (so ledgers are closed and reopened
/// under the load), eight writers on random users, then a cut and a restart: every write the server acknowledged, of
/// every user, is there; nothing that was never sent is.
@Suite("Many users: SIGKILL and power cut under load", .serialized)
struct ManyUsersCrashTests {
    static let users = 24

    @Test("SIGKILL under load over 24 users and 4 open ledgers: every acknowledged write of every user is there")
    func sigkill() throws {
        let dir = TemporaryDirectory("many-kill")
        try cutUnderLoad(data: dir.sub("data"), cut: {}, restore: {})
    }

    /// XFS shut down without flushing its log (what was not durable is gone), SIGKILL, remount.
    @Test(
        "Power cut under load over 24 users and 4 open ledgers: every acknowledged write of every user is there",
        .enabled(if: XFSDisk.available, "needs root, xfsprogs (mkfs.xfs, xfs_io) and a loop device"),
        .timeLimit(.minutes(3)))
    func powerCut() throws {
        let disk = try XFSDisk()
        defer { disk.remove() }
        try cutUnderLoad(
            data: disk.mountPoint + "/data", cut: { try disk.powerCut() }, restore: { try disk.remount() },
            answersDuringCutInDoubt: true)
    }

    /// Adds the users, loads the server until enough writes were acknowledged, runs `cut`, kills the server, runs
    /// `restore`, and checks every user's entries through a new server. With `answersDuringCutInDoubt`, a 201 read
    /// once the cut began may or may not have survived it (see below); every one read before must have.
    func cutUnderLoad(
        data: String, cut: () throws -> Void, restore: () throws -> Void, answersDuringCutInDoubt: Bool = false
    ) throws {
        let names = (0..<Self.users).map { "user\($0)" }
        let list = data + ".names"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        try names.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        var keys: [String: String] = [:]
        for line in try EndToEndTests.run(["serve", "user", "import", list, "--data", data]).split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2 { keys[String(parts[0])] = String(parts[1]) }
        }
        #expect(keys.count == Self.users, "every account added")
        let accounts = try Credentials.load(directory: data, create: false)
        let now = Int64(Date().timeIntervalSince1970)
        let auth = names.map { name in
            [
                "X-API-Key: \(keys[name] ?? "")",
                "Authorization: Bearer " + (accounts.token(for: name, now: now, ttl: 3600) ?? "")
            ]
        }

        let (loaded, loadPort) = try EndToEndTests.start(data, options: ["--max-open-ledgers", "4"])
        var random = SeededRandom()
        let seed = random.seed
        // The cut comes after 100 to 400 acknowledged writes, so it meets the load at a different point each seed.
        let cutAfter = 100 + Int.random(in: 0..<300, using: &random)
        let sent = Mutex<[Set<String>]>(Array(repeating: [], count: Self.users))
        let acknowledged = Mutex<[Set<String>]>(Array(repeating: [], count: Self.users))
        let count = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        // Set just before the cut begins: a 201 read after it is in doubt, not acknowledged. XFS's forced shutdown
        // lets an `fdatasync` that races it return 0 for bytes it then never writes (reproduced with plain C writers:
        // every such loss was of a sync that returned after the shutdown began), which a real power cut cannot do —
        // there is no one left to answer. What a client had been told before the cut is what must survive.
        let cutting = Atomic<Bool>(false)
        let group = DispatchGroup()
        // Threads of their own, not the global queue's: the cut runs a tool whose output is drained there.
        for thread in 0..<8 {
            group.enter()
            Thread {
                defer { group.leave() }
                var random = SplitMix64(seed: seed &+ UInt64(thread))
                var n = 0
                while !stop.load(ordering: .relaxed) {
                    let user = Int.random(in: 0..<Self.users, using: &random)
                    let source = "w\(thread)-\(n)"
                    n += 1
                    sent.withLock { _ = $0[user].insert(source) }
                    let body = #"{"valence":0.2,"labels":["calm"],"source":"import","source_id":"\#(source)"}"#
                    guard
                        let response = try? EndToEndTests.call(
                            loadPort, "POST", "/api/v1/mood", auth: auth[user], json: body)
                    else { continue }
                    if response.status == 201, !cutting.load(ordering: .sequentiallyConsistent) {
                        acknowledged.withLock { _ = $0[user].insert(source) }
                        count.add(1, ordering: .relaxed)
                    }
                }
            }.start()
        }
        // Should a step below throw, the writers stop and the server goes (a server left running would hold the mount).
        defer {
            stop.store(true, ordering: .relaxed)
            if loaded.isRunning { kill(loaded.processIdentifier, SIGKILL) }
            loaded.waitUntilGone()
            group.wait()
        }
        // Cut once the load is well under way (a machine busy with the rest of the suite gets up to 15 s to get there).
        let started = Date()
        waitUntil(seconds: 15) { count.load(ordering: .relaxed) >= cutAfter }
        print("cut after \(Date().timeIntervalSince(started)) s at \(count.load(ordering: .relaxed)) acknowledged")
        if answersDuringCutInDoubt { cutting.store(true, ordering: .sequentiallyConsistent) }
        try cut()
        kill(loaded.processIdentifier, SIGKILL)
        loaded.waitUntilGone()
        stop.store(true, ordering: .relaxed)
        group.wait()
        let acked = acknowledged.withLock { $0 }
        #expect(acked.map(\.count).reduce(0, +) >= 50, "the load ran: \(acked.map(\.count)) acknowledged")
        #expect(
            acked.filter { !$0.isEmpty }.count > 8, "writes went to many users, so ledgers were closed and reopened")
        try restore()

        let (server, port) = try EndToEndTests.start(data, options: ["--max-open-ledgers", "4"])
        defer {
            server.terminate()
            server.waitUntilGone()
        }
        for user in 0..<Self.users {
            var present: Set<String> = []
            var offset = 0
            while true {
                let page = try EndToEndTests.call(
                    port, "GET",
                    "/api/v1/mood?from=2000-01-01&to=2100-01-01&source=import&limit=100&offset=\(offset)",
                    auth: auth[user])
                #expect(page.status == 200, "\(names[user]): \(page.text.prefix(200))")
                guard page.status == 200 else { break }
                for entry in page.data["entries"]?.arrayValue ?? [] {
                    present.insert(entry["source_id"]?.stringValue ?? "")
                }
                offset += 100
                if page.data["has_more"] != .bool(true) { break }
            }
            let lost = acked[user].subtracting(present)
            #expect(lost.isEmpty, "\(names[user]) lost \(lost.count): \(lost.sorted().prefix(5))")
            let invented = present.subtracting(sent.withLock { $0[user] })
            #expect(invented.isEmpty, "\(names[user]) holds what was never sent: \(invented.sorted().prefix(5))")
        }
    }
}

/// A small XFS file system on a loop device, for power cuts: `xfs_io -x -c shutdown` stops it at once without
/// flushing its log, so what the next mount shows is what was durable (what an `fdatasync` returned for) and no
/// more — the page cache and unflushed metadata are gone, as after a power cut.
final class XFSDisk {
    /// Holds the image and the mount point; removed after ``remove()`` unmounted the file system.
    private let directory = TemporaryDirectory("xfs")
    let image: String
    let mountPoint: String
    private(set) var device = ""

    /// Root, the tools, and the loop devices' control file.
    static var available: Bool {
        getuid() == 0 && FileManager.default.fileExists(atPath: "/dev/loop-control")
            && ["mkfs.xfs", "xfs_io", "losetup", "mount", "umount", "truncate"].allSatisfy { path(of: $0) != nil }
    }

    /// Where a tool is (root's tools are in the sbin folders, which a test's PATH may lack).
    static func path(of tool: String) -> String? {
        ["/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"].map { $0 + tool }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Makes a 320 MB image, formats it and mounts it.
    init() throws {
        // The image lives in memory where it can: the loop device then flushes in no time (on a disk, each of the file
        // system's flushes syncs the whole image file beneath it, and the shutdown waits for them). What the power cut
        // keeps is decided above the image, by what XFS had written to its device.
        let shm = "/dev/shm"
        image =
            FileManager.default.isWritableFile(atPath: shm)
            ? shm + "/moodledger-xfs-\(UUID().uuidString.prefix(8)).img" : directory.sub("disk.img")
        mountPoint = directory.sub("mnt")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        try Self.sh("truncate", "-s", "320M", image)
        try Self.sh("mkfs.xfs", "-q", "-f", image)
        device = try Self.sh("losetup", "-f", "--show", image).trimmingCharacters(in: .whitespacesAndNewlines)
        do { try Self.sh("mount", device, mountPoint) } catch {
            remove()
            throw error
        }
    }

    /// The power cut: the file system stops now, without writing its log.
    func powerCut() throws { try Self.sh("xfs_io", "-x", "-c", "shutdown", mountPoint) }

    /// Unmounts and mounts again: XFS recovers from what reached the disk.
    func remount() throws {
        try Self.sh("umount", mountPoint)
        try Self.sh("mount", device, mountPoint)
    }

    /// Unmounts and detaches whatever is still mounted or attached, and removes the image.
    func remove() {
        _ = try? Self.sh("umount", mountPoint)
        if !device.isEmpty { _ = try? Self.sh("losetup", "-d", device) }
        try? FileManager.default.removeItem(atPath: image)
    }

    /// Runs a tool; its standard output, or an error naming the command and what it printed.
    @discardableResult
    static func sh(_ tool: String, _ arguments: String...) throws -> String {
        let outcome = try Tool.run(arguments, executable: path(of: tool) ?? tool)
        guard outcome.code == 0 else {
            throw POSIXError(
                .EIO,
                userInfo: [NSLocalizedDescriptionKey: "\(tool) \(arguments.joined(separator: " ")): \(outcome.err)"])
        }
        return outcome.out
    }
}
