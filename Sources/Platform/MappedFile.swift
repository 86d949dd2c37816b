import CPlatform

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#endif

/// A file mapped read-only into memory, unmapped when the last reference goes.
///
/// Files the ledger maps are only ever replaced by rename, so the mapping keeps the old file alive and valid. Should
/// another program truncate a mapped file anyway, the pages past its new end read as zeros (a SIGBUS guard maps a
/// zero page there) and ``isDamaged`` turns true: the process never dies of it, and callers drop the mapping.
// @unchecked Sendable: the mapping is read-only and never changes after init; its damage flag lives in the C guard,
// which is read and set atomically.
public final class MappedFile: @unchecked Sendable {
    /// The mapped bytes (empty for an empty file).
    public let bytes: UnsafeRawBufferPointer
    private let guardSlot: Int32

    init(bytes: UnsafeRawBufferPointer, guardSlot: Int32) {
        self.bytes = bytes
        self.guardSlot = guardSlot
    }

    /// The size from which a file is mapped one page past a 2 MiB boundary (see `SystemIO.map(_:length:)`).
    static let offBoundaryFrom = 32 << 20

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
        let base = try Self.placeOffHugePages(length: length) { address, flags in
            guard let base = mmap(address, length, PROT_READ, MAP_PRIVATE | flags, fd, 0), base != MAP_FAILED else {
                throw Errno.current
            }
            return base
        }
        let slot = cplatform_guard_register(base, length)
        guard slot >= 0 else {
            munmap(base, length)
            throw Errno.outOfMemory
        }
        return MappedFile(bytes: UnsafeRawBufferPointer(start: base, count: length), guardSlot: slot)
    }

    /// Maps a file of `length` bytes, one page past a 2 MiB boundary when it is 32 MiB or more.
    ///
    /// The kernel places large file mappings on 2 MiB boundaries, and where the page cache holds the file in 2 MiB
    /// folios (ext4 on Linux 6.16 and later) one read then maps all 2 MiB of them at once: a few thousand lookups at
    /// random places make a whole large snapshot resident. Off the boundary, a read maps the kernel's fault-around
    /// window (64 KiB) instead. Below 32 MiB the whole file resident is little, and the fewer, larger faults are
    /// faster (2 ms of a 5 ms open at 100,000 events), so placement is left to the kernel. A reservation of
    /// `length` + 2 MiB is taken first, the file mapped over it, the rest given back.
    /// - Parameter map: maps the file at an address, with extra flags (`MAP_FIXED`; none when placement is left to the
    ///   kernel).
    private static func placeOffHugePages(
        length: Int, _ map: (UnsafeMutableRawPointer?, Int32) throws -> UnsafeMutableRawPointer
    )
        throws -> UnsafeMutableRawPointer
    {
        let huge = 2 << 20
        guard length >= MappedFile.offBoundaryFrom else { return try map(nil, 0) }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let span = length + huge
        guard let reserved = mmap(nil, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0),
            reserved != MAP_FAILED
        else { throw Errno.current }
        let low = Int(bitPattern: reserved)
        let start = (low + huge - 1) / huge * huge + page
        let base: UnsafeMutableRawPointer
        do {
            base = try map(UnsafeMutableRawPointer(bitPattern: start), MAP_FIXED)
        } catch {
            munmap(reserved, span)
            throw error
        }
        let end = start + (length + page - 1) / page * page
        if start > low { munmap(reserved, start - low) }
        if low + span > end { munmap(UnsafeMutableRawPointer(bitPattern: end), low + span - end) }
        return base
    }
}
