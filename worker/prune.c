/* The selection of trial folders to remove; see prune.h. */
#include "prune.h"

#include <stdlib.h>

/* Paused first, then newest first. */
static int order(const void *pa, const void *pb)
{
    const PruneEntry *a = pa, *b = pb;
    if (a->paused != b->paused)
        return a->paused ? -1 : 1;
    if (a->ended != b->ended)
        return a->ended > b->ended ? -1 : 1;
    if (a->id != b->id)
        return a->id > b->id ? -1 : 1;
    return 0;
}

size_t prune_select(PruneEntry *entries, size_t n, size_t keep)
{
    if (n == 0)
        return 0;
    qsort(entries, n, sizeof *entries, order);
    size_t paused = 0;
    while (paused < n && entries[paused].paused)
        paused++;
    size_t ended = n - paused;
    return paused + (ended < keep ? ended : keep);
}
