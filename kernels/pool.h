/* A fork-join pool for the CPU trainer's elementwise work (docs/trainer.md,
 * "Threads").
 *
 * rung-train's GEMMs run on OpenBLAS's threads, but what lies between them
 * (gathering a batch's rows, the optimizer's update) ran on the rank's own
 * thread alone while OpenBLAS's other threads waited. pool_run splits such
 * a loop into parts, one per thread: part 0 on the caller, the others on
 * helpers that sleep between jobs. Each part works on its own elements, in
 * the same order as the whole loop would, so the results are the same bits
 * whatever the number of parts. */
#ifndef RUNG_KERNELS_POOL_H
#define RUNG_KERNELS_POOL_H

#include <stddef.h>

#define POOL_MAX_THREADS 64

/* Part `part` of `parts` of a job (0 <= part < parts). */
typedef void (*PoolFn)(void *ctx, int part, int parts);

typedef struct Pool Pool;

/* A pool of `threads` threads, the caller included (threads - 1 helpers).
 * NULL when threads <= 1 or a helper cannot start: pool_run then runs the
 * whole job on the caller, as one part. At most POOL_MAX_THREADS. */
Pool *pool_new(int threads);

/* Runs fn(ctx, part, parts) for every part, part 0 on the caller, and
 * returns once all are done. One job at a time: the caller of pool_run is
 * one thread. */
void pool_run(Pool *pool, PoolFn fn, void *ctx);

/* The number of parts pool_run makes: 1 for NULL. */
int pool_parts(const Pool *pool);

/* [*lo, *hi): part `part` of `parts` of n items, in order, the sizes
 * differing by at most one. */
void pool_range(size_t n, int part, int parts, size_t *lo, size_t *hi);

/* Stops and joins the helpers; NULL is fine. */
void pool_free(Pool *pool);

#endif
