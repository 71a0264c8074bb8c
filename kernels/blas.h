/* Which OpenBLAS kernel the trainer runs, and whether to trust it.
 *
 * Debian's OpenBLAS 0.3.21 does not recognize recent CPUs and falls back to
 * its SSE3 "Prescott" kernels, several times slower than what the CPU can
 * do. OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded, so
 * rung-train picks a kernel from cpuid and re-executes itself with the
 * variable set (unless the user set it). Once running, it checks the kernel
 * against a naive GEMM before trusting it. */
#ifndef RUNG_KERNELS_BLAS_H
#define RUNG_KERNELS_BLAS_H

#include <stdbool.h>
#include <stddef.h>

/* The best OpenBLAS core name this CPU supports, from cpuid: "SkylakeX"
 * (AVX-512 F, CD, BW, DQ, VL), "Haswell" (AVX2 and FMA), "Sandybridge"
 * (AVX), or NULL for OpenBLAS's own choice. */
const char *blas_best_core(void);

/* The core OpenBLAS runs now (openblas_get_corename()). */
const char *blas_core_name(void);

/* Sets OpenBLAS's thread count for the calling process. */
void blas_set_threads(int n);

/* Compares sgemm with ops_gemm_naive on a few shapes (including ragged
 * ones); false, with why filled, when any element differs by more than
 * 1e-4 + 1e-4 * |ref|. */
bool blas_check(char *why, size_t size);

#endif
