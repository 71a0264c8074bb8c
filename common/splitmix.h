/* splitmix64: the one definition of the counter-based draw that
 * rung-train's dropout masks, initial weights and data orders, the worker's
 * backoff seed and ASHA's bracket of a trial are all made of. Results are
 * functions of (key, counter) alone, so they repeat after a restart and
 * agree between backends and ranks (docs/trainer.md, "Data";
 * docs/schedulers.md on the bracket drawn from the experiment's seed and
 * the trial's number); changing a constant here changes every one of them.
 *
 *   state k of a stream keyed by `key`:  key + k * RUNG_SPLITMIX_GAMMA
 *   its output:                          rung_splitmix_mix(state)
 *
 * Header only, and usable from CUDA: every function is RUNG_HD, which is
 * __host__ __device__ inline under nvcc and static inline in C (the same
 * macro as kernels/ops_math.h, which includes this header). */
#ifndef RUNG_COMMON_SPLITMIX_H
#define RUNG_COMMON_SPLITMIX_H

#include <stdint.h>

#ifndef RUNG_HD
#ifdef __CUDACC__
#define RUNG_HD __host__ __device__ inline
#else
#define RUNG_HD static inline
#endif
#endif

/* The increment between consecutive states: 2^64 / golden ratio, odd. */
#define RUNG_SPLITMIX_GAMMA 0x9e3779b97f4a7c15ULL

/* splitmix64's output function: a bijection of 64-bit words in which every
 * input bit flips about half the output bits, so consecutive counters give
 * unrelated outputs. */
RUNG_HD uint64_t rung_splitmix_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Output k (k >= 1) of the stream keyed by `key`: mix(key + k * gamma),
 * what the k-th rung_splitmix_next of a state that starts at `key` returns,
 * computed without stepping. */
RUNG_HD uint64_t rung_splitmix_at(uint64_t key, uint64_t k)
{
    return rung_splitmix_mix(key + RUNG_SPLITMIX_GAMMA * k);
}

/* One step: advances *state by gamma and returns the mix of the new state. */
RUNG_HD uint64_t rung_splitmix_next(uint64_t *state)
{
    *state += RUNG_SPLITMIX_GAMMA;
    return rung_splitmix_mix(*state);
}

/* The classic one-call splitmix64(x): the first output of the stream keyed
 * by x, a hash of one word (rung_splitmix_at(x, 1)). */
RUNG_HD uint64_t rung_splitmix64(uint64_t x)
{
    return rung_splitmix_mix(x + RUNG_SPLITMIX_GAMMA);
}

#endif
