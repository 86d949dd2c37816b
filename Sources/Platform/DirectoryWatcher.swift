import Dispatch

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// Tells when files in a directory change — written, extended, created, renamed over — so a reader hears another
/// process's write without polling: inotify on Linux, a `DispatchSource` file-system source on Darwin. The handler
/// runs on the given queue, at most once per burst of changes; what changed is for the handler to find out.
// @unchecked Sendable: the sources are created in init and only cancelled after; cancellation is thread-safe.
public final class DirectoryWatcher: @unchecked Sendable {
    private var sources: [any DispatchSourceProtocol] = []

    /// Starts watching `directory` (and `file` inside it, on Darwin, where a directory source does not see a file's
    /// contents change).
    /// - Returns: `nil` when the system cannot watch it (no inotify instance left, the directory gone): poll instead.
    public init?(directory: String, file: String, queue: DispatchQueue, onChange: @escaping @Sendable () -> Void) {
        #if canImport(Darwin)
            let directoryFD = Darwin.open(directory, O_EVTONLY)
            guard directoryFD >= 0 else { return nil }
            let fileFD = Darwin.open(directory + "/" + file, O_EVTONLY)
            for fd in [directoryFD, fileFD] where fd >= 0 {
                let source = DispatchSource.makeFileSystemObjectSource(
                    fileDescriptor: fd, eventMask: [.write, .extend, .rename, .delete, .link], queue: queue)
                source.setEventHandler(handler: onChange)
                source.setCancelHandler { _ = Darwin.close(fd) }
                source.resume()
                sources.append(source)
            }
        #else
            let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            guard fd >= 0 else { return nil }
            let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE)
            guard inotify_add_watch(fd, directory, mask) >= 0 else {
                _ = Glibc.close(fd)
                return nil
            }
            let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
            source.setEventHandler {
                // Drain every queued event: one call of the handler per burst.
                var buffer = [UInt8](repeating: 0, count: 4096)
                while buffer.withUnsafeMutableBytes({ Glibc.read(fd, $0.baseAddress, $0.count) }) > 0 {}
                onChange()
            }
            source.setCancelHandler { _ = Glibc.close(fd) }
            source.resume()
            sources.append(source)
        #endif
    }

    /// Stops watching (the descriptors are closed once the sources are cancelled).
    public func stop() {
        for source in sources { source.cancel() }
    }

    deinit { stop() }
}
