#include "CPlatform.h"

#if defined(__GLIBC__)
#include <malloc.h>
int cplatform_release_free_memory(void) { return malloc_trim(0); }
#else
int cplatform_release_free_memory(void) { return 0; }
#endif

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
int cplatform_populate_for_writing(void *address, size_t length) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t)address + page - 1) & ~(page - 1);
    uintptr_t end = ((uintptr_t)address + length) & ~(page - 1);
    if (end <= start) return -1;
    return madvise((void *)start, end - start, MADV_POPULATE_WRITE) == 0 ? 0 : -1;
}
#else
int cplatform_populate_for_writing(void *address, size_t length) {
    (void)address;
    (void)length;
    return -1;
}
#endif
