import Platform

/// File-level steps shared by open and repair: directories, the lock, atomic replacement, copies.
enum EventLogFiles {
    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let parent = String(path[..<slash])
        return parent.isEmpty ? "/" : parent
    }

    /// Creates `path` (0700) if missing. - Returns: whether it was created.
    static func makeDirectory(_ path: String, io: any PlatformIO) throws -> Bool {
        try wrapIO("cannot create directory \(path)") { try io.makeDirectory(path) }
    }

    /// The writer lock held: its descriptor, and whether the last writer left the log clean (`Specs/log-format.md`,
    /// *Files*: every byte it wrote was durable when it closed).
    struct WriterLock {
        var fd: Int32
        var previousClean: Bool
    }

    /// `LOCK`'s content: the pid right-aligned in 10 bytes, a newline, then `clean` or `dirty` and a newline.
    static func lockContent(pid: Int32, clean: Bool) -> [UInt8] {
        let digits = String(pid)
        return Array((String(repeating: " ", count: max(0, 10 - digits.count)) + digits + "\n").utf8)
            + lockState(clean: clean)
    }

    /// The state line of `LOCK`, at ``lockStateOffset``.
    private static func lockState(clean: Bool) -> [UInt8] { Array((clean ? "clean\n" : "dirty\n").utf8) }

    /// Where the state line starts in `LOCK`.
    private static let lockStateOffset: Int64 = 11

    /// Writes `LOCK`'s state line (never synced: *Writing* in `Specs/log-format.md` says why it need not be).
    /// - Throws: ``EventLogError`` `io`.
    static func writeLockState(clean: Bool, to fd: Int32, io: any PlatformIO) throws {
        try wrapIO("cannot write the lock file") {
            try lockState(clean: clean).withUnsafeBytes { try io.write(fd, $0, at: lockStateOffset) }
        }
    }

    /// The pid `LOCK`'s first line names (0 if none).
    private static func pid(in content: [UInt8]) -> Int32 {
        guard content.count >= 11 else { return 0 }
        return Int32(String(decoding: content[0..<10], as: UTF8.self).trimmingCharacters(in: " ")) ?? 0
    }

    /// Opens `LOCK` (0600) and takes the exclusive flock, recording our pid in it (written only when it is not
    /// there already: a server reopening its users' ledgers writes nothing). The state line is kept as the last
    /// writer left it; an older `LOCK` without one counts as dirty.
    /// - Throws: `locked` with the holder's pid when another writer has it; `notFound` if the directory is missing.
    static func acquireLock(directory: String, io: any PlatformIO, waitMilliseconds: Int = 0) throws -> WriterLock {
        let path = directory + "/" + LogFormat.lockFileName
        let fd: Int32
        do {
            fd = try io.open(path, .readWriteCreate)
        } catch let error as Errno where error == .noSuchFile {
            throw EventLogError(.notFound, "no ledger directory at \(directory)")
        } catch let error as Errno {
            throw EventLogError.io("cannot open lock file \(path)", error)
        }
        do {
            var locked = try io.tryLock(fd)
            var waited = 0
            while !locked, waited < waitMilliseconds {
                io.sleep(milliseconds: 5)
                waited += 5
                locked = try io.tryLock(fd)
            }
            guard locked else {
                let holder = Self.holder(of: fd, io: io)
                let who = holder.map { " by pid \($0)" } ?? ""
                throw EventLogError(
                    .locked, "the ledger at \(directory) is locked\(who) (another writer has it open)",
                    lockHolderPID: holder)
            }
            return WriterLock(fd: fd, previousClean: try claim(fd, io: io))
        } catch {
            io.close(fd)
            throw error
        }
    }

    /// `LOCK`'s first bytes.
    private static func content(of fd: Int32, io: any PlatformIO) -> [UInt8] {
        var content = [UInt8](repeating: 0, count: 64)
        let count = (try? content.withUnsafeMutableBytes { try io.read(fd, into: $0, at: 0) }) ?? 0
        content.removeSubrange(max(0, min(count, content.count))...)
        return content
    }

    /// The pid `LOCK` names, if it names one (the writer that holds it, or held it last).
    static func holder(of fd: Int32, io: any PlatformIO) -> Int32? {
        let content = content(of: fd, io: io)
        let firstLine = content.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).first ?? []
        return Int32(String(decoding: firstLine, as: UTF8.self).trimmingCharacters(in: " \0"))
    }

    /// With the lock just taken: whether the last writer left `LOCK` clean; this process's pid is written into it
    /// (only when it is not there already), keeping the state line.
    /// - Throws: ``EventLogError`` `io`.
    static func claim(_ fd: Int32, io: any PlatformIO) throws -> Bool {
        let content = content(of: fd, io: io)
        let previousClean = content == lockContent(pid: Self.pid(in: content), clean: true)
        let ours = lockContent(pid: io.processID(), clean: previousClean)
        if content != ours {
            try wrapIO("cannot write the lock file") {
                try ours.withUnsafeBytes { try io.write(fd, $0, at: 0) }
                if content.count > ours.count { try io.truncate(fd, to: Int64(ours.count)) }
            }
        }
        return previousClean
    }

    /// Copies `path` to `destination` (0600) and syncs the copy and the directory. The copy is written under a
    /// temporary name and renamed only once complete and synced, so a failed copy never leaves a partial file
    /// that looks like a backup.
    static func copy(_ path: String, to destination: String, io: any PlatformIO) throws {
        let temp = destination + ".tmp-" + io.randomBytes(6).map { String($0, radix: 16) }.joined()
        do {
            try copyContents(path, to: temp, io: io)
            try wrapIO("cannot rename \(temp)") { try io.rename(temp, destination) }
        } catch {
            try? io.remove(temp)
            throw error
        }
        try wrapIO("cannot sync the directory of \(destination)") { try io.syncDirectory(parent(of: destination)) }
    }

    private static func copyContents(_ path: String, to destination: String, io: any PlatformIO) throws {
        try wrapIO("cannot copy \(path) to \(destination)") {
            let source = try io.open(path, .readOnly)
            defer { io.close(source) }
            let target = try io.open(destination, .createExclusive)
            defer { io.close(target) }
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            var offset: Int64 = 0
            while true {
                let count = try buffer.withUnsafeMutableBytes { try io.read(source, into: $0, at: offset) }
                if count == 0 { break }
                try buffer.withUnsafeBytes {
                    try io.write(target, UnsafeRawBufferPointer(rebasing: $0[0..<count]), at: offset)
                }
                offset += Int64(count)
            }
            try io.syncData(target)
        }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        let drop = Set(set)
        var scalars = Substring(self)
        while let first = scalars.first, drop.contains(first) { scalars.removeFirst() }
        while let last = scalars.last, drop.contains(last) { scalars.removeLast() }
        return String(scalars)
    }
}
