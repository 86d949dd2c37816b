#include "CPlatform.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

int cplatform_crc32c_hardware(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}

static int has_pclmul(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_PCLMUL) != 0;
}

// Folding with carry-less multiplication (PCLMULQDQ), for long runs: four 16-byte lanes are carried forward 64 bytes
// at a time, independent of each other, so the speed is the memory's rather than the CRC instruction's latency.
//
// Conventions (reflected CRC): a lane X loaded little-endian whose last bit is the coefficient of x^E stands for
// x^E · X'(x), X' = x^64·A + B with A its low 64 bits and B its high 64 bits, each read bit j ↔ x^(63-j). Carrying a
// lane D bits forward needs Y' ≡ x^D·X' (mod P); clmul(a, k) of two such 64-bit values is the 128-bit lane of
// x·A·K, so the constants are K1 = x^(D+63) mod P for the low half and K2 = x^(D-1) mod P for the high half,
// each as the 32-bit register value of that remainder shifted left by 32. After the last fold the single lane is
// congruent to the whole message, so the CRC instruction over its 16 bytes finishes the job (no Barrett reduction).
// The constants are computed, not copied: x^n mod P by n multiplications by x of the reflected register.
static uint64_t x_power_mod_p(unsigned n) {
    uint32_t r = 0x80000000u;  // the polynomial 1
    for (unsigned i = 0; i < n; i++) r = (r >> 1) ^ ((r & 1) ? 0x82F63B78u : 0);
    return (uint64_t)r << 32;
}

__attribute__((target("sse4.2,pclmul")))
static inline __m128i fold(__m128i x, __m128i k) {
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

__attribute__((target("sse4.2,pclmul")))
static uint32_t crc32c_pclmul(uint32_t state, const unsigned char *p, size_t length, size_t *used) {
    static __m128i k512, k128;
    static int ready;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        // Racing threads compute the same values; the flag is published after them.
        k512 = _mm_set_epi64x((long long)x_power_mod_p(512 - 1), (long long)x_power_mod_p(512 + 63));
        k128 = _mm_set_epi64x((long long)x_power_mod_p(128 - 1), (long long)x_power_mod_p(128 + 63));
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    __m128i x0 = _mm_loadu_si128((const __m128i *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)state));  // a starting state is the first four bytes xored
    size_t at = 64;
    while (length - at >= 64) {
        x0 = _mm_xor_si128(fold(x0, k512), _mm_loadu_si128((const __m128i *)(p + at)));
        x1 = _mm_xor_si128(fold(x1, k512), _mm_loadu_si128((const __m128i *)(p + at + 16)));
        x2 = _mm_xor_si128(fold(x2, k512), _mm_loadu_si128((const __m128i *)(p + at + 32)));
        x3 = _mm_xor_si128(fold(x3, k512), _mm_loadu_si128((const __m128i *)(p + at + 48)));
        at += 64;
    }
    x1 = _mm_xor_si128(x1, fold(x0, k128));
    x2 = _mm_xor_si128(x2, fold(x1, k128));
    x3 = _mm_xor_si128(x3, fold(x2, k128));
    uint64_t crc = __builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(x3));
    crc = __builtin_ia32_crc32di(crc, (uint64_t)_mm_extract_epi64(x3, 1));
    *used = at;
    return (uint32_t)crc;
}

__attribute__((target("sse4.2")))
uint32_t cplatform_crc32c_extend(uint32_t state, const void *bytes, size_t length) {
    static int pclmul = -1;
    const unsigned char *p = bytes;
    uint64_t crc = state;
    if (length >= 256) {
        int known = __atomic_load_n(&pclmul, __ATOMIC_RELAXED);
        if (known < 0) {
            known = has_pclmul();
            __atomic_store_n(&pclmul, known, __ATOMIC_RELAXED);
        }
        if (known) {
            size_t used = 0;
            crc = crc32c_pclmul(state, p, length, &used);
            p += used;
            length -= used;
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
