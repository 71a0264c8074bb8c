/* Counters and latency histograms for GET /metrics (Prometheus text).
 * Today only the engine thread writes and reads them (the HTTP front runs
 * inside its loop); they are relaxed atomics all the same, so that a
 * writer on another thread stays defined: a scrape may then see a
 * histogram a few observations apart from its count, which Prometheus
 * tolerates. The core's event counters (core.h, CoreCounters) are plain:
 * only the engine thread touches a Core. */
#ifndef RUNG_SERVER_STATS_H
#define RUNG_SERVER_STATS_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#define STATS_BUCKETS 16

typedef struct Histogram {
    _Atomic uint64_t bucket[STATS_BUCKETS + 1]; /* last: +Inf */
    _Atomic uint64_t count;
    _Atomic uint64_t sum_ns;
} Histogram;

typedef struct Stats {
    Histogram request_latency;    /* HTTP request, first byte in to reply queued, less any time
                                     parked in a long poll (Job.parked_ns) */
    Histogram report_latency;     /* POST .../report alone, the same span (it never parks) */
    Histogram commit_latency;     /* one SQLite COMMIT */
    _Atomic uint64_t requests;    /* HTTP requests answered */
    _Atomic uint64_t reports;     /* reports committed */
    _Atomic uint64_t batches;     /* engine transactions committed */
    _Atomic double reports_per_s; /* over the last second or so (engine tick) */
} Stats;

void stats_observe(Histogram *h, int64_t ns);
/* Appends the histogram in Prometheus text format under metric `name`. */
void stats_write_histogram(FILE *out, const char *name, const char *help, const Histogram *h);
/* Writes value as a label value of the text format, without its quotes:
 * backslash, double quote and line feed escaped as \\, \" and \n. */
void stats_write_label_value(FILE *out, const char *value);

#endif
