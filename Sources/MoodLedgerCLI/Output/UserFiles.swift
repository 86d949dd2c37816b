import EventLog
import Platform

/// The CLI's one door to files outside a ledger (reports, demo markers, server directories): crash-safe whole-file
/// writes (temp file, fsync, rename, directory fsync; 0600), reads with a size limit, and removals that never follow
/// a symbolic link. Ledgers themselves are only ever touched through ``Ledger``.
enum UserFiles {
    /// Writes a whole file atomically.
    static func write(_ bytes: [UInt8], to path: String, io: any PlatformIO = SystemIO()) throws {
        try AtomicFile.write(bytes, to: path, io: io)
    }

    /// Reads a whole file of at most `limit` bytes.
    static func read(_ path: String, limit: Int = 1 << 32, io: any PlatformIO = SystemIO()) throws -> [UInt8] {
        try AtomicFile.read(path, limit: limit, io: io)
    }

    /// Creates a directory (0700) if missing.
    static func makeDirectory(_ path: String) throws { try AtomicFile.makeDirectory(path) }

    /// Removes one file, durably.
    static func remove(_ path: String) throws { try AtomicFile.removeFile(path) }

    /// Removes a directory tree without following links.
    static func removeTree(_ path: String, io: any PlatformIO = SystemIO()) throws {
        try AtomicFile.removeTree(path, io: io)
    }
}
