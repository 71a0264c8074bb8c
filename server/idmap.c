/* IdMap; see idmap.h. */
#include "idmap.h"

#include <stdbool.h>
#include <stdlib.h>

static int64_t slot_of(const IdMap *m, int64_t id)
{
    /* Fibonacci hashing: consecutive ids spread over the table. */
    uint64_t h = (uint64_t)id * 0x9e3779b97f4a7c15ULL;
    return (int64_t)(h >> 16) & (m->cap - 1);
}

void *idmap_get(const IdMap *m, int64_t id)
{
    if (m->cap == 0 || id <= 0)
        return NULL;
    for (int64_t i = slot_of(m, id);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].id == id)
            return m->slots[i].ptr;
        if (m->slots[i].id == 0)
            return NULL;
    }
}

static void grow(IdMap *m)
{
    IdMap bigger = {.cap = m->cap ? m->cap * 2 : 64};
    bigger.slots = calloc((size_t)bigger.cap, sizeof *bigger.slots);
    if (bigger.slots == NULL)
        abort();
    for (int64_t i = 0; i < m->cap; i++)
        if (m->slots[i].id != 0)
            idmap_put(&bigger, m->slots[i].id, m->slots[i].ptr);
    free(m->slots);
    *m = bigger;
}

void idmap_put(IdMap *m, int64_t id, void *ptr)
{
    if ((m->len + 1) * 4 > m->cap * 3) /* at most 3/4 full */
        grow(m);
    int64_t i = slot_of(m, id);
    while (m->slots[i].id != 0 && m->slots[i].id != id)
        i = (i + 1) & (m->cap - 1);
    if (m->slots[i].id == 0)
        m->len++;
    m->slots[i] = (IdMapSlot){id, ptr};
}

void *idmap_remove(IdMap *m, int64_t id)
{
    if (m->cap == 0 || id <= 0)
        return NULL;
    int64_t i = slot_of(m, id);
    while (m->slots[i].id != id) {
        if (m->slots[i].id == 0)
            return NULL;
        i = (i + 1) & (m->cap - 1);
    }
    void *ptr = m->slots[i].ptr;
    /* Backward shift: move later entries of the run into the hole when
     * their home slot lies at or before it, so lookups never stop early. */
    for (int64_t j = (i + 1) & (m->cap - 1); m->slots[j].id != 0; j = (j + 1) & (m->cap - 1)) {
        int64_t home = slot_of(m, m->slots[j].id);
        bool move = ((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1));
        if (move) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i] = (IdMapSlot){0, NULL};
    m->len--;
    return ptr;
}

void idmap_free(IdMap *m)
{
    free(m->slots);
    *m = (IdMap){0};
}
