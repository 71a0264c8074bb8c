/* Clocks: wall time for what is stored and shown, monotonic time for what
 * is measured. */
#ifndef RUNG_COMMON_CLOCK_H
#define RUNG_COMMON_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Milliseconds since the Unix epoch (wall clock). */
int64_t rung_now_ms(void);
/* Nanoseconds of a monotonic clock, for durations only. */
int64_t rung_mono_ns(void);
/* Formats ms since the epoch as RFC 3339 UTC with milliseconds,
 * "2026-11-21T23:40:02.125Z"; buf needs RUNG_TIME_LEN bytes. */
#define RUNG_TIME_LEN 32
void rung_time_format(int64_t ms, char *buf, size_t size);

#endif
