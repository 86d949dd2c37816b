import Platform

/// Reads a credentials file only if no one but its owner can read or write it.
enum CredentialFile {
    /// The file's bytes.
    /// - Throws: ``SyncError`` `config` when it is missing, not a regular file, or its mode is not 0600 (or 0400).
    static func read(_ path: String) throws(SyncError) -> [UInt8] {
        do {
            return try SystemIO.readOwnerOnlyFile(path, limit: 64 << 10)
        } catch {
            switch error {
            case .unreadable(let errno):
                throw SyncError(.config, "cannot read the credentials file \(path) (\(errno))")
            case .notRegular:
                throw SyncError(.config, "the credentials file \(path) is not a regular file")
            case .openMode(let mode):
                throw SyncError(
                    .config,
                    "the credentials file \(path) has mode \(String(mode, radix: 8)): it must be 0600 (chmod 600 \(path))"
                )
            case .tooLarge:
                throw SyncError(.config, "the credentials file \(path) is larger than 64 KiB")
            }
        }
    }
}
