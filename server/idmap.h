/* IdMap: positive int64 ids to pointers, an open-addressing hash table with
 * linear probing and backward-shift deletion (no tombstones, so a map that
 * sees many inserts and removes stays short). The core keeps its in-flight
 * trials and workers here: ids grow without bound over a daemon's life,
 * while the objects in memory at once stay few, so a table indexed by id
 * would grow with history. */
#ifndef RUNG_SERVER_IDMAP_H
#define RUNG_SERVER_IDMAP_H

#include <stdint.h>

typedef struct IdMapSlot {
    int64_t id; /* 0 = empty */
    void *ptr;
} IdMapSlot;

typedef struct IdMap {
    IdMapSlot *slots;
    int64_t cap; /* a power of two, or 0 */
    int64_t len;
} IdMap;

void *idmap_get(const IdMap *m, int64_t id);     /* NULL when absent */
void idmap_put(IdMap *m, int64_t id, void *ptr); /* id >= 1; replaces */
void *idmap_remove(IdMap *m, int64_t id);        /* the removed pointer, or NULL */
void idmap_free(IdMap *m);

/* Iteration: for (int64_t i = 0; i < m->cap; i++) if (m->slots[i].id) ...
 * (no insert or remove meanwhile). */

#endif
