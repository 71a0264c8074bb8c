/* Checkpoints of a training run in the trial's folder (RUNG_TRIAL_DIR):
 * parameters, optimizer state and the global step after an epoch. The data
 * order and dropout masks are counter-based functions of (seed, epoch), so
 * the epoch number is all the random state there is: a resumed run repeats
 * an uninterrupted one exactly.
 *
 * File ckpt-<epoch>.bin: "RUNGCKPT", version, counts, then the arrays, then
 * a CRC-32 of everything before it. Written to a temporary name and renamed.
 * Every epoch's file is kept while the run may be resumed: ASHA's promote
 * variant resumes from the epoch a trial paused at, and a small model may
 * train several more epochs before the SIGTERM arrives. rung-train prunes
 * what can no longer be needed (checkpoint_prune). */
#ifndef RUNG_KERNELS_CHECKPOINT_H
#define RUNG_KERNELS_CHECKPOINT_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

int checkpoint_save(const char *dir, int64_t epoch, const float *params, const float *opt1,
                    const float *opt2, size_t n, int64_t step, char *why, size_t size);

/* Removes ckpt-<e>.bin for every e < below: when a run resumes after epoch
 * `below` (resumes only move forward), and when it has finished (below =
 * the last epoch). With keep_every > 0 the files of multiples of keep_every
 * stay: a pbt population's other members may still copy them
 * (RUNG_KEEP_CHECKPOINTS_EVERY, docs/schedulers.md "pbt"). Missing files
 * are fine. */
void checkpoint_prune(const char *dir, int64_t below, int64_t keep_every);

/* Whether ckpt-<epoch>.bin is in dir (NULL dir: no). A promoted trial that
 * lands where its checkpoint is not (another worker, or a run that finished
 * on its own and kept only its last) starts over, as docs/api.md asks of
 * every trainable. */
bool checkpoint_exists(const char *dir, int64_t epoch);

/* Loads ckpt-<epoch>.bin; fails (why filled) when it is missing, corrupt, or
 * made for another model size. */
int checkpoint_load(const char *dir, int64_t epoch, float *params, float *opt1, float *opt2,
                    size_t n, int64_t *step, char *why, size_t size);

#endif
