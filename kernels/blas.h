/* Which OpenBLAS kernel the trainer runs, and whether to trust it.
 *
 * rung-train picks a kernel from cpuid and re-executes itself with
 * OPENBLAS_CORETYPE set (common/blascore.h says why). Once running, it
 * checks the kernel against a naive GEMM before trusting it. */
#ifndef RUNG_KERNELS_BLAS_H
#define RUNG_KERNELS_BLAS_H

#include <stdbool.h>
#include <stddef.h>

/* The core OpenBLAS runs now (openblas_get_corename()). */
const char *blas_core_name(void);

/* Sets OpenBLAS's thread count for the calling process. */
void blas_set_threads(int n);

/* Compares sgemm with ops_gemm_naive on a few shapes (including ragged
 * ones); false, with why filled, when any element differs by more than
 * 1e-4 + 1e-4 * |ref|. */
bool blas_check(char *why, size_t size);

#endif
