/* The last lines of a trial's stderr, kept for its error text (docs/api.md: a
 * failed trial's error is "the last lines of stderr"). Pure.
 *
 * Bounded both ways: at most TAIL_MAX_LINES lines and TAIL_MAX_BYTES bytes
 * of text; older lines go first. A single line longer than the byte bound
 * keeps its head. */
#ifndef RUNG_WORKER_TAIL_H
#define RUNG_WORKER_TAIL_H

#include <stddef.h>

#define TAIL_MAX_LINES 40   /* a Python traceback fits */
#define TAIL_MAX_BYTES 4096 /* well under the server's 8 KiB of error text */

typedef struct Tail {
    char *lines[TAIL_MAX_LINES]; /* owned, a ring from first */
    size_t lens[TAIL_MAX_LINES];
    int first, n;
    size_t bytes; /* sum of lens plus one '\n' between lines */
} Tail;

void tail_init(Tail *t);
void tail_close(Tail *t);

/* Adds a line (len bytes, no newline); a trailing '\r' is dropped. */
void tail_add(Tail *t, const char *line, size_t len);

/* The lines joined by '\n', no trailing newline; "" when empty. New string
 * (free with free), NULL when out of memory. */
char *tail_text(const Tail *t);

#endif
