/* Golden characterization test of the Core (server/core.h) with the store's
 * load path (server/store.h): issue 35's guard rail for moving core.c into
 * a family of files. A move that changes no behaviour keeps every hash.
 *
 * For each seed 1..200, a random sequence drawn from the seed (splitmix64)
 * drives one Core through its public API as the engine and the handlers
 * would, with a fake clock: experiments under every scheduler (fifo, asha,
 * asha with promote, hyperband, median, pbt, pb2; the seed picks one) and a
 * 3-node gang; workers registering, leases (gang-capable or not), reports
 * (random values, repeated steps, a missing metric, NaN, a wrong token),
 * finishes (completed, failed), preemptions, unleases, heartbeats with
 * pbt's uploads, ticks and lease expiry, pause / resume / cancel / patch /
 * stop / retry-failed, and restarts: the Core is freed and built again from
 * the SQLite store (store_load), as rungd does at start. After each step
 * the changes are written in the open transaction, and a batch of one to
 * a few steps is committed, then core_release, as the engine's batches do
 * (server/engine.c, flush and commit).
 *
 * Everything observable goes into an FNV-1a 64 hash per seed: each call's
 * return code and error (code, field, message), lease decisions, report
 * answers, heartbeat replies, every entry of the change queue with the
 * fields of its object, the queries (best, Pareto front, counts, queue,
 * counters, health) and at the end the store's tables. No wall clock, no
 * addresses.
 *
 * The expected hashes are tests/unit/core_golden.txt, one "seed hash" line
 * each; they were computed on commit 145f990 (before core.c was split).
 * RUNG_GOLDEN_WRITE=1 rewrites that file: change it only in a commit that
 * says why the Core's behaviour changed. RUNG_GOLDEN_TRACE=<seed> prints
 * the lines hashed for that seed (diff two builds' traces to find where
 * they part).
 *
 * Usage: test_core_golden GOLDEN_FILE [DIR for the temporary database] */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "db.h"
#include "sampler.h"
#include "sched_explore.h"
#include "spec.h"
#include "store.h"
#include "store_read.h"

#define SEEDS 200
#define STEPS 160
#define LEASE_MS 1000
#define MAX_EXPS 3
#define MAX_WORKERS 6
#define MAX_LEASES 256

/* ---- randomness and the hash ---- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t below(int64_t n)
{
    return n > 0 ? (int64_t)(rnd() % (uint64_t)n) : 0;
}

static double unit(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

static uint64_t hash;
static bool tracing;

static void hash_bytes(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        hash ^= (unsigned char)s[i];
        hash *= 0x100000001b3ULL;
    }
}

/* Hashes one formatted line (and prints it when tracing). */
__attribute__((format(printf, 1, 2))) static void note(const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    hash_bytes(buf, len);
    hash_bytes("\n", 1);
    if (tracing)
        printf("%s\n", buf);
}

/* JSON as text for a note: sorted keys, compact; "-" for NULL. The
 * caller frees. */
static char *js(const json_t *j)
{
    if (j == NULL)
        return strdup("-");
    char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    return s != NULL ? s : strdup("?");
}

static void note_json(const char *what, const json_t *j)
{
    char *s = js(j);
    note("%s %s", what, s);
    free(s);
}

static void note_rc(const char *what, int rc, const RungError *err)
{
    if (rc == 0)
        note("%s ok", what);
    else
        note("%s rc=%d field=%s msg=%s", what, rc, err->field, err->message);
}

/* ---- what the run holds: ids, never pointers, across steps ---- */

typedef struct Lease {
    int64_t trial, worker, step;
    char token[CORE_TOKEN_LEN + 1];
} Lease;

typedef struct Run {
    Store *store;
    Core *core;
    int64_t now;
    int64_t exps[MAX_EXPS];
    int n_exps;
    int64_t workers[MAX_WORKERS];
    int n_workers;
    Lease leases[MAX_LEASES];
    int n_leases;
    uint64_t tokens;      /* tokens handed out so far */
    bool in_tx;           /* a batch's transaction is open */
    CoreCounters counted; /* the counters as of the last write the store took */
    int kind;             /* the seed's scheduler (SPECS) */
} Run;

static uint64_t upload_tokens;

static void upload_token(char out[CORE_TOKEN_LEN + 1])
{
    snprintf(out, CORE_TOKEN_LEN + 1, "u%031" PRIx64, ++upload_tokens);
}

/* ---- observing the core ---- */

static void note_trial(const char *what, const Trial *t)
{
    char *config = js(t->config), *lineage = js(t->lineage), *gang = js(t->gang_json);
    char *res = js(t->resources), *last = js(t->last), *warn = js(t->warnings);
    note("%s T%" PRId64 " e%" PRId64 " n%" PRId64 " %s a%" PRId64 " w%" PRId64
         " tok=%s exp=%" PRId64 " stop=%d by=%d up=%d pre=%" PRId64 " lost=%" PRId64
         " from=%d err=%s c=%" PRId64 " s=%" PRId64 " e=%" PRId64 " step=%d:%" PRId64
         " time=%d:%.17g rung=%.17g q=%" PRId64 " best=%d:%.17g@%" PRId64
         " seen=%zu/%zu pbt=%" PRId64 ":%" PRId64 ":%" PRId64
         " chg=%d want=%d lr=%d bracket=%d resume=%" PRId64 " config=%s lineage=%s gang=%s res=%s"
         " last=%s warn=%s",
         what, t->id, t->exp->id, t->number, trial_state_name(t->state), t->attempt, t->worker_id,
         t->lease_token, t->lease_expires_ms, t->stop_kind, t->stopped_by, t->user_paused,
         t->preemptions, t->worker_losses, t->leased_from, t->error ? t->error : "-", t->created_at,
         t->started_at, t->ended_at, t->has_step, t->step, t->has_time, t->time, t->rung,
         t->queue_pos, t->has_best, t->best_value, t->best_step, t->leased_seen, t->n_seen,
         t->from_trial, t->from_step, t->from_worker, t->config_changed, t->ckpt_wanted,
         t->lost_resumes, core_trial_bracket(t), core_resume_step(t), config, lineage, gang, res,
         last, warn);
    free(config);
    free(lineage);
    free(gang);
    free(res);
    free(last);
    free(warn);
}

static const char *or_dash(const char *s)
{
    return s != NULL ? s : "-";
}

/* The spec as the hashes have it: without searcher.grid_order, which rungd
 * writes into every spec it accepts since grid combinations follow Ray's
 * order; the hashes predate it, and no spec here has a grid. */
static char *spec_text(const json_t *spec)
{
    json_t *copy = json_deep_copy(spec);
    json_object_del(json_object_get(copy, "searcher"), "grid_order");
    char *text = js(copy);
    json_decref(copy);
    return text;
}

static void note_experiment(const char *what, const Experiment *e)
{
    /* The spec changes with a patch only: shown by the queries, not with
     * every write (dumping it costs more than the rest of the line). */
    char *spec = strcmp(what, "dirty") == 0 ? strdup("-") : spec_text(e->spec.json);
    json_t *h = core_health_json(e);
    char *health = js(h);
    json_decref(h);
    char counts[256] = "";
    size_t off = 0;
    for (int s = 0; s < TRIAL__COUNT; s++)
        off += (size_t)snprintf(counts + off, sizeof counts - off, "%" PRId64 ",", e->counts[s]);
    note("%s E%" PRId64 " %s reason=%s err=%s c=%" PRId64 " end=%" PRId64 " n=%" PRId64
         " counts=%s pending=%" PRId64 " proposing=%" PRId64 " hold=%d pass=%.17g holds=%" PRId64
         " reserving=%d releases=%" PRId64 " passed=%" PRId64 " health=%s spec=%s",
         what, e->id, exp_state_name(e->state), or_dash(end_reason_name(e->ended_reason)),
         e->error ? e->error : "-", e->created_at, e->ended_at, e->n_trials, counts, e->pending.len,
         e->proposing, e->hold_endgame, e->pass, e->gang.n_holds, e->gang.reserving,
         e->gang.releases, e->gang.passed_over_until, health, spec);
    free(spec);
    free(health);
}

static void note_worker(const char *what, const Worker *w)
{
    char *labels = js(w->labels), *hb = js(w->heartbeat);
    note("%s W%" PRId64 " %s seen=%" PRId64 " run=%" PRId64 " held=%" PRId64 " gang=%d tr=%u"
         " labels=%s hb=%s",
         what, w->id, w->name, w->last_seen_at, w->n_running, w->held_for, w->gang_capable,
         w->lease_trainables, labels, hb);
    free(labels);
    free(hb);
}

/* What the searcher's history and the API's trial view read of a trial
 * (engine_propose.c, history_of; docs/api.md, "The trial object"). */
static void note_result(const Trial *t)
{
    if (t == NULL)
        return;
    double loss = 0;
    bool has = core_trial_result(t, &loss);
    BayesObservation o;
    memset(&o, 0, sizeof o);
    bool obs = core_trial_observation(t, &o);
    char line[1024];
    int off = snprintf(line, sizeof line, "result T%" PRId64 " %d %.17g obs %d %.17g", t->id, has,
                       has ? loss : 0, obs, obs ? o.loss : 0);
    int n_more = t->exp->spec.n_objectives - 1, n_cons = spec_constraint_count(&t->exp->spec);
    for (int i = 0; obs && i < n_more && off < (int)sizeof line; i++)
        off += snprintf(line + off, sizeof line - (size_t)off, " m%.17g", o.more[i]);
    for (int i = 0; obs && i < n_cons && off < (int)sizeof line; i++)
        off += snprintf(line + off, sizeof line - (size_t)off, " c%.17g", o.cons[i]);
    json_t *v = core_values_json(&t->exp->spec, t->last);
    char *vs = js(v);
    json_decref(v);
    note("%s values %s", line, vs);
    free(vs);
}

/* The queries the API and /metrics make of the core. */
static void note_queries(Run *r)
{
    Core *core = r->core;
    for (int64_t i = 0; i < core_n_experiments(core); i++) {
        Experiment *e = core_experiment_at(core, i);
        note_experiment("q", e);
        BestRef b;
        core_experiment_best(e, &b);
        char *bc = js(b.has ? b.config : NULL);
        note("best %d T%" PRId64 " %.17g @%" PRId64 " %s", b.has, b.trial_id, b.value, b.step, bc);
        free(bc);
        json_t *p = core_experiment_pareto(e);
        note_json("pareto", p);
        json_decref(p);
        int64_t ids[64];
        int64_t n = core_running_of(core, e, ids, 64);
        for (int64_t k = 0; k < n && k < 64; k++)
            note("running T%" PRId64, ids[k]);
        for (int64_t num = 0; num < e->n_trials; num++)
            note_result(core_exp_trial(e, num));
    }
    int64_t counts[TRIAL__COUNT];
    core_trial_counts(core, counts);
    const int64_t *ec = core_exp_counts(core);
    int64_t alive = 0, gone = 0;
    core_worker_counts(core, r->now, &alive, &gone);
    const CoreCounters *c = core_counters(core);
    note("counts %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64
         " %" PRId64 " exps %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64
         " queue %" PRId64 " workers %" PRId64 "/%" PRId64 " leases %" PRId64 " %" PRId64
         " %" PRId64 " retries %" PRId64 " %" PRId64 " %" PRId64 " avail=%d",
         counts[0], counts[1], counts[2], counts[3], counts[4], counts[5], counts[6], counts[7],
         ec[0], ec[1], ec[2], ec[3], ec[4], core_queue_len(core), alive, gone, c->leases_granted,
         c->leases_undelivered, c->leases_expired, c->retries[0], c->retries[1], c->retries[2],
         core_availability_changed(core));
    core_availability_seen(core);
    for (int k = 0; k < RETRY__COUNT; k++)
        note("retry %s %" PRId64, retry_reason_name((RetryReason)k), c->retries[k]);
}

/* What the engine does after each request: the changes written in the
 * batch's transaction (server/engine.c, flush). */
static void flush(Run *r)
{
    CoreChanges c;
    core_changes(r->core, &c);
    for (int64_t i = 0; i < c.n_exps; i++)
        note_experiment("dirty", c.exps[i]);
    for (int64_t i = 0; i < c.n_trials; i++)
        note_trial("dirty", c.trials[i]);
    for (int64_t i = 0; i < c.n_workers; i++)
        note_worker("dirty", c.workers[i]);
    for (int64_t i = 0; i < c.n_reports; i++) {
        const NewReport *p = &c.reports[i];
        char *m = js(p->metrics);
        note("report T%" PRId64 " a%" PRId64 " s%" PRId64 " t%" PRId64 " %d %s", p->trial_id,
             p->attempt, p->step, p->time, p->action, m);
        free(m);
    }
    for (int64_t i = 0; i < c.n_ckpts; i++)
        note("ckpt T%" PRId64 " s%" PRId64 " %s", c.ckpts[i].trial_id, c.ckpts[i].step,
             c.ckpts[i].sha256);
    for (int64_t i = 0; i < c.n_dropped_ckpts; i++)
        note("dropped T%" PRId64 " s%" PRId64, c.dropped_ckpts[i].trial_id,
             c.dropped_ckpts[i].step);
    RungError err;
    rung_error_clear(&err);
    if ((!r->in_tx && store_begin(r->store, &err) != 0) ||
        store_write_changes(r->store, &c, &err) != 0) {
        fprintf(stderr, "store: %s\n", err.message);
        abort();
    }
    r->in_tx = true;
    core_changes_clear(r->core);
    r->counted = *core_counters(r->core);
}

/* The store refused a request's writes: what it changed in memory is
 * undone by reading its experiments and workers back, running trials
 * keeping their lease deadlines (server/engine.c, undo). */
static void undo(Run *r)
{
    CoreChanges c;
    core_changes(r->core, &c);
    int64_t exps[512], workers[64];
    int n_exp = 0, n_w = 0;
    for (int64_t i = 0; i < c.n_exps && n_exp < 512; i++)
        exps[n_exp++] = c.exps[i]->id;
    for (int64_t i = 0; i < c.n_trials && n_exp < 512; i++)
        exps[n_exp++] = c.trials[i]->exp->id;
    for (int64_t i = 0; i < c.n_reports && n_exp < 512; i++) {
        Trial *t = core_trial(r->core, c.reports[i].trial_id);
        if (t != NULL)
            exps[n_exp++] = t->exp->id;
    }
    for (int64_t i = 0; i < c.n_workers && n_w < 64; i++)
        workers[n_w++] = c.workers[i]->id;
    note("undo %d %d", n_exp, n_w);
    core_changes_clear(r->core);
    for (int i = 0; i < n_exp; i++) {
        Experiment *x = core_experiment(r->core, exps[i]);
        if (x == NULL)
            continue; /* done already (listed twice) */
        int64_t ids[256], until[256];
        int64_t n_run = core_running_of(r->core, x, ids, 256);
        if (n_run > 256)
            n_run = 256;
        for (int64_t k = 0; k < n_run; k++)
            until[k] = core_trial(r->core, ids[k])->lease_expires_ms;
        core_forget_experiment(r->core, x);
        RungError err;
        rung_error_clear(&err);
        note_rc("reload experiment",
                store_reload_experiment(r->store, r->core, exps[i], r->now, &err), &err);
        for (int64_t k = 0; k < n_run; k++) {
            Trial *t = core_trial(r->core, ids[k]);
            if (t != NULL && t->state == TRIAL_RUNNING)
                core_set_lease_expiry(t, until[k]);
        }
    }
    for (int i = 0; i < n_w; i++) {
        Worker *w = core_worker(r->core, workers[i]);
        if (w != NULL && w->n_running == 0)
            core_forget_worker(r->core, w);
        RungError err;
        rung_error_clear(&err);
        if (core_worker(r->core, workers[i]) == NULL)
            note_rc("reload worker", store_reload_worker(r->store, r->core, workers[i], &err),
                    &err);
    }
    core_set_counters(r->core, &r->counted);
}

/* The end of a batch: its transaction committed, then what ended leaves
 * memory (server/engine.c, commit). */
static void commit(Run *r)
{
    flush(r);
    RungError err;
    rung_error_clear(&err);
    if (store_commit(r->store, &err) != 0) {
        fprintf(stderr, "store: %s\n", err.message);
        abort();
    }
    r->in_tx = false;
    core_release(r->core);
}

/* ---- the specs ---- */

#define SPACE                                                                                      \
    "\"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"                  \
    " \"k\": {\"type\": \"choice\", \"values\": [1, 2, 3, 4]}}"

static const char *const SPECS[] = {
    /* fifo, with a stop rule some of the time (added below) */
    "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 8, \"max_failures\": 1, " SPACE "}",
    "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 12, \"max_failures\": 2, " SPACE
    ", \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1,"
    " \"reduction_factor\": 3}}",
    "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 10, \"max_failures\": 1, " SPACE
    ", \"scheduler\": {\"type\": \"asha\", \"max_t\": 9, \"grace_period\": 1,"
    " \"reduction_factor\": 3, \"promote\": true}}",
    "{\"metric\": \"acc\", \"mode\": \"max\", \"num_samples\": 12, \"max_failures\": 1, " SPACE
    ", \"scheduler\": {\"type\": \"hyperband\", \"max_t\": 9, \"grace_period\": 1,"
    " \"reduction_factor\": 3}}",
    "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 10, \"max_failures\": 1, " SPACE
    ", \"scheduler\": {\"type\": \"median\", \"grace_period\": 2, \"min_samples_required\": 2}}",
    "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4, \"max_failures\": 1, " SPACE
    ", \"scheduler\": {\"type\": \"pbt\", \"perturbation_interval\": 2, \"max_t\": 10,"
    " \"quantile_fraction\": 0.5, \"hyperparam_mutations\": {\"x\": {\"type\": \"uniform\","
    " \"low\": 0, \"high\": 1}, \"k\": [1, 2, 3, 4]}, \"synch\": %s}}",
    "{\"metric\": \"acc\", \"mode\": \"max\", \"num_samples\": 4, \"max_failures\": 1, " SPACE
    ", \"scheduler\": {\"type\": \"pb2\", \"perturbation_interval\": 2, \"max_t\": 10,"
    " \"quantile_fraction\": 0.5, \"hyperparam_bounds\": {\"x\": [0, 1]}, \"synch\": %s}}",
    /* a 3-node gang */
    "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4, \"max_failures\": 1, " SPACE
    ", \"resources_per_trial\": {\"cpu\": 1, \"nodes\": 3, \"gang_wait_s\": 1}}",
    /* several objectives with a constraint */
    "{\"metrics\": [{\"name\": \"loss\", \"mode\": \"min\"}, {\"name\": \"acc\","
    " \"mode\": \"max\"}], \"num_samples\": 6, " SPACE
    ", \"constraints\": [{\"metric\": \"mem\", \"max\": 0.8}]}",
    /* bayes: the searcher's history of released trials */
    "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 10, \"max_failures\": 1, " SPACE
    ", \"searcher\": {\"type\": \"bayes\", \"n_initial\": 3},"
    " \"constraints\": [{\"metric\": \"mem\", \"max\": 0.9}]}",
};
#define N_SPECS ((int)(sizeof SPECS / sizeof SPECS[0]))
#define SPEC_PBT 5
#define SPEC_PB2 6

static void add_experiment(Run *r, int kind)
{
    char text[2048];
    snprintf(text, sizeof text, SPECS[kind], below(2) ? "true" : "false");
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    if (j == NULL) {
        fprintf(stderr, "spec %d: %s\n", kind, jerr.text);
        abort();
    }
    json_object_set_new(j, "trainable", json_pack("{s:s}", "type", "external"));
    if (kind == 0 && below(2))
        json_object_set_new(j, "stop", json_pack("{s:i}", "patience", 3));
    if (kind == 1 && below(3) == 0)
        json_object_set_new(j, "stop", json_pack("{s:f}", "metric_threshold", 0.05));
    if (below(4) == 0)
        json_object_set_new(j, "stop", json_pack("{s:f}", "time_budget_s", 20.0));
    if (below(3) == 0)
        json_object_set_new(j, "priority", json_integer(below(3)));
    Spec spec;
    RungError err;
    rung_error_clear(&err);
    int rc = spec_parse(j, 42 + (uint64_t)kind, &spec, &err);
    json_decref(j);
    if (rc != 0) {
        fprintf(stderr, "spec %d rejected: %s\n", kind, err.message);
        abort();
    }
    Experiment *e = core_experiment_add(r->core, &spec, r->now);
    note("add E%" PRId64 " kind %d", e->id, kind);
    r->exps[r->n_exps++] = e->id;
}

/* The proposer's part, done inline: the configs each experiment wants. */
static void propose(Run *r)
{
    for (int64_t i = 0; i < core_n_experiments(r->core); i++) {
        Experiment *e = core_experiment_at(r->core, i);
        if (e->state != EXP_RUNNING)
            continue;
        int64_t want = core_proposals_wanted(e, 3);
        for (int64_t k = 0; k < want; k++) {
            Trial *t = core_trial_add(r->core, e,
                                      sampler_config(e->spec.space, &e->spec.searcher, e->n_trials),
                                      r->now);
            note("proposed T%" PRId64 " n%" PRId64, t->id, t->number);
        }
    }
}

/* pb2's explores, done inline as the engine's proposer thread would
 * (server/engine_propose.c): taken in the Core's order, each computed and
 * applied at once. */
static void explore(Run *r)
{
    for (PbtExplore *x = core_take_explores(r->core), *next; x != NULL; x = next) {
        next = x->next;
        json_t *config = pbt_explore_compute(x);
        bool applied = core_pbt_explored(r->core, x->trial_id, x->milestone, config, r->now);
        note("explored T%" PRId64 " at %" PRId64 ": %d", x->trial_id, x->milestone, applied);
        pbt_explore_free(x);
    }
}

/* ---- the steps ---- */

static Lease *lease_of(Run *r, int64_t trial, int64_t worker)
{
    for (int i = 0; i < r->n_leases; i++)
        if (r->leases[i].trial == trial && r->leases[i].worker == worker)
            return &r->leases[i];
    return NULL;
}

static Lease *random_lease(Run *r)
{
    return r->n_leases > 0 ? &r->leases[below(r->n_leases)] : NULL;
}

static void forget_lease(Run *r, Lease *l)
{
    *l = r->leases[--r->n_leases];
}

static Worker *random_worker(Run *r)
{
    if (r->n_workers == 0)
        return NULL;
    int64_t id = r->workers[below(r->n_workers)];
    Worker *w = core_worker(r->core, id);
    if (w == NULL) { /* released for being idle: it comes back as it calls again */
        RungError err;
        rung_error_clear(&err);
        int rc = store_reload_worker(r->store, r->core, id, &err);
        note_rc("reload worker", rc, &err);
        w = core_worker(r->core, id);
    }
    return w;
}

static void step_register(Run *r)
{
    if (r->n_workers >= MAX_WORKERS)
        return;
    char name[32];
    snprintf(name, sizeof name, "w%d", r->n_workers);
    Worker *w = core_worker_add(r->core, name, "host", json_array(), 8, r->now);
    if (below(3) == 0)
        core_worker_set_labels(r->core, w, json_pack("{s:s}", "zone", below(2) ? "a" : "b"));
    note("register W%" PRId64, w->id);
    r->workers[r->n_workers++] = w->id;
}

static void lease_by(Run *r, Worker *w)
{
    LeaseOffer o;
    memset(&o, 0, sizeof o);
    o.cpus = below(4);
    o.trainables = SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_EXTERNAL);
    if (below(8) == 0)
        o.trainables = SPEC_TRAINABLE_BIT(SPEC_TRAINABLE_COMMAND);
    char addr[32];
    bool gang = r->kind == 7 ? below(10) != 0 : below(3) == 0;
    if (gang) {
        snprintf(addr, sizeof addr, "10.0.0.%" PRId64, w->id);
        o.advertise_addr = addr;
        o.port = 29500 + w->id;
    }
    char token[CORE_TOKEN_LEN + 1];
    snprintf(token, sizeof token, "%032" PRIx64, ++r->tokens);
    Trial *t = core_lease(r->core, w, &o, token, r->now);
    if (t == NULL) {
        note("lease W%" PRId64 " cpus %" PRId64 " gang %d: none", w->id, o.cpus, gang);
        return;
    }
    int64_t rank = -1;
    const GangMember *m = core_gang_member(t, w->id, &rank);
    note("lease W%" PRId64 " cpus %" PRId64 " gang %d: T%" PRId64 " rank %" PRId64 " member %d",
         w->id, o.cpus, gang, t->id, rank, m != NULL);
    Lease *l = lease_of(r, t->id, w->id);
    if (l == NULL) {
        if (r->n_leases == MAX_LEASES)
            forget_lease(r, &r->leases[0]);
        l = &r->leases[r->n_leases++];
    }
    l->trial = t->id;
    l->worker = w->id;
    l->step = core_resume_step(t);
    snprintf(l->token, sizeof l->token, "%s", token);
}

static void step_lease(Run *r)
{
    Worker *w = random_worker(r);
    if (w != NULL)
        lease_by(r, w);
}

/* Every worker asks at once (workers poll together), and when that formed
 * a gang, the requests parked meanwhile are served again, as the engine
 * does (server/engine.c, core_take_gang_formed). */
static void step_lease_round(Run *r)
{
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < r->n_workers; i++) {
            Worker *w = core_worker(r->core, r->workers[i]);
            if (w != NULL)
                lease_by(r, w);
        }
        bool formed = core_take_gang_formed(r->core);
        note("gang formed %d", formed);
        if (!formed)
            break;
    }
}

static json_t *random_metrics(Run *r)
{
    (void)r;
    json_t *m = json_object();
    int64_t pick = below(40);
    if (pick == 0)
        json_object_set_new(m, "val", json_real(unit())); /* the metric missing */
    else if (pick == 1)
        json_object_set_new(m, "loss", json_string("NaN"));
    else {
        json_object_set_new(m, "loss", json_real(floor(unit() * 1000) / 1000));
        json_object_set_new(m, "acc", json_real(floor(unit() * 1000) / 1000));
        json_object_set_new(m, "mem", json_real(floor(unit() * 100) / 100));
    }
    return m;
}

static void step_report(Run *r)
{
    Lease *l = random_lease(r);
    if (l == NULL)
        return;
    Trial *t = core_trial(r->core, l->trial);
    if (t == NULL) {
        note("report T%" PRId64 ": released", l->trial);
        forget_lease(r, l);
        return;
    }
    int64_t pick = below(20);
    int64_t step = pick == 0 ? l->step : l->step + 1; /* now and then, a step again */
    if (step < 1)
        step = 1;
    const char *token = pick == 1 ? "ffffffffffffffffffffffffffffffff" : l->token;
    json_t *m = random_metrics(r);
    ReportAction a = ACTION_CONTINUE;
    RungError err;
    rung_error_clear(&err);
    int rc = core_report(r->core, t, token, step, m, r->now, &a, &err);
    json_decref(m);
    note_rc("report", rc, &err);
    note("report T%" PRId64 " W%" PRId64 " step %" PRId64 " -> %d", l->trial, l->worker, step,
         rc == 0 ? (int)a : -1);
    if (rc == 0)
        l->step = step;
}

static void step_finish(Run *r, int how)
{
    Lease *l = random_lease(r);
    if (l == NULL)
        return;
    Trial *t = core_trial(r->core, l->trial);
    if (t == NULL) {
        note("finish T%" PRId64 ": released", l->trial);
        forget_lease(r, l);
        return;
    }
    RungError err;
    rung_error_clear(&err);
    /* Whose finish: a gang member's log and warnings are its own (api_trials.c). */
    int64_t from = core_token_worker(t, l->token);
    note("token worker %" PRId64, from);
    int rc;
    if (how == 0)
        rc = core_finish(r->core, t, l->token, true, NULL, r->now, &err);
    else if (how == 1)
        rc = core_finish(r->core, t, l->token, false, "exit status 1\nTraceback:\nValueError: x",
                         r->now, &err);
    else
        rc = core_preempt(r->core, t, l->token, r->now, &err);
    note_rc(how == 0 ? "finish completed" : how == 1 ? "finish failed" : "preempt", rc, &err);
    if (rc == 0) {
        core_worker_log(r->core, t, from, below(2) ? "some output\nlast line" : NULL);
        json_t *warnings = below(3) == 0 ? json_pack("[s]", "a warning") : NULL;
        core_worker_warnings(r->core, t, from, warnings); /* borrowed */
        json_decref(warnings);
    }
    forget_lease(r, l);
}

static void step_unlease(Run *r)
{
    Lease *l = random_lease(r);
    if (l == NULL)
        return;
    Trial *t = core_trial(r->core, l->trial);
    if (t == NULL) {
        forget_lease(r, l);
        return;
    }
    note("unlease T%" PRId64 " -> %d", l->trial, core_unlease(r->core, t, l->token, r->now));
    forget_lease(r, l);
}

static void step_heartbeat(Run *r)
{
    Worker *w = random_worker(r);
    if (w == NULL)
        return;
    int64_t ids[64];
    int64_t n = core_worker_trials(r->core, w->id, ids, 63);
    if (n > 63)
        n = 63;
    if (below(4) == 0)
        ids[n++] = 999999; /* a trial the worker thinks it runs, unknown to rungd */
    json_t *stop = core_heartbeat(r->core, w, ids, n, json_pack("{s:i}", "load", (int)below(9)),
                                  r->now);
    note_json("heartbeat stop", stop);
    json_decref(stop);
    json_t *up = core_uploads_for(r->core, w, upload_token);
    note_json("uploads", up);
    /* Upload the first one asked for, now and then (api_checkpoint_put). */
    json_t *first = json_array_get(up, 0);
    if (first != NULL && below(2)) {
        int64_t trial = json_integer_value(json_object_get(first, "trial"));
        int64_t step = json_integer_value(json_object_get(first, "step"));
        const char *tok = json_string_value(json_object_get(first, "token"));
        RungError err;
        rung_error_clear(&err);
        int rc = core_upload_check(r->core, trial, step, w->id, tok, &err);
        note_rc("upload check", rc, &err);
        if (rc == 0) {
            CoreCheckpoint c = {.trial_id = trial,
                                .step = step,
                                .size = 100 + step,
                                .stored_at = r->now};
            snprintf(c.sha256, sizeof c.sha256, "%064" PRIx64, (uint64_t)(trial * 1000 + step));
            core_checkpoint_stored(r->core, &c);
        }
    }
    json_decref(up);
    /* A lease's download of its donor's checkpoint (api_checkpoint_get). */
    Lease *l = random_lease(r);
    Trial *t = l ? core_trial(r->core, l->trial) : NULL;
    if (t != NULL && t->from_trial != 0) {
        RungError err;
        rung_error_clear(&err);
        int rc = core_download_check(r->core, t->from_trial, t->from_step, l->worker, l->token,
                                     &err);
        note_rc("download check", rc, &err);
        note("owed %d stored %d", core_checkpoint_owed(r->core, t->from_trial, t->from_step),
             core_checkpoint(r->core, t->from_trial, t->from_step) != NULL);
    }
}

static void step_clock(Run *r)
{
    r->now += 500 + below(2500);
    note("expired %" PRId64, core_expire_leases(r->core, r->now));
    note("tick %" PRId64, core_tick(r->core, r->now));
    note("idle %" PRId64, core_release_idle_workers(r->core, r->now, 8000));
}

static Experiment *random_experiment(Run *r)
{
    if (r->n_exps == 0)
        return NULL;
    return core_experiment(r->core, r->exps[below(r->n_exps)]);
}

/* An ended experiment that left memory, read back as the handlers do
 * (api_experiments.c, revived_experiment). */
static Experiment *revived(Run *r)
{
    if (r->n_exps == 0)
        return NULL;
    int64_t id = r->exps[below(r->n_exps)];
    Experiment *e = core_experiment(r->core, id);
    if (e != NULL)
        return e;
    RungError err;
    rung_error_clear(&err);
    int rc = store_revive_experiment(r->store, r->core, id, r->now, &err);
    note_rc("revive", rc, &err);
    return core_experiment(r->core, id);
}

/* DELETE of an experiment (api_experiments.c, api_experiment_delete): refused while
 * it is in memory; else its row as the API shows it, then gone. */
static void step_delete(Run *r)
{
    if (r->n_exps == 0)
        return;
    int64_t id = r->exps[below(r->n_exps)];
    Experiment *x = core_experiment(r->core, id);
    if (x != NULL) {
        note("delete E%" PRId64 ": in memory, %s", id, exp_state_name(x->state));
        return;
    }
    json_t *o = NULL;
    RungError err;
    rung_error_clear(&err);
    int rc = store_read_experiment(r->store, id, &o, &err);
    note_rc("read experiment", rc, &err);
    if (rc != 0)
        return;
    /* owner (schema 13: who submitted it) is null here, and the hashes
     * predate it. */
    if (!json_is_null(json_object_get(o, "owner"))) {
        fprintf(stderr, "experiment %" PRId64 " has an owner\n", id);
        abort();
    }
    json_object_del(o, "owner");
    /* searcher.grid_order is "ray" here, and the hashes predate it
     * (spec_text). */
    json_t *searcher = json_object_get(o, "searcher");
    if (!json_is_string(json_object_get(searcher, "grid_order")) ||
        strcmp(json_string_value(json_object_get(searcher, "grid_order")), "ray") != 0) {
        fprintf(stderr, "experiment %" PRId64 " has no grid_order \"ray\"\n", id);
        abort();
    }
    json_object_del(searcher, "grid_order");
    /* Tags and notes (schema 015) are [] and "" here, and the hashes
     * predate them. */
    if (json_array_size(json_object_get(o, "tags")) != 0 ||
        strcmp(json_string_value(json_object_get(o, "notes")), "") != 0) {
        fprintf(stderr, "experiment %" PRId64 " has tags or notes\n", id);
        abort();
    }
    json_object_del(o, "tags");
    json_object_del(o, "notes");
    note_json("experiment", o);
    ExpState state = EXP_COMPLETED;
    exp_state_parse(json_string_value(json_object_get(o, "state")), &state);
    json_decref(o);
    if (core_warm_source_in_use(r->core, id)) {
        note("delete E%" PRId64 ": a warm start source", id);
        return;
    }
    int64_t counts[TRIAL__COUNT];
    rc = store_delete_experiment(r->store, id, counts, &err);
    note_rc("delete", rc, &err);
    if (rc == 0)
        core_forget_deleted(r->core, state, counts);
}

static void step_user(Run *r)
{
    RungError err;
    rung_error_clear(&err);
    int64_t pick = below(9);
    if (pick == 8) {
        step_delete(r);
    } else if (pick == 0 || pick == 1) {
        Experiment *e = random_experiment(r);
        if (e == NULL)
            return;
        if (pick == 0) {
            bool running = below(2);
            note_rc("pause", core_pause(r->core, e, running, r->now, &err), &err);
        } else {
            note_rc("resume", core_resume(r->core, e, r->now, &err), &err);
        }
    } else if (pick == 2) {
        Experiment *e = random_experiment(r);
        if (e != NULL && below(3) == 0)
            note_rc("cancel", core_cancel(r->core, e, r->now, &err), &err);
    } else if (pick == 3) {
        Experiment *e = revived(r);
        if (e == NULL)
            return;
        json_t *patch = below(2) ? json_pack("{s:f}", "share", 1.0 + (double)below(3))
                                 : json_pack("{s:I}", "num_samples",
                                             (json_int_t)(e->spec.total_trials + below(3)));
        note_rc("patch", core_patch(r->core, e, patch, r->now, &err), &err);
        json_decref(patch);
    } else if (pick == 4) {
        Experiment *e = revived(r);
        if (e == NULL)
            return;
        int64_t n = 0;
        int rc = store_readd_failed(r->store, r->core, e, &err);
        if (rc == 0)
            rc = core_retry_failed(r->core, e, r->now, &n, &err);
        note_rc("retry-failed", rc, &err);
        note("retried %" PRId64, n);
    } else {
        Experiment *e = random_experiment(r);
        if (e == NULL || e->n_trials == 0)
            return;
        Trial *t = core_exp_trial(e, below(e->n_trials));
        if (t == NULL)
            return;
        note_rc("stop", core_stop_trial(r->core, t, r->now, &err), &err);
    }
}

/* A restart: the Core freed and built again from the store (main.c). */
static void step_restart(Run *r)
{
    commit(r); /* the last batch before the stop */
    core_free(r->core);
    r->core = core_new(LEASE_MS);
    RungError err;
    rung_error_clear(&err);
    int rc = store_load(r->store, r->core, r->now, &err);
    note_rc("restart", rc, &err);
    if (rc != 0)
        abort();
    r->counted = *core_counters(r->core);
    for (int64_t i = 0; i < core_n_experiments(r->core); i++)
        note_experiment("loaded", core_experiment_at(r->core, i));
    note_queries(r);
}

/* The store's rows, in id order: what a restart and the API read. */
static void note_table(Db *db, const char *sql)
{
    DbStmt *st;
    if (db_prepare(db, sql, &st) != DB_OK) {
        fprintf(stderr, "%s: %s\n", sql, db_errmsg(db));
        abort();
    }
    while (db_step(st) == DB_ROW) {
        char line[8192];
        size_t off = 0;
        for (int c = 0; c < db_column_count(st) && off < sizeof line - 1; c++) {
            const char *v = db_column_text(st, c);
            int n = snprintf(line + off, sizeof line - off, "%s|", v ? v : "NULL");
            off += n > 0 ? (size_t)n : 0;
        }
        line[sizeof line - 1] = '\0';
        note("row %s", line);
    }
    db_finalize(st);
}

static void note_store(Run *r)
{
    Db *db = store_db(r->store);
    /* The columns up to schema 12: 013's owner (who submitted it) is NULL
     * for every experiment here, and the hashes predate it; so does the
     * spec's searcher.grid_order (spec_text). */
    note_table(db, "SELECT id, name, json_remove(spec, '$.searcher.grid_order'), seed, state, "
                   "total_trials, created_at, ended_at, summary, error, ended_reason, health "
                   "FROM experiments ORDER BY id");
    /* The columns up to schema 13: 014's info (what reports carried that
     * was not a number) is NULL for every trial here, since no report
     * carries info, and the hashes predate it. */
    note_table(db, "SELECT id, experiment_id, number, state, config, attempt, worker_id, "
                   "lease_token, resources, stop_requested, error, created_at, started_at, "
                   "ended_at, rung, queue_pos, step, last_metrics, best_value, best_step, "
                   "log_tail, stopped_by, stop_kind, user_paused, warnings, gang, preemptions, "
                   "lineage, resume_from, worker_losses FROM trials ORDER BY id");
    /* The columns up to schema 11: 012's caps (what code a worker runs) is
     * NULL for every worker here, and the hashes predate it. */
    note_table(db, "SELECT id, name, hostname, gpus, cpus, registered_at, last_seen_at, heartbeat, "
                   "labels FROM workers ORDER BY id");
    note_table(db, "SELECT * FROM checkpoints ORDER BY trial_id, step");
    note_table(db, "SELECT count(*), sum(step), sum(length(metrics)) FROM reports");
}

/* ---- one seed ---- */

static void remove_dir_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
}

/* Copies the file at from to to (the migrated empty database). */
static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    if (in == NULL || out == NULL) {
        fprintf(stderr, "copy %s to %s: %s\n", from, to, strerror(errno));
        abort();
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            abort();
    fclose(in);
    if (fclose(out) != 0)
        abort();
}

static uint64_t run_seed(int seed, const char *dir, const char *empty)
{
    rng_state = (uint64_t)seed * 0x2545f4914f6cdd1dULL;
    hash = 0xcbf29ce484222325ULL;
    upload_tokens = 0;
    Run r;
    memset(&r, 0, sizeof r);
    r.now = 1000000;
    r.kind = seed % N_SPECS;
    char path[4200];
    snprintf(path, sizeof path, "%s/golden.db", dir);
    remove_dir_files(dir);
    copy_file(empty, path); /* the migrations, made once */
    StoreOptions opt = {.durable_full = false, .init = true, .data_dir = NULL};
    RungError err;
    rung_error_clear(&err);
    if (store_open(path, &opt, &r.store, &err) != 0) {
        fprintf(stderr, "store_open %s: %s\n", path, err.message);
        abort();
    }
    r.core = core_new(LEASE_MS);
    note("seed %d kind %d", seed, r.kind);
    add_experiment(&r, r.kind);
    int n_start = r.kind == 7 ? 4 : 2 + (int)below(2);
    for (int i = 0; i < n_start; i++)
        step_register(&r);
    propose(&r);
    commit(&r);
    for (int s = 0; s < STEPS; s++) {
        r.now += below(300);
        note("step %d t=%" PRId64, s, r.now);
        int64_t pick = below(100);
        if (pick < 28) {
            if (r.kind == 7 && below(2))
                step_lease_round(&r);
            else
                step_lease(&r);
        } else if (pick < 52)
            step_report(&r);
        else if (pick < 58)
            step_finish(&r, 0);
        else if (pick < 61)
            step_finish(&r, 1);
        else if (pick < 64)
            step_finish(&r, 2);
        else if (pick < 66)
            step_unlease(&r);
        else if (pick < 74)
            step_heartbeat(&r);
        else if (pick < 80)
            step_clock(&r);
        else if (pick < 86)
            step_user(&r);
        else if (pick < 87)
            step_restart(&r);
        else if (pick < 90) {
            if (r.n_exps < MAX_EXPS)
                add_experiment(&r, below(3) == 0 ? (int)below(N_SPECS) : r.kind);
        } else if (pick < 92)
            step_register(&r);
        else if (pick < 96) {
            Worker *w = random_worker(&r);
            if (w != NULL)
                core_worker_seen(r.core, w, r.now);
        } else {
            Lease *l = random_lease(&r);
            Trial *t = l ? core_trial(r.core, l->trial) : NULL;
            if (t != NULL) {
                json_t *warnings = json_pack("[s]", "bad @rung line");
                core_trial_set_warnings(r.core, t, warnings); /* takes a reference */
                json_decref(warnings);
            }
        }
        propose(&r);
        explore(&r);
        /* A batch holds one to a few requests; now and then the store
         * refuses one's writes. */
        if (below(60) == 0)
            undo(&r);
        else if (below(3) == 0)
            commit(&r);
        else
            flush(&r);
        if (s % 16 == 15)
            note_queries(&r);
    }
    commit(&r);
    note_queries(&r);
    note_store(&r);
    core_free(r.core);
    store_close(r.store);
    remove_dir_files(dir);
    return hash;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s GOLDEN_FILE [TMPDIR]\n", argv[0]);
        return 2;
    }
    const char *golden = argv[1];
    char dir[4096];
    /* Memory-backed where there is one: the store's commits and
     * checkpoints then cost no disk flushes (the test's time is the Core's). */
    const char *base = argc > 2                        ? argv[2]
                       : access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                       : getenv("TMPDIR")              ? getenv("TMPDIR")
                                                       : "/tmp";
    snprintf(dir, sizeof dir, "%s/rung-golden-XXXXXX", base);
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "mkdtemp %s: %s\n", dir, strerror(errno));
        return 2;
    }
    const char *trace = getenv("RUNG_GOLDEN_TRACE");
    int trace_seed = trace ? atoi(trace) : 0;
    bool write = getenv("RUNG_GOLDEN_WRITE") && strcmp(getenv("RUNG_GOLDEN_WRITE"), "1") == 0;

    uint64_t want[SEEDS + 1] = {0};
    bool have[SEEDS + 1] = {false};
    if (!write) {
        FILE *f = fopen(golden, "r");
        if (f == NULL) {
            fprintf(stderr, "%s: %s (RUNG_GOLDEN_WRITE=1 writes it)\n", golden, strerror(errno));
            rmdir(dir);
            return 1;
        }
        int seed;
        uint64_t h;
        while (fscanf(f, "%d %" SCNx64, &seed, &h) == 2)
            if (seed >= 1 && seed <= SEEDS) {
                want[seed] = h;
                have[seed] = true;
            }
        fclose(f);
    }
    FILE *out = NULL;
    if (write && (out = fopen(golden, "w")) == NULL) {
        fprintf(stderr, "%s: %s\n", golden, strerror(errno));
        rmdir(dir);
        return 1;
    }
    /* An empty database with every migration applied, copied for each
     * seed: applying them costs more than a seed's run. */
    char empty[4200];
    snprintf(empty, sizeof empty, "%s.empty.db", dir);
    StoreOptions opt = {.init = true};
    RungError err;
    rung_error_clear(&err);
    Store *store;
    if (store_open(empty, &opt, &store, &err) != 0) {
        fprintf(stderr, "store_open %s: %s\n", empty, err.message);
        return 1;
    }
    store_close(store);
    int bad = 0;
    for (int seed = 1; seed <= SEEDS; seed++) {
        tracing = seed == trace_seed;
        uint64_t h = run_seed(seed, dir, empty);
        if (out != NULL)
            fprintf(out, "%d %016" PRIx64 "\n", seed, h);
        else if (!have[seed] || h != want[seed]) {
            if (bad < 10) /* the first few: one tells as much as all */
                fprintf(stderr,
                        "seed %d (scheduler %d): hash %016" PRIx64 ", want %016" PRIx64 "\n", seed,
                        seed % N_SPECS, h, want[seed]);
            bad++;
        }
    }
    rmdir(dir);
    static const char *const made[] = {"", ".created", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
        char p[4300];
        snprintf(p, sizeof p, "%s%s", empty, made[i]);
        unlink(p);
    }
    if (out != NULL) {
        fclose(out);
        printf("wrote %d hashes to %s\n", SEEDS, golden);
        return 0;
    }
    if (bad > 0) {
        fprintf(stderr,
                "%d of %d seeds changed: the Core behaves differently (RUNG_GOLDEN_TRACE=<seed> "
                "prints what is hashed; diff it against a build of the parent commit)\n",
                bad, SEEDS);
        return 1;
    }
    printf("%d seeds: every hash as in %s\n", SEEDS, golden);
    return 0;
}
