#if canImport(Darwin)
    import Foundation
#endif

/// An iOS data-protection class for a ledger's files: health data at rest is encrypted with a key the device holds
/// only while the class allows. On platforms without data protection (Linux, macOS) it changes nothing.
public enum FileProtectionClass: String, Sendable, CaseIterable {
    /// Readable only while the device is unlocked: a background sync cannot open the ledger while it is locked.
    case complete
    /// A file opened while unlocked stays usable after locking; a new file may be created while locked.
    case completeUnlessOpen
    /// Readable from the first unlock after boot until shutdown: background syncs and HealthKit deliveries work.
    case completeUntilFirstUserAuthentication
    /// No protection beyond the device's own encryption.
    case none
}

/// The file attributes an app's ledger needs on Apple platforms, behind the one platform layer.
public enum AppleFileAttributes {
    /// Why a file's data-protection class could not be set: the path, the class and the system's own words.
    public struct ProtectionError: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var protection: FileProtectionClass
        public var reason: String
        public var description: String {
            "cannot give \(path) the data-protection class \(protection.rawValue): \(reason)"
        }
    }

    /// Gives the file or directory at `path` the data-protection class `protection` (iOS, watchOS, visionOS;
    /// elsewhere nothing). Files created later in a protected directory take its class.
    /// - Throws: ``ProtectionError`` with the system's reason when the attribute cannot be set.
    public static func protect(_ path: String, _ protection: FileProtectionClass) throws {
        #if os(iOS) || os(watchOS) || os(visionOS) || os(tvOS)
            let type: FileProtectionType
            switch protection {
            case .complete: type = .complete
            case .completeUnlessOpen: type = .completeUnlessOpen
            case .completeUntilFirstUserAuthentication: type = .completeUntilFirstUserAuthentication
            case .none: type = .none
            }
            do { try FileManager.default.setAttributes([.protectionKey: type], ofItemAtPath: path) } catch {
                throw ProtectionError(path: path, protection: protection, reason: error.localizedDescription)
            }
        #endif
    }

    /// Excludes the file or directory at `path` from iCloud and device backups (Apple platforms; elsewhere nothing):
    /// for caches that can be rebuilt, such as snapshots.
    /// - Throws: `Errno` `EIO` when the attribute cannot be set.
    public static func excludeFromBackup(_ path: String) throws {
        #if canImport(Darwin)
            var url = URL(fileURLWithPath: path)
            var values = URLResourceValues()
            values.isExcludedFromBackup = true
            do { try url.setResourceValues(values) } catch { throw Errno.ioError }
        #endif
    }
}
