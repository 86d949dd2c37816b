#include "CPlatform.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <pthread.h>

int cplatform_crc32c_hardware(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}

// Three interleaved streams hide the instruction's 3-cycle latency (one result per cycle instead of one per three):
// a run of 3 × STRIDE bytes is split into thirds A, B, C, each folded from its own register, and the registers are
// joined with R(s, A·B·C) = shift(shift(R(s, A)) ^ R(0, B)) ^ R(0, C), where shift(x) advances a register through
// STRIDE zero bytes. shift is linear over GF(2), so it is four table lookups, the tables built once from the 32
// single-bit values.
#define STRIDE 4096
static uint32_t shift_table[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2")))
static uint32_t zeros(uint32_t crc, size_t length) {
    uint64_t c = crc;
    for (size_t i = 0; i < length / 8; i++) c = __builtin_ia32_crc32di(c, 0);
    return (uint32_t)c;
}

static void build_shift_table(void) {
    uint32_t basis[32];
    for (int bit = 0; bit < 32; bit++) basis[bit] = zeros((uint32_t)1 << bit, STRIDE);
    for (int k = 0; k < 4; k++) {
        shift_table[k][0] = 0;
        for (int b = 1; b < 256; b++) {
            shift_table[k][b] = shift_table[k][b & (b - 1)] ^ basis[8 * k + __builtin_ctz((unsigned)b)];
        }
    }
}

static inline uint32_t shift(uint32_t c) {
    return shift_table[0][c & 0xFF] ^ shift_table[1][(c >> 8) & 0xFF] ^ shift_table[2][(c >> 16) & 0xFF]
        ^ shift_table[3][c >> 24];
}

__attribute__((target("sse4.2")))
uint32_t cplatform_crc32c_extend(uint32_t state, const void *bytes, size_t length) {
    const unsigned char *p = bytes;
    uint64_t crc = state;
    if (length >= 3 * STRIDE) {
        pthread_once(&shift_once, build_shift_table);
        while (length >= 3 * STRIDE) {
            uint64_t a = crc, b = 0, c = 0;
            for (size_t i = 0; i < STRIDE; i += 8) {
                uint64_t wa, wb, wc;
                __builtin_memcpy(&wa, p + i, 8);
                __builtin_memcpy(&wb, p + STRIDE + i, 8);
                __builtin_memcpy(&wc, p + 2 * STRIDE + i, 8);
                a = __builtin_ia32_crc32di(a, wa);
                b = __builtin_ia32_crc32di(b, wb);
                c = __builtin_ia32_crc32di(c, wc);
            }
            crc = shift(shift((uint32_t)a) ^ (uint32_t)b) ^ (uint32_t)c;
            p += 3 * STRIDE;
            length -= 3 * STRIDE;
        }
    }
    while (length >= 8) {
        uint64_t word;
        __builtin_memcpy(&word, p, 8);
        crc = __builtin_ia32_crc32di(crc, word);
        p += 8;
        length -= 8;
    }
    uint32_t c = (uint32_t)crc;
    while (length > 0) {
        c = __builtin_ia32_crc32qi(c, *p);
        p++;
        length--;
    }
    return c;
}

#elif defined(__aarch64__)
#if defined(__linux__)
#include <sys/auxv.h>
#include <asm/hwcap.h>
int cplatform_crc32c_hardware(void) { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
#else
int cplatform_crc32c_hardware(void) { return 1; }  // every Apple ARM CPU has it
#endif

__attribute__((target("crc")))
uint32_t cplatform_crc32c_extend(uint32_t state, const void *bytes, size_t length) {
    const unsigned char *p = bytes;
    uint32_t crc = state;
    while (length >= 8) {
        uint64_t word;
        __builtin_memcpy(&word, p, 8);
        crc = __builtin_arm_crc32cd(crc, word);
        p += 8;
        length -= 8;
    }
    while (length > 0) {
        crc = __builtin_arm_crc32cb(crc, *p);
        p++;
        length--;
    }
    return crc;
}

#else
int cplatform_crc32c_hardware(void) { return 0; }
uint32_t cplatform_crc32c_extend(uint32_t state, const void *bytes, size_t length) {
    (void)bytes;
    (void)length;
    return state;
}
#endif
