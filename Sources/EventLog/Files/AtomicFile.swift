import Platform

/// Whole-file reads and crash-safe whole-file replacement, for caches that live beside a log (snapshots).
package enum AtomicFile {
    /// Writes `bytes` to `path` atomically: a uniquely named temp file in the same directory (0600), synced,
    /// renamed over `path`, then the directory synced.
    /// - Parameters:
    ///   - bytes: the whole content.
    ///   - path: the destination.
    ///   - io: the system-call layer.
    ///   - check: called with the synced temp file's path before the rename; what it throws aborts the write.
    /// - Throws: ``EventLogError`` `io`, or what `check` throws; on failure the temp file is removed and `path` is
    ///   untouched.
    package static func write(
        _ bytes: [UInt8], to path: String, io: any PlatformIO = SystemIO(),
        check: ((String) throws -> Void)? = nil
    ) throws {
        try write(to: path, io: io, check: check) { write in try bytes.withUnsafeBytes { try write(0, $0) } }
    }

    /// Writes a file as ``write(_:to:io:check:)`` does, from what `produce` hands to its argument: bytes at
    /// offsets, in any order, never overlapping (bytes never written read as zero).
    /// - Throws: ``EventLogError`` `io`, or what `produce` or `check` throw; on failure the temp file is removed and
    ///   `path` is untouched.
    package static func write(
        to path: String, io: any PlatformIO = SystemIO(), check: ((String) throws -> Void)? = nil,
        produce: (_ write: (_ offset: Int, _ bytes: UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws {
        let suffix = io.randomBytes(6).map { String($0, radix: 16) }.joined()
        let temp = path + ".tmp-" + suffix
        do {
            let fd = try wrapIO("cannot write \(temp)") { try io.open(temp, .createExclusive) }
            do {
                defer { io.close(fd) }
                try produce { offset, bytes in
                    try wrapIO("cannot write \(temp)") { try io.write(fd, bytes, at: Int64(offset)) }
                }
                try wrapIO("cannot write \(temp)") { try io.syncData(fd) }
            }
            try check?(temp)
            try wrapIO("cannot rename \(temp)") { try io.rename(temp, path) }
        } catch {
            try? io.remove(temp)
            throw error
        }
        try wrapIO("cannot sync the directory of \(path)") { try io.syncDirectory(EventLogFiles.parent(of: path)) }
    }

    /// Reads a whole file.
    /// - Parameters:
    ///   - path: the file.
    ///   - limit: the largest size accepted; a larger file is refused before anything is allocated.
    ///   - io: the system-call layer.
    /// - Throws: ``EventLogError`` `notFound`, `invalidArgument` (too large) or `io`.
    package static func read(_ path: String, limit: Int = 1 << 32, io: any PlatformIO = SystemIO()) throws -> [UInt8] {
        let fd = try openForReading(path, io: io)
        defer { io.close(fd) }
        return try wrapIO("cannot read \(path)") {
            let size = try io.size(fd)
            guard size <= Int64(limit) else {
                throw EventLogError(.invalidArgument, "\(path) is \(size) bytes, more than the \(limit) accepted")
            }
            var bytes = [UInt8](repeating: 0, count: Int(size))
            let count = try bytes.withUnsafeMutableBytes { try io.read(fd, into: $0, at: 0) }
            return Array(bytes[0..<count])
        }
    }

    /// Opens a file read-only, naming a missing file `notFound`.
    private static func openForReading(_ path: String, io: any PlatformIO) throws -> Int32 {
        do {
            return try io.open(path, .readOnly)
        } catch let error as Errno where error == .noSuchFile {
            throw EventLogError(.notFound, "no file at \(path)")
        } catch let error as Errno {
            throw EventLogError.io("cannot open \(path)", error)
        }
    }

    /// Maps a whole file read-only (the descriptor is closed at once: the mapping keeps the file).
    /// - Throws: ``EventLogError`` `notFound` or `io`.
    package static func map(_ path: String, io: any PlatformIO = SystemIO()) throws -> MappedFile {
        let fd = try openForReading(path, io: io)
        defer { io.close(fd) }
        return try wrapIO("cannot map \(path)") {
            let size = try io.size(fd)
            guard size <= Int64(Int.max / 2) else { throw Errno.outOfMemory }
            return try io.map(fd, length: Int(size))
        }
    }

    /// The size of a file in bytes.
    /// - Throws: ``EventLogError`` `io`.
    package static func size(of path: String, io: any PlatformIO = SystemIO()) throws -> Int64 {
        try wrapIO("cannot stat \(path)") {
            let fd = try io.open(path, .readOnly)
            defer { io.close(fd) }
            return try io.size(fd)
        }
    }

    /// Removes one file and syncs its directory.
    /// - Throws: ``EventLogError`` `io`.
    package static func removeFile(_ path: String, io: any PlatformIO = SystemIO()) throws {
        try wrapIO("cannot remove \(path)") {
            try io.remove(path)
            try io.syncDirectory(EventLogFiles.parent(of: path))
        }
    }

    /// Removes a directory and everything in it. No link is ever followed: a real directory is recursed into,
    /// everything else — a symbolic link to a directory included — is unlinked (the link, not its target).
    /// - Throws: ``EventLogError`` `io`.
    package static func removeTree(_ path: String, io: any PlatformIO = SystemIO()) throws {
        try wrapIO("cannot remove \(path)") {
            for name in try io.contents(ofDirectory: path) {
                let child = path + "/" + name
                if io.isDirectoryNotLink(child) {
                    try removeTree(child, io: io)
                } else {
                    try io.remove(child)
                }
            }
            try io.removeDirectory(path)
        }
    }

    /// Creates a directory (0700) if missing, syncing its parent when it was created.
    /// - Throws: ``EventLogError`` `io`.
    package static func makeDirectory(_ path: String, io: any PlatformIO = SystemIO()) throws {
        if try EventLogFiles.makeDirectory(path, io: io) {
            try wrapIO("cannot sync \(EventLogFiles.parent(of: path))") {
                try io.syncDirectory(EventLogFiles.parent(of: path))
            }
        }
    }
}
