/* Checkpoints of a training run in the trial's folder (RUNG_TRIAL_DIR):
 * parameters, optimizer state and the global step after an epoch. The data
 * order and dropout masks are counter-based functions of (seed, epoch), so
 * the epoch number is all the random state there is: a resumed run repeats
 * an uninterrupted one exactly.
 *
 * File ckpt-<epoch>.bin: "RUNGCKPT", version, counts, then the arrays, then
 * a CRC-32 of everything before it. Written to a temporary name and renamed;
 * the checkpoint two epochs back is removed (ASHA's promote variant resumes
 * from the epoch a trial paused at, and a trial may finish one more epoch
 * before its SIGTERM). */
#ifndef RUNG_KERNELS_CHECKPOINT_H
#define RUNG_KERNELS_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

int checkpoint_save(const char *dir, int64_t epoch, const float *params, const float *opt1,
                    const float *opt2, size_t n, int64_t step, char *why, size_t size);

/* Loads ckpt-<epoch>.bin; fails (why filled) when it is missing, corrupt, or
 * made for another model size. */
int checkpoint_load(const char *dir, int64_t epoch, float *params, float *opt1, float *opt2,
                    size_t n, int64_t *step, char *why, size_t size);

#endif
