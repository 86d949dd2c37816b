#define _GNU_SOURCE
#include "CPlatform.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <pthread.h>

// A fixed table, read by the signal handler without locks: base and length are published before `used`. Sized for a
// server's pool of open ledgers (1,024 by default, each holding its snapshot mapped) with room to spare: 128 KiB.
#define SLOTS 4096
static struct {
    _Atomic(uintptr_t) base;
    _Atomic(size_t) length;
    atomic_int used;
    atomic_int damaged;
} slots[SLOTS];

static struct sigaction previous;
static pthread_once_t installed = PTHREAD_ONCE_INIT;

static void on_sigbus(int signal, siginfo_t *info, void *context) {
    uintptr_t address = (uintptr_t)info->si_addr;
    for (int i = 0; i < SLOTS; i++) {
        if (atomic_load(&slots[i].used) != 1) continue;
        uintptr_t base = atomic_load(&slots[i].base);
        size_t length = atomic_load(&slots[i].length);
        if (address >= base && address - base < length) {
            uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
            void *start = (void *)(address & ~(page - 1));
            // A private page of zeros where the file ended; the access is retried and reads zeros.
            if (mmap(start, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
                atomic_store(&slots[i].damaged, 1);
                return;
            }
        }
    }
    // Not ours: whatever was installed before (the runtime's crash reporter, or the default) handles it.
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) { previous.sa_sigaction(signal, info, context); return; }
    } else if (previous.sa_handler != SIG_IGN && previous.sa_handler != SIG_DFL) {
        previous.sa_handler(signal);
        return;
    }
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigaction(SIGBUS, &fallback, NULL);  // returning re-runs the access, which now ends the process as usual
}

static void install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &previous);
}

int cplatform_guard_register(void *base, size_t length) {
    pthread_once(&installed, install);
    for (int i = 0; i < SLOTS; i++) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&slots[i].used, &expected, 2)) {
            atomic_store(&slots[i].base, (uintptr_t)base);
            atomic_store(&slots[i].length, length);
            atomic_store(&slots[i].damaged, 0);
            atomic_store(&slots[i].used, 1);
            return i;
        }
    }
    return -1;
}

void cplatform_guard_unregister(int slot) {
    if (slot < 0 || slot >= SLOTS) return;
    atomic_store(&slots[slot].used, 0);
}

int cplatform_guard_damaged(int slot) {
    if (slot < 0 || slot >= SLOTS) return 0;
    return atomic_load(&slots[slot].damaged);
}
