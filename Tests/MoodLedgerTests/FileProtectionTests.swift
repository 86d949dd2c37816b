import Foundation
import Platform
import TestSupport
import Testing

@testable import MoodLedger

/// iOS data protection and Darwin's `F_FULLFSYNC` are type-checked for iOS by the Apple kit; here, where neither
/// exists, each must change nothing.
@Suite("Data protection and full syncs where the platform has neither")
struct FileProtectionTests {
    @Test("Every protection class opens, writes and reopens a ledger as the default does; files stay 0600, dirs 0700")
    func everyClassIsANoOpHere() throws {
        for protection in FileProtectionClass.allCases {
            let dir = TemporaryDirectory("protection-\(protection.rawValue)")
            var options = Ledger.Options()
            options.createIfMissing = true
            options.fileProtection = protection
            let path = dir.sub("ledger")
            let ledger = try Ledger.open(at: path, options: options)
            _ = try ledger.log(MoodDraft(valence: 0.2, labels: ["calm"]))
            ledger.close()
            let reopened = try Ledger.open(at: path, options: options)
            #expect(reopened.read { $0.entries.count } == 1, "\(protection)")
            reopened.close()
            let attributes = try FileManager.default.attributesOfItem(atPath: path + "/events.log")
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(protection)")
            let directory = try FileManager.default.attributesOfItem(atPath: path)
            #expect((directory[.posixPermissions] as? Int) == 0o700, "\(protection)")
            #expect(throws: Never.self) { try AppleFileAttributes.protect(path, protection) }
        }
    }

    @Test("An EPERM is never taken for a locked device here; a directory sync is a plain fsync that succeeds")
    func lockedDeviceAndFullSync() throws {
        var options = Ledger.Options()
        options.fileProtection = .complete
        let denied = EventLogError(.io, "open", errno: .notPermitted)
        #expect(Ledger.protectedWhileLocked(denied, options) == nil)
        let dir = TemporaryDirectory("full-sync")
        #expect(throws: Never.self) { try SystemIO().syncDirectory(dir.path) }
    }
}
