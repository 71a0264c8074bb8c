/* Line splitting; see linebuf.h. */
#include "linebuf.h"

#include <stdlib.h>
#include <string.h>

int linebuf_init(Linebuf *lb, size_t max)
{
    memset(lb, 0, sizeof *lb);
    lb->max = max ? max : 1;
    lb->buf = malloc(lb->max);
    return lb->buf ? 0 : -1;
}

void linebuf_close(Linebuf *lb)
{
    free(lb->buf);
    memset(lb, 0, sizeof *lb);
}

void linebuf_feed(Linebuf *lb, const char *data, size_t n, LinebufFn fn, void *arg)
{
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t chunk = nl ? (size_t)(nl - data) : n;
        if (lb->skipping) {
            /* nothing: the rest of a line that was cut */
        } else if (lb->len + chunk <= lb->max) {
            memcpy(lb->buf + lb->len, data, chunk);
            lb->len += chunk;
        } else {
            size_t room = lb->max - lb->len;
            memcpy(lb->buf + lb->len, data, room);
            fn(arg, lb->buf, lb->max, true);
            lb->len = 0;
            lb->skipping = true;
        }
        if (nl == NULL)
            return;
        if (!lb->skipping)
            fn(arg, lb->buf, lb->len, false);
        lb->len = 0;
        lb->skipping = false;
        data += chunk + 1;
        n -= chunk + 1;
    }
}

void linebuf_flush(Linebuf *lb, LinebufFn fn, void *arg)
{
    if (!lb->skipping && lb->len > 0)
        fn(arg, lb->buf, lb->len, false);
    lb->len = 0;
    lb->skipping = false;
}
