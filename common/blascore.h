/* Which OpenBLAS kernel ("core") a program runs.
 *
 * Debian's OpenBLAS 0.3.21 does not recognize recent CPUs and falls back to
 * its SSE3 "Prescott" kernels, several times slower than what the CPU can
 * do. OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded, so a
 * program that wants the right kernel picks one from cpuid and
 * re-executes itself with the variable set (unless the user set it):
 * rung-train for its GEMMs (kernels/blas.h, which also checks the kernel
 * before trusting it), rungd for the Gaussian process of the bayes
 * searcher (sampler/gp.h, gp_check_blas). Nothing here calls OpenBLAS. */
#ifndef RUNG_COMMON_BLASCORE_H
#define RUNG_COMMON_BLASCORE_H

#include <stdbool.h>

/* The best OpenBLAS core name this CPU supports, from cpuid: "SkylakeX"
 * (AVX-512 F, CD, BW, DQ, VL), "Haswell" (AVX2 and FMA), "Sandybridge"
 * (AVX), or NULL for OpenBLAS's own choice. */
const char *blascore_best(void);

/* Re-executes the program (argv as main got it) with OPENBLAS_CORETYPE set
 * to blascore_best(), unless OPENBLAS_CORETYPE is set already or the
 * environment variable `marker` is (it is set on the re-executed process,
 * to the core, or to "default" when there was none to pick). Returns when
 * there is nothing to do or the exec failed. */
void blascore_pick(char **argv, const char *marker);

/* blascore_pick, which also sets the environment variable `name` to
 * `value` unless it is set already (another variable OpenBLAS reads when
 * it is loaded, such as OPENBLAS_THREAD_TIMEOUT): the program re-executes
 * once when either is new. */
void blascore_pick_with(char **argv, const char *marker, const char *name, const char *value);

/* After blascore_pick: whether the running core is the one it picked. */
bool blascore_picked(const char *marker);

/* After blascore_pick: how the running core was chosen, for a program's
 * start-up line: "picked from cpuid", "OPENBLAS_CORETYPE" (the user's) or
 * "OpenBLAS's own choice". */
const char *blascore_origin(const char *marker);

/* After a failed check of the picked core: re-executes without it, so that
 * OpenBLAS chooses (the marker stays set, so nothing is picked again).
 * Returns only when the exec failed. */
void blascore_unpick(char **argv);

#endif
