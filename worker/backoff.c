/* Retry delays; see backoff.h. */
#include "backoff.h"

#include "splitmix.h"

uint64_t backoff_seed(uint64_t seed)
{
    /* splitmix64 of the seed, so that nearby seeds (pids, times) give
     * unrelated sequences; xorshift's state must not be 0. */
    uint64_t z = rung_splitmix64(seed);
    return z ? z : 0x2545f4914f6cdd1dULL;
}

uint64_t backoff_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dULL;
}

int64_t backoff_delay_ms(int retry, int64_t base_ms, int64_t cap_ms, uint64_t *state)
{
    if (base_ms < 1)
        base_ms = 1;
    if (cap_ms < base_ms)
        cap_ms = base_ms;
    int64_t d = base_ms;
    for (int i = 0; i < retry && d < cap_ms; i++)
        d *= 2; /* stops doubling at the cap: no overflow however large retry is */
    if (d > cap_ms)
        d = cap_ms;
    int64_t low = d / 2;
    return low + (int64_t)(backoff_random(state) % (uint64_t)(d - low + 1));
}
