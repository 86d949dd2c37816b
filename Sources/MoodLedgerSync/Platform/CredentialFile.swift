#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a credentials file only if no one but its owner can read or write it.
enum CredentialFile {
    /// The file's bytes.
    /// - Throws: ``SyncError`` `config` when it is missing, not a regular file, or its mode is not 0600 (or 0400).
    static func read(_ path: String) throws(SyncError) -> [UInt8] {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw SyncError(.config, "cannot read the credentials file \(path) (\(String(cString: strerror(errno))))") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw SyncError(.config, "the credentials file \(path) is not a regular file") }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw SyncError(.config, "the credentials file \(path) has mode \(String(mode, radix: 8)): it must be 0600 (chmod 600 \(path))")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SyncError(.config, "cannot open the credentials file \(path) (\(String(cString: strerror(errno))))") }
        defer { _ = close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= 64 << 10 {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        guard bytes.count <= 64 << 10 else { throw SyncError(.config, "the credentials file \(path) is larger than 64 KiB") }
        return bytes
    }
}
