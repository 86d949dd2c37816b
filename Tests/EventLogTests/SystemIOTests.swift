import Foundation
import TestSupport
import Testing

@testable import EventLog
@testable import EventLogFormat
@testable import Platform

#if canImport(Glibc)
    import Glibc

    @Suite("The system's file calls")
    struct SystemIOTests {
        /// The file's access time, in seconds.
        private func accessTime(_ path: String) -> Int {
            var info = stat()
            #expect(stat(path, &info) == 0)
            return info.st_atim.tv_sec
        }

        @Test("Reading an existing file, or a whole log, leaves its access time as it was")
        func readsDoNotTouchAccessTime() throws {
            let directory = TemporaryDirectory("atime")
            let log = try EventLog.open(directory: directory.path)
            try log.append(type: 1, payload: Array("a record".utf8))
            log.close()
            let path = directory.path + "/" + LogFormat.logFileName
            // An access time older than the last change: a relatime mount updates it on the next read, unless that
            // read was opened with O_NOATIME.
            var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: time(nil), tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
            #expect(accessTime(path) == 1_000_000_000)

            let io = SystemIO()
            let fd = try io.open(path, .readOnly)
            var buffer = [UInt8](repeating: 0, count: 64)
            _ = try buffer.withUnsafeMutableBytes { try io.read(fd, into: $0, at: 0) }
            io.close(fd)
            var configuration = EventLog.Configuration()
            configuration.access = .readOnly
            let reader = try EventLog.open(directory: directory.path, configuration: configuration)
            #expect(reader.lastSeq == 1)
            reader.close()
            #expect(accessTime(path) == 1_000_000_000)
        }
    }
#endif

@Suite("Shared libraries opened at run time")
struct SharedLibraryTests {
    @Test("A library that is there opens (again at no cost); a missing one is refused with the linker's reason")
    func openOrReason() {
        #expect(SharedLibrary.open("libm.so.6") == nil)
        #expect(SharedLibrary.open("libm.so.6") == nil)
        let reason = SharedLibrary.open("libmoodledger-absent.so.9")
        #expect(reason?.contains("libmoodledger-absent.so.9") == true, "\(reason ?? "opened")")
    }
}
