/* Counters and latency histograms for GET /metrics (Prometheus text).
 * Written from several threads with relaxed atomics: a scrape may see a
 * histogram a few observations apart from its count, which Prometheus
 * tolerates. */
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
    Histogram request_latency;    /* HTTP request, first byte in to reply queued */
    Histogram commit_latency;     /* one SQLite COMMIT */
    _Atomic uint64_t requests;    /* HTTP requests answered */
    _Atomic uint64_t reports;     /* reports committed */
    _Atomic uint64_t batches;     /* engine transactions committed */
    _Atomic double reports_per_s; /* over the last second or so (engine tick) */
} Stats;

void stats_observe(Histogram *h, int64_t ns);
/* Appends the histogram in Prometheus text format under metric `name`. */
void stats_write_histogram(FILE *out, const char *name, const char *help, const Histogram *h);

#endif
