/* Which OpenBLAS kernel a program runs (blascore.h).
 *
 * blascore_best() reads cpuid the way OpenBLAS's own dynamic dispatch does
 * (driver/others/dynamic.c): an instruction set counts only when the CPU
 * has it and the OS saves its register state (XCR0, read with xgetbv),
 * since a kernel using registers the OS does not preserve would be
 * corrupted at the first context switch. */
#include "blascore.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* XCR0 state components (Intel SDM vol. 1, 13.1). */
#define XCR0_SSE (1u << 1)
#define XCR0_AVX (1u << 2)       /* upper halves of ymm0-15 */
#define XCR0_OPMASK (1u << 5)    /* k0-k7 */
#define XCR0_ZMM_HI256 (1u << 6) /* upper halves of zmm0-15 */
#define XCR0_HI16_ZMM (1u << 7)  /* zmm16-31 */

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

const char *blascore_best(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(1, 0, &a, &b, &c, &d))
        return NULL;
    bool osxsave = c & bit_OSXSAVE, avx = c & bit_AVX, fma = c & bit_FMA;
    if (!osxsave || !avx)
        return NULL;
    uint64_t xcr0 = xgetbv0();
    if ((xcr0 & (XCR0_SSE | XCR0_AVX)) != (XCR0_SSE | XCR0_AVX))
        return NULL;
    unsigned b7 = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d))
        b7 = b;
    const unsigned avx512 = bit_AVX512F | bit_AVX512CD | bit_AVX512BW | bit_AVX512DQ | bit_AVX512VL;
    const uint64_t zmm_state = XCR0_OPMASK | XCR0_ZMM_HI256 | XCR0_HI16_ZMM;
    if ((b7 & avx512) == avx512 && (xcr0 & zmm_state) == zmm_state)
        return "SkylakeX";
    if ((b7 & bit_AVX2) && fma)
        return "Haswell";
    return "Sandybridge";
}
#else
const char *blascore_best(void)
{
    return NULL; /* not x86: OpenBLAS's own choice */
}
#endif

void blascore_pick_with(char **argv, const char *marker, const char *name, const char *value)
{
    bool exec = false, picked = false;
    if (name != NULL && getenv(name) == NULL) {
        setenv(name, value, 1);
        exec = true;
    }
    if (getenv("OPENBLAS_CORETYPE") == NULL && getenv(marker) == NULL) {
        const char *best = blascore_best();
        setenv(marker, best ? best : "default", 1);
        if (best != NULL) {
            setenv("OPENBLAS_CORETYPE", best, 1);
            exec = picked = true;
        }
    }
    if (!exec)
        return;
    execv("/proc/self/exe", argv);
    if (picked) /* exec failed: carry on with OpenBLAS as it was loaded */
        unsetenv("OPENBLAS_CORETYPE");
}

void blascore_pick(char **argv, const char *marker)
{
    blascore_pick_with(argv, marker, NULL, NULL);
}

bool blascore_picked(const char *marker)
{
    const char *picked = getenv(marker);
    return getenv("OPENBLAS_CORETYPE") != NULL && picked != NULL && strcmp(picked, "default") != 0;
}

const char *blascore_origin(const char *marker)
{
    if (blascore_picked(marker))
        return "picked from cpuid";
    return getenv("OPENBLAS_CORETYPE") != NULL ? "OPENBLAS_CORETYPE" : "OpenBLAS's own choice";
}

void blascore_unpick(char **argv)
{
    unsetenv("OPENBLAS_CORETYPE");
    execv("/proc/self/exe", argv);
}
