/* The stderr tail; see tail.h. */
#include "tail.h"

#include <stdlib.h>
#include <string.h>

void tail_init(Tail *t)
{
    memset(t, 0, sizeof *t);
}

void tail_close(Tail *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->lines[(t->first + i) % TAIL_MAX_LINES]);
    tail_init(t);
}

static void drop_oldest(Tail *t)
{
    int i = t->first;
    t->bytes -= t->lens[i] + (t->n > 1 ? 1 : 0);
    free(t->lines[i]);
    t->lines[i] = NULL;
    t->first = (t->first + 1) % TAIL_MAX_LINES;
    t->n--;
}

void tail_add(Tail *t, const char *line, size_t len)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len > TAIL_MAX_BYTES)
        len = TAIL_MAX_BYTES;
    while (t->n > 0 && (t->n == TAIL_MAX_LINES || t->bytes + 1 + len > TAIL_MAX_BYTES))
        drop_oldest(t);
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return; /* the tail is a courtesy: a line lost to memory pressure is no failure */
    memcpy(copy, line, len);
    copy[len] = '\0';
    int at = (t->first + t->n) % TAIL_MAX_LINES;
    t->lines[at] = copy;
    t->lens[at] = len;
    t->bytes += len + (t->n > 0 ? 1 : 0);
    t->n++;
}

char *tail_text(const Tail *t)
{
    char *out = malloc(t->bytes + 1);
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (int k = 0; k < t->n; k++) {
        int i = (t->first + k) % TAIL_MAX_LINES;
        if (k > 0)
            out[o++] = '\n';
        memcpy(out + o, t->lines[i], t->lens[i]);
        o += t->lens[i];
    }
    out[o] = '\0';
    return out;
}
