// The few things Swift cannot say itself: the CPU's CRC-32C instruction, a SIGBUS guard for mapped files, a
// cache prefetch hint, atomic bits in a shared bitmap, handing free memory back to the system, and the open flag
// Glibc declares only to GNU sources.
#ifndef CPLATFORM_H
#define CPLATFORM_H

#include <stddef.h>
#include <stdint.h>

/// Whether this CPU has a CRC-32C instruction (SSE 4.2 on x86-64, the CRC extension on ARMv8).
int cplatform_crc32c_hardware(void);

/// Extends a running (unfinalised) CRC-32C state with `length` bytes using the CPU instruction.
/// Call only when `cplatform_crc32c_hardware()` returned 1.
uint32_t cplatform_crc32c_extend(uint32_t state, const void *bytes, size_t length);

/// Registers a read-only mapping: a SIGBUS inside it (the file was truncated under the process) maps a page of
/// zeros over the faulting page and marks the region damaged instead of killing the process.
/// Returns a slot (>= 0), or -1 when every slot is taken (the caller must then not map).
int cplatform_guard_register(void *base, size_t length);

/// Forgets a registered mapping (before unmapping it).
void cplatform_guard_unregister(int slot);

/// Whether a SIGBUS hit the registered mapping since it was registered.
int cplatform_guard_damaged(int slot);

/// `O_NOATIME` where the system has it, else 0.
int cplatform_no_access_time_flag(void);

/// Asks the CPU to start loading the cache line at `address` into its caches: a hint (no fault, no effect on any
/// result), which a replay gives a few events ahead for the hash slots those events will probe.
static inline void cplatform_prefetch(const void *address) { __builtin_prefetch(address, 0, 3); }

/// Whether bit `index` of a bitmap shared between threads is set (an acquire load: what the thread that set it
/// wrote before is seen). The snapshot reader keeps one bit per checked 4 KiB piece.
static inline int cplatform_bit_test(const uint64_t *words, size_t index) {
    return (int)((__atomic_load_n(&words[index >> 6], __ATOMIC_ACQUIRE) >> (index & 63)) & 1);
}

/// Sets bit `index` of a bitmap shared between threads (a release read-modify-write).
static inline void cplatform_bit_set(uint64_t *words, size_t index) {
    __atomic_fetch_or(&words[index >> 6], (uint64_t)1 << (index & 63), __ATOMIC_RELEASE);
}

/// Returns the allocator's free memory to the system where whole pages are free (glibc's `malloc_trim`; 0
/// elsewhere). Returns 1 if memory was released.
int cplatform_release_free_memory(void);

/// Makes the whole pages inside `[address, address + length)` resident and writable as a write to each would, without
/// writing (Linux's `MADV_POPULATE_WRITE`, 5.14 and later; nothing elsewhere, or where the kernel lacks it): the
/// contents are unchanged, so another thread may be writing there meanwhile. Returns 0, or -1 when nothing was done.
int cplatform_populate_for_writing(void *address, size_t length);

/// Fills `count` bytes with the kernel's cryptographically secure random bytes (`getrandom`, or `arc4random_buf`
/// on Darwin), retrying short and interrupted reads. Returns 0, or -1 when the source failed.
int cplatform_random_bytes(void *bytes, size_t count);

#endif
