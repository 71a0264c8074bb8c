/* Latency histograms; see stats.h. */
#include "stats.h"

/* Bucket bounds in seconds: 50 µs to 10 s covers a cached report through a
 * commit that waits for a checkpoint. */
static const double bounds_s[STATS_BUCKETS] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                               0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                               0.5,     1.0,    2.5,     10.0};

void stats_observe(Histogram *h, int64_t ns)
{
    double s = (double)ns / 1e9;
    int i = 0;
    while (i < STATS_BUCKETS && s > bounds_s[i])
        i++;
    atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, (uint64_t)(ns > 0 ? ns : 0), memory_order_relaxed);
}

void stats_write_histogram(FILE *out, const char *name, const char *help, const Histogram *h)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cumulative = 0;
    for (int i = 0; i <= STATS_BUCKETS; i++) {
        cumulative += atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
        if (i < STATS_BUCKETS)
            fprintf(out, "%s_bucket{le=\"%g\"} %llu\n", name, bounds_s[i],
                    (unsigned long long)cumulative);
        else
            fprintf(out, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cumulative);
    }
    fprintf(out, "%s_sum %.9f\n%s_count %llu\n", name,
            (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) / 1e9, name,
            (unsigned long long)atomic_load_explicit(&h->count, memory_order_relaxed));
}

void stats_write_label_value(FILE *out, const char *value)
{
    for (const char *p = value; *p != '\0'; p++) {
        if (*p == '\\')
            fputs("\\\\", out);
        else if (*p == '"')
            fputs("\\\"", out);
        else if (*p == '\n')
            fputs("\\n", out);
        else
            fputc(*p, out);
    }
}
