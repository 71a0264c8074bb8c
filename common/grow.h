/* Growing arrays: the daemon's tables only grow, and a daemon that cannot
 * grow them cannot keep its promises, so running out of memory aborts. */
#ifndef RUNG_COMMON_GROW_H
#define RUNG_COMMON_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Grows *arr (of elem bytes each, *cap of them) so that index `need` fits,
 * doubling from 16 and zeroing the new part. */
static inline void rung_grow(void **arr, int64_t *cap, int64_t need, size_t elem)
{
    if (need < *cap)
        return;
    int64_t n = *cap ? *cap : 16;
    while (n <= need)
        n *= 2;
    void *p = realloc(*arr, (size_t)n * elem);
    if (p == NULL)
        abort();
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(n - *cap) * elem);
    *arr = p;
    *cap = n;
}

/* realloc that aborts on failure (for arrays grown in step with another). */
static inline void *rung_realloc(void *p, size_t n, size_t elem)
{
    void *q = realloc(p, n * elem);
    if (q == NULL)
        abort();
    return q;
}

#endif
