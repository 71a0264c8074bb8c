/* The error convention of the worker and the trainer: a fallible
 * function takes a buffer `char *why, size_t why_size` and, when it fails,
 * writes there one sentence for a person (paths and values included, cut
 * rather than overflowed) and returns -1. The caller that handles the
 * failure says it once (a log line, stderr, a finish's error). rungd and
 * the sampler use RungError instead (error.h): their errors travel to the
 * wire with a code and a field path; the command line client's errors come
 * from that wire, so it keeps the same three parts in a CliError
 * (cli/rest.h, filled by the format-checked cli_error_local on its side).
 * docs/architecture.md, "Conventions".
 *
 * Header-only, so that every target can use it, the CUDA module's included
 * (it sees only this folder: common/CMakeLists.txt). */
#ifndef RUNG_COMMON_WHY_H
#define RUNG_COMMON_WHY_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Writes the message into why (nothing when why is NULL or why_size is 0)
 * and returns -1, so that callers can write `return rung_why(why, n, ...)`. */
static inline int rung_why(char *why, size_t why_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline int rung_why(char *why, size_t why_size, const char *fmt, ...)
{
    if (why != NULL && why_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

#endif
