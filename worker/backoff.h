/* Retry delays: exponential backoff with jitter. Pure: the caller keeps the
 * random state, so the schedule is unit-tested without sleeping.
 *
 * Retry k (0-based) waits a delay drawn uniformly from [d/2, d], where
 * d = min(cap, base * 2^k). The jitter spreads the retries of many workers
 * that lost the daemon at the same moment, so they do not all knock on the
 * restarted daemon in the same millisecond; the lower bound d/2 keeps the
 * schedule growing. */
#ifndef RUNG_WORKER_BACKOFF_H
#define RUNG_WORKER_BACKOFF_H

#include <stdint.h>

#define BACKOFF_BASE_MS 100 /* first retry: 50..100 ms; a refused connection costs nothing */
#define BACKOFF_CAP_MS 4000 /* a restarted daemon is found again within 4 s */

/* Seeds a generator state (never 0) from seed. */
uint64_t backoff_seed(uint64_t seed);

/* The next 64 random bits of *state (xorshift64*). */
uint64_t backoff_random(uint64_t *state);

/* Milliseconds to wait before retry number `retry` (0 = the first retry),
 * as described above; base_ms >= 1 and cap_ms >= base_ms. */
int64_t backoff_delay_ms(int retry, int64_t base_ms, int64_t cap_ms, uint64_t *state);

#endif
