/* The parts of a CUDA training run's plan that need no device: gradient
 * buckets, the search for the "auto" batch, and the rows of a rank's shard.
 * cuda/train_cuda.cu uses them; tests/unit/test_plan.c checks them on any
 * machine (docs/trainer.md, "GPUs").
 *
 * Pure functions: no allocation, no I/O; the batch search calls back into
 * its caller, which tries real allocations (or, in the test, a scripted
 * allocator). */
#ifndef RUNG_KERNELS_PLAN_H
#define RUNG_KERNELS_PLAN_H

#include <stddef.h>
#include <stdint.h>

/* A range of the gradient vector (floats) all-reduced in one call. */
typedef struct PlanBucket {
    size_t off, len;
} PlanBucket;

/* Buckets over a gradient vector of n floats made of L layers, layer l
 * starting at begin[l] (increasing; layer l ends where l+1 begins, the last
 * at n). Backward runs from layer L-1 down: layers join the open bucket
 * until it holds at least `bytes`, and layer 0 closes the last one, so a
 * bucket is whole, contiguous layers. closes[l] is the bucket that layer
 * l's backward completes, or -1. Returns the number of buckets, 1 to L;
 * bucket 0 holds the last layers. */
int plan_buckets(const size_t *begin, int L, size_t n, size_t bytes, PlanBucket *bucket,
                 int *closes);

/* Tries a batch: 0 when it fits (the caller keeps what it allocated), 1 when
 * it does not (the caller has freed what it got), -1 on any other error. */
typedef int (*PlanTryFn)(int64_t batch, void *ctx);

/* The "auto" batch: the largest power of two no greater than cap or n for
 * which try_batch returns 0, halving while it returns 1. Returns that
 * batch; 0 when not even a batch of 1 fits; -1 as soon as try_batch
 * returns -1. cap and n must be >= 1. */
int64_t plan_auto_batch(int64_t cap, int64_t n, PlanTryFn try_batch, void *ctx);

/* How many of a global batch's len samples rank r of k holds: positions r,
 * r + k, r + 2k, ... below len (data_shard's rule); 0 when len <= r. */
int64_t plan_shard_rows(int64_t len, int r, int k);

#endif
