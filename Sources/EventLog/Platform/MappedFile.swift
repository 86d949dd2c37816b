#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif
import CPlatform

/// A file mapped read-only into memory, unmapped when the last reference goes.
///
/// Files the ledger maps are only ever replaced by rename, so the mapping keeps the old file alive and valid. Should
/// another program truncate a mapped file anyway, the pages past its new end read as zeros (a SIGBUS guard maps a
/// zero page there) and ``isDamaged`` turns true: the process never dies of it, and callers drop the mapping.
public final class MappedFile: @unchecked Sendable {
    /// The mapped bytes (empty for an empty file).
    public let bytes: UnsafeRawBufferPointer
    private let guardSlot: Int32

    init(bytes: UnsafeRawBufferPointer, guardSlot: Int32) {
        self.bytes = bytes
        self.guardSlot = guardSlot
    }

    /// Whether a page of the mapping was cut off under the process (it then reads zeros).
    public var isDamaged: Bool { guardSlot >= 0 && cplatform_guard_damaged(guardSlot) == 1 }

    /// Drops a range's pages from the process (they stay in the page cache and are read again when touched):
    /// checking a large file page by page then costs no resident memory.
    /// - Parameter range: byte offsets within ``bytes``; rounded inward to whole pages.
    public func release(_ range: Range<Int>) {
        guard let base = bytes.baseAddress, !range.isEmpty else { return }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = (range.lowerBound + page - 1) / page * page
        let end = range.upperBound == bytes.count ? range.upperBound : range.upperBound / page * page
        guard start < end else { return }
        _ = madvise(UnsafeMutableRawPointer(mutating: base + start), end - start, MADV_DONTNEED)
    }

    deinit {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        cplatform_guard_unregister(guardSlot)
        munmap(UnsafeMutableRawPointer(mutating: base), bytes.count)
    }
}

extension SystemIO {
    public func map(_ fd: Int32, length: Int) throws -> MappedFile {
        guard length > 0 else { return MappedFile(bytes: UnsafeRawBufferPointer(start: nil, count: 0), guardSlot: -1) }
        guard let base = mmap(nil, length, PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else { throw Errno.current }
        let slot = cplatform_guard_register(base, length)
        guard slot >= 0 else {
            munmap(base, length)
            throw Errno.outOfMemory
        }
        return MappedFile(bytes: UnsafeRawBufferPointer(start: base, count: length), guardSlot: slot)
    }
}
