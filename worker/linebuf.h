/* Splits a byte stream (a trial's stdout or stderr) into lines. Pure.
 *
 * Bytes are fed as they come from the pipe; each complete line is handed to
 * a callback without its '\n'. A line longer than the buffer's maximum is
 * handed over once, cut at the maximum and flagged, and the rest of it up to
 * the next '\n' is skipped, so a program printing without newlines cannot
 * make the worker's memory grow. */
#ifndef RUNG_WORKER_LINEBUF_H
#define RUNG_WORKER_LINEBUF_H

#include <stdbool.h>
#include <stddef.h>

/* Called once per line: line (len bytes, not NUL-terminated, borrowed for
 * the call); cut when the line was longer than the maximum. */
typedef void (*LinebufFn)(void *arg, const char *line, size_t len, bool cut);

typedef struct Linebuf {
    char *buf;     /* owned: the line so far */
    size_t len;    /* bytes in buf, <= max */
    size_t max;    /* longest line handed over whole */
    bool skipping; /* in the rest of a line that was cut */
} Linebuf;

/* 0, or -1 when out of memory. */
int linebuf_init(Linebuf *lb, size_t max);
void linebuf_close(Linebuf *lb);

/* Feeds n bytes; calls fn for every line they complete. */
void linebuf_feed(Linebuf *lb, const char *data, size_t n, LinebufFn fn, void *arg);
/* End of stream: hands over a last line that had no '\n'. */
void linebuf_flush(Linebuf *lb, LinebufFn fn, void *arg);

#endif
