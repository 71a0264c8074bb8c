/* Counter-based random numbers for the searchers.
 *
 * Random search must be a pure function of (seed, trial number): a restarted
 * daemon proposes trial n again without replaying trials 0..n-1, and two
 * proposals made in any order agree. So there is no generator state: each
 * draw hashes its keys with splitmix64's finalizer, a bijection on 64 bits
 * whose output passes BigCrush when fed a counter. */
#include "sampler_internal.h"

/* splitmix64 (Steele, Lea, Flood 2014): the golden-ratio increment, then
 * the variant-13 mixer. */
static uint64_t mix64(uint64_t z)
{
    z += UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

uint64_t sampler__hash(uint64_t seed, uint64_t stream, uint64_t number, uint64_t dim)
{
    /* Chaining the keys through the mixer makes every bit of the result
     * depend on every key; for a fixed prefix each step is a bijection, so
     * different numbers (or dims) of one seed never collide. */
    return mix64(mix64(mix64(mix64(seed) ^ stream) ^ number) ^ dim);
}

double sampler__uniform(uint64_t seed, uint64_t number, uint64_t dim)
{
    /* The top 53 bits fill a double's mantissa: a multiple of 2^-53 in [0, 1). */
    uint64_t bits = sampler__hash(seed, SAMPLER_STREAM_RANDOM, number, dim) >> 11;
    return (double)bits * 0x1.0p-53;
}
