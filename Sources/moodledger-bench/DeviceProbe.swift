import Foundation
import Platform
import Synchronization

/// What the device gives writes spread over many files: appends of 200 bytes to distinct files, each opened, written,
/// synced with `fdatasync` and closed, on 1, 4, 8 and 16 threads at once (`Specs/benchmark.md`, *Many accounts*). A
/// user's durable write to a ledger that is not open does the same on its own file, so this is the ceiling parallel
/// syncs can reach on this device, with no server around them.
enum DeviceProbe {
    /// Files the appends are spread over (each thread picks them in turn from its own start).
    static let files = 4_096

    /// Records `device_syncs_per_s_T` for each thread count: appends synced per second over `seconds` per count.
    /// - Throws: ``Errno`` when a file cannot be made, written or synced.
    static func measure(directory: String, seconds: Double, into bench: inout Benchmark) throws {
        let io = SystemIO()
        let root = directory + "/device-probe"
        _ = try io.makeDirectory(root)
        defer {
            for index in 0..<files { try? io.remove(path(root, index)) }
            try? io.removeDirectory(root)
        }
        for threads in [1, 4, 8, 16] {
            let rate = try appends(root: root, threads: threads, seconds: seconds, io: io)
            bench.record("device_syncs_per_s_\(threads)", rate, places: 0)
        }
    }

    private static func path(_ root: String, _ index: Int) -> String { root + "/f\(index)" }

    /// Runs `threads` threads appending and syncing until `seconds` passed. - Returns: syncs per second.
    private static func appends(root: String, threads: Int, seconds: Double, io: SystemIO) throws -> Double {
        let block = [UInt8](repeating: 0x5A, count: 200)
        let done = Atomic<Int>(0)
        let failure = Mutex<(any Error)?>(nil)
        let group = DispatchGroup()
        let start = Benchmark.now()
        let deadline = start + UInt64(seconds * 1e9)
        for thread in 0..<threads {
            group.enter()
            Thread {
                defer { group.leave() }
                var index = thread * (files / threads)
                var count = 0
                do {
                    while Benchmark.now() < deadline {
                        let fd = try io.open(path(root, index % files), .readWriteCreate)
                        defer { io.close(fd) }
                        try block.withUnsafeBytes { try io.write(fd, $0, at: try io.size(fd)) }
                        try io.syncData(fd)
                        count += 1
                        index += 1
                    }
                } catch {
                    failure.withLock { $0 = error }
                }
                done.add(count, ordering: .relaxed)
            }.start()
        }
        group.wait()
        if let error = failure.withLock({ $0 }) { throw error }
        return Double(done.load(ordering: .relaxed)) / Benchmark.seconds(since: start)
    }
}
