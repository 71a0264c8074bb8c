/* GET /metrics (docs/api.md, "Operations"): the Prometheus text of the
 * core's counts, the engine's and the front's statistics (stats.h). */
#include "api_internal.h"

#include <stdio.h>
#include <stdlib.h>

#include "stats.h"
#include "version.h"

/* One family of /metrics: its HELP and TYPE lines (docs/api.md lists them). */
static void family(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one sample without labels. */
static void single(FILE *out, const char *name, const char *type, const char *help, int64_t v)
{
    family(out, name, type, help);
    fprintf(out, "%s %lld\n", name, (long long)v);
}

/* rung_experiment_trials: every state of every experiment in memory, zeros
 * included, so that a series never vanishes while its experiment runs. */
static void experiment_trials(FILE *out, Core *core)
{
    family(out, "rung_experiment_trials", "gauge",
           "Trials by state of each experiment rungd holds in memory: running and paused ones, "
           "and ended ones until their last trials have ended.");
    for (int64_t i = 0; i < core_n_experiments(core); i++) {
        const Experiment *x = core_experiment_at(core, i);
        for (int s = 0; s < TRIAL__COUNT; s++) {
            fprintf(out, "rung_experiment_trials{experiment=\"%lld\",name=\"", (long long)x->id);
            stats_write_label_value(out, x->spec.name ? x->spec.name : "");
            fprintf(out, "\",state=\"%s\"} %lld\n", trial_state_name((TrialState)s),
                    (long long)x->counts[s]);
        }
    }
}

static void lease_counters(FILE *out, const CoreCounters *c)
{
    single(out, "rung_leases_granted_total", "counter",
           "Trials handed to workers by lease requests (a gang trial: one per member), since "
           "rungd started.",
           c->leases_granted);
    single(out, "rung_leases_undelivered_total", "counter",
           "Granted leases taken back because the reply never reached the worker, since rungd "
           "started.",
           c->leases_undelivered);
    single(out, "rung_leases_expired_total", "counter",
           "Running trials whose lease ran out without a heartbeat (worker lost; a gang trial "
           "once), since rungd started.",
           c->leases_expired);
    family(out, "rung_trial_retries_total", "counter",
           "Trials put back in line as a new attempt, by reason, since rungd started.");
    for (int r = 0; r < RETRY__COUNT; r++)
        fprintf(out, "rung_trial_retries_total{reason=\"%s\"} %lld\n",
                retry_reason_name((RetryReason)r), (long long)c->retries[r]);
}

static void build_info(FILE *out)
{
    family(out, "rung_build_info", "gauge", "Always 1; its label is rungd's version.");
    fputs("rung_build_info{version=\"", out);
    stats_write_label_value(out, rung_version);
    fputs("\"} 1\n", out);
}

void api_prometheus(Engine *e, Job *job)
{
    Core *core = engine_core(e);
    Stats *st = engine_stats(e);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (out == NULL)
        abort();
    int64_t counts[TRIAL__COUNT];
    core_trial_counts(core, counts);
    family(out, "rung_trials", "gauge", "Trials by state, every experiment.");
    for (int s = 0; s < TRIAL__COUNT; s++)
        fprintf(out, "rung_trials{state=\"%s\"} %lld\n", trial_state_name((TrialState)s),
                (long long)counts[s]);
    const int64_t *exps = core_exp_counts(core);
    family(out, "rung_experiments", "gauge", "Experiments by state.");
    for (int s = 0; s < EXP__COUNT; s++)
        fprintf(out, "rung_experiments{state=\"%s\"} %lld\n", exp_state_name((ExpState)s),
                (long long)exps[s]);
    experiment_trials(out, core);
    single(out, "rung_queue_trials", "gauge",
           "Trials waiting in line to be leased (pending or preempted) in running experiments.",
           core_queue_len(core));
    single(out, "rung_lease_polls_waiting", "gauge",
           "Lease requests parked in a long poll, waiting for work.", engine_parked(e));
    lease_counters(out, core_counters(core));
    int64_t alive, gone;
    core_worker_counts(core, engine_now(e), &alive, &gone);
    single(out, "rung_workers_alive", "gauge", "Workers seen within a lease length.", alive);
    single(out, "rung_workers_gone", "gauge",
           "Workers in memory not seen within a lease length (those silent for an hour leave "
           "memory unless they hold a trial).",
           gone);
    family(out, "rung_reports_total", "counter",
           "Reports committed (rate() gives reports/s), since rungd started.");
    fprintf(out, "rung_reports_total %llu\n", (unsigned long long)atomic_load(&st->reports));
    family(out, "rung_reports_per_second", "gauge", "Reports committed per second, last second.");
    fprintf(out, "rung_reports_per_second %.1f\n", atomic_load(&st->reports_per_s));
    family(out, "rung_requests_total", "counter", "HTTP requests answered, since rungd started.");
    fprintf(out, "rung_requests_total %llu\n", (unsigned long long)atomic_load(&st->requests));
    family(out, "rung_commits_total", "counter",
           "SQLite transactions committed, since rungd started.");
    fprintf(out, "rung_commits_total %llu\n", (unsigned long long)atomic_load(&st->batches));
    stats_write_histogram(out, "rung_request_duration_seconds",
                          "HTTP request latency, first byte in to reply queued, less the time a "
                          "lease request waited parked in a long poll.",
                          &st->request_latency);
    stats_write_histogram(out, "rung_report_duration_seconds",
                          "Report request latency, first byte in to reply queued (its commit "
                          "included).",
                          &st->report_latency);
    stats_write_histogram(out, "rung_sqlite_commit_seconds",
                          "The database's COMMIT latency (SQLite, or PostgreSQL: --database).",
                          &st->commit_latency);
    /* Which database, and on PostgreSQL this rungd's lead (a standby
     * answers its own /metrics: server/standby.c). */
    Store *store = engine_store(e);
    family(out, "rung_store_info", "gauge", "Always 1; its label is the store's database.");
    fprintf(out, "rung_store_info{database=\"%s\"} 1\n",
            store_has_leader(store) ? "postgresql" : "sqlite");
    family(out, "rung_role", "gauge",
           "1 for this rungd's role: leader, or standby (PostgreSQL, docs/operations.md).");
    fputs("rung_role{role=\"leader\"} 1\n", out);
    single(out, "rung_leader_epoch", "gauge",
           "The epoch this rungd leads its PostgreSQL database in (0 on SQLite).",
           store_leader_epoch(store));
    int64_t db_bytes = engine_database_bytes(e);
    if (db_bytes >= 0)
        single(out, "rung_database_size_bytes", "gauge",
               "Bytes on disk of the SQLite database file plus its -wal file.", db_bytes);
    build_info(out);
    fclose(out);
    job->status = 200;
    job->text = buf;
    job->text_len = len;
    job->content_type = "text/plain; version=0.0.4; charset=utf-8";
}
