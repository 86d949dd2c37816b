/// How a file is opened by ``PlatformIO/open(_:_:)``.
public enum OpenMode: Sendable {
    /// Read only; the file must exist.
    case readOnly
    /// Read and write; the file must exist.
    case readWrite
    /// Read and write, creating the file (mode 0600) if it does not exist.
    case readWriteCreate
    /// Read and write, creating the file (mode 0600); fails with EEXIST if it exists.
    case createExclusive
}

/// Every system call EventLog makes, behind one seam so tests can inject faults.
///
/// ``SystemIO`` is the real implementation. Each method retries EINTR and loops over short reads and
/// writes itself, so callers never see either. Errors are thrown as ``Errno``.
public protocol PlatformIO: Sendable {
    /// Opens a file and returns its descriptor.
    /// - Parameters:
    ///   - path: the file's path.
    ///   - mode: how to open it; created files get mode 0600.
    /// - Throws: ``Errno``.
    func open(_ path: String, _ mode: OpenMode) throws -> Int32
    /// Closes a descriptor, ignoring errors (there is nothing safe to do about them).
    func close(_ fd: Int32)
    /// Reads up to `buffer.count` bytes at `offset`, looping until the buffer is full or the file ends.
    /// - Returns: the number of bytes read; fewer than asked only at end of file.
    /// - Throws: ``Errno``.
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int
    /// Writes every byte of `bytes` at `offset`, looping over short writes.
    /// - Throws: ``Errno``; some bytes may have been written.
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws
    /// Makes the file's data durable: `fdatasync`, or `F_FULLFSYNC` on Darwin.
    /// - Throws: ``Errno``. A failed sync must never be retried and then trusted.
    func syncData(_ fd: Int32) throws
    /// Makes a directory's entries durable (after create, rename or unlink inside it).
    /// - Throws: ``Errno``.
    func syncDirectory(_ path: String) throws
    /// Truncates (or extends with zeros) the file to `size` bytes.
    /// - Throws: ``Errno``.
    func truncate(_ fd: Int32, to size: Int64) throws
    /// The file's current size in bytes.
    /// - Throws: ``Errno``.
    func size(_ fd: Int32) throws -> Int64
    /// Takes an exclusive, non-blocking `flock` on the descriptor.
    /// - Returns: `false` when another open file description holds it.
    /// - Throws: ``Errno`` for any other failure.
    func tryLock(_ fd: Int32) throws -> Bool
    /// Releases the `flock` on the descriptor (a writer that holds it only while it writes).
    func unlock(_ fd: Int32)
    /// Renames a file, replacing any file at `to`.
    /// - Throws: ``Errno``.
    func rename(_ from: String, _ to: String) throws
    /// Removes a file.
    /// - Throws: ``Errno``.
    func remove(_ path: String) throws
    /// Removes an empty directory.
    /// - Throws: ``Errno``.
    func removeDirectory(_ path: String) throws
    /// Creates a directory with mode 0700.
    /// - Returns: `false` if it already existed.
    /// - Throws: ``Errno``.
    func makeDirectory(_ path: String) throws -> Bool
    /// Whether `path` is itself a directory (a symbolic link is not followed).
    func isDirectoryNotLink(_ path: String) -> Bool
    /// Whether anything exists at `path`.
    func exists(_ path: String) -> Bool
    /// The names in a directory, without `.` and `..`.
    /// - Throws: ``Errno``.
    func contents(ofDirectory path: String) throws -> [String]
    /// Cryptographically random bytes.
    func randomBytes(_ count: Int) -> [UInt8]
    /// Wall-clock time in microseconds since 1970-01-01T00:00:00Z.
    func nowMicroseconds() -> Int64
    /// This process's id.
    func processID() -> Int32
    /// Sleeps the calling thread.
    func sleep(milliseconds: Int)
    /// Maps an open file read-only into memory (private, never written through).
    /// - Parameters:
    ///   - fd: a descriptor open for reading.
    ///   - length: how many bytes from the start (the file's size when it was checked).
    /// - Returns: the mapping; a SIGBUS inside it (the file truncated under the process) reads zeros and marks it
    ///   ``MappedFile/isDamaged`` instead of ending the process.
    /// - Throws: ``Errno``.
    func map(_ fd: Int32, length: Int) throws -> MappedFile
    /// Which file a descriptor is open on (device and inode), to tell whether a path still names that file.
    /// - Throws: ``Errno``.
    func identity(_ fd: Int32) throws -> FileIdentity
    /// Which file `path` names now and its size, from one `stat` following links; `nil` when nothing is there.
    func status(ofPath path: String) -> FileStatus?
}

/// Which file a path names and how large it is, read together.
public struct FileStatus: Sendable, Hashable {
    /// The file's device and inode.
    public var identity: FileIdentity
    /// Its size in bytes.
    public var size: Int64

    /// A status from `stat` fields.
    public init(identity: FileIdentity, size: Int64) {
        self.identity = identity
        self.size = size
    }
}

/// A file's device and inode: two descriptors or paths name the same file exactly when these are equal.
public struct FileIdentity: Sendable, Hashable {
    /// The device the file is on.
    public var device: UInt64
    /// The file's inode on that device.
    public var inode: UInt64

    /// An identity from `stat` fields.
    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

extension PlatformIO {
    /// Which file `path` names now (device and inode), following links; `nil` when nothing is there.
    public func identity(ofPath path: String) -> FileIdentity? { status(ofPath: path)?.identity }
    /// The size in bytes of the file `path` names now, following links; `nil` when nothing is there.
    public func size(ofPath path: String) -> Int64? { status(ofPath: path)?.size }
}
