/* Which trial folders `rung-worker --keep-trials N` removes (docs/api.md,
 * "Command lines"). Pure: the folders themselves are removed by trialdir.c.
 *
 * The worker lists each trial it ran that has ended: its id, when it ended,
 * and whether rungd answered its finish with the trial paused (its
 * checkpoint waits in the folder for a resume). Running trials are not in
 * the list. Paused trials are always kept and do not count; of the others,
 * the keep newest (latest ended first, the higher id first on a tie) are
 * kept and the rest removed. */
#ifndef RUNG_WORKER_PRUNE_H
#define RUNG_WORKER_PRUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct PruneEntry {
    int64_t id;
    int64_t ended; /* any clock that grows: later is newer */
    bool paused;
} PruneEntry;

/* Reorders the n entries so that those to keep come first (the paused ones,
 * then the kept ended ones, newest first) and those to remove after, also
 * newest first. Returns how many are kept. */
size_t prune_select(PruneEntry *entries, size_t n, size_t keep);

#endif
