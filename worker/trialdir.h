/* Trial folders, <workdir>/trials/<trial id> (RUNG_TRIAL_DIR): made and held
 * by a running trial's supervisor (trial_supervise.c), removed by --keep-trials
 * (worker.c, which prune.h tells what to remove).
 *
 * The holder of a folder keeps a shared flock on it while the trial runs
 * and delivers; a removal takes the lock exclusively, without waiting, and
 * leaves a folder that is held. Several worker processes may share a
 * --workdir, so the folder of a trial this worker ended may be in use by
 * another worker that runs the trial's next attempt: the lock keeps it. A
 * holder that got its lock on a folder removed meanwhile makes it again.
 *
 * The removal never leaves the folder: it walks it with descriptors
 * (openat with O_NOFOLLOW, unlinkat), so a symbolic link is removed and not
 * followed, and it does not cross into another file system (a mount inside
 * the folder is left, and so is the folder). */
#ifndef RUNG_WORKER_TRIALDIR_H
#define RUNG_WORKER_TRIALDIR_H

#include <stddef.h>
#include <stdint.h>

/* Makes (when absent) and opens the folder of trial id under trials_dir,
 * and takes its shared lock; path (path_size bytes) gets its path. The
 * descriptor, or -1 with why. Closing it releases the lock. */
int trialdir_open(const char *trials_dir, int64_t id, char *path, size_t path_size, char *why,
                  size_t why_size);

/* Removes the folder of trial id under trials_dir and everything in it.
 * 0 when it is gone (or was not there), 1 when it is held (left as it is),
 * -1 with why when something could not be removed. */
int trialdir_remove(const char *trials_dir, int64_t id, char *why, size_t why_size);

/* The old layout's folders, <trials_dir>/trials/<id> (rung-worker.service
 * once passed --workdir .../trials, so the worker's own trials/ was made
 * inside it), moved up to <trials_dir>/<id>, where a worker upgraded in
 * place looks for its paused trials. A folder whose id is taken in the new
 * place stays where it is (named in why); the old folder is removed once
 * empty. The count moved, or -1 with why when the old folder cannot be
 * read; why is "" when all went well. */
int trialdir_adopt_old_layout(const char *trials_dir, char *why, size_t why_size);

#endif
