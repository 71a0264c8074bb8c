/* multifidelity_bench: model-based asynchronous multi-fidelity search,
 * measured (bench/README.md, "Multi-fidelity search"; bench/multifidelity.sh).
 *
 * A discrete-event simulation of W workers over simulated wall-clock time,
 * on one of two benchmarks:
 * - lc4: bench/asha.c's synthetic learning curves (81 steps, 4 uniform
 *   parameters x0 .. x3 in [0, 1]). The config is the searcher's proposal;
 *   trial n of seed s takes its noise and its step duration from asha.c's
 *   stream of (s, n): the stream's four coordinates are drawn and dropped,
 *   then eps_1 .. eps_81 by Box-Muller, then the duration d_n uniform on
 *   1 .. J time units a step (--jitter, 4). True final loss: the noise-free
 *   loss at t = 81; best possible: g* (about 0.0530), found as asha.c does.
 *   No start-up cost.
 * - fmnist: the tabular benchmark of bench/data/fmnist-mlp-curves (rung-train
 *   on Fashion-MNIST, 27 epochs per config; --space and --curves, the latter
 *   decompressed). A proposed config is snapped to the nearest table config
 *   not run yet in that simulation (the nearest of all once every one has
 *   run; nearest_row) in the space's unit-cube coordinates (space_encode:
 *   uniform domains linear, log domains in log space, integers and choices
 *   at the centre of their cell), as
 *   Syne Tune's blackbox surrogate with one nearest neighbour does; the
 *   searcher is told the snapped config (the proposal with the table's
 *   values). Epoch t takes the table's epoch_s[t] seconds; each run of a
 *   trial (its start, and a resume under promote) costs --startup seconds
 *   more (1.0). A loss the table records as null (non-finite: the run
 *   diverged) or above 10 is reported as 10 (chance is ln 10 = 2.30). True
 *   final loss: the recorded val_loss at epoch 27; best possible: the
 *   table's lowest.
 * - lcbench: one OpenML task of LCBench through YAHPO Gym's surrogate
 *   network (bench/README.md section 10; --lcbench DIR, the graph that
 *   bench/lcbench_export.py exports, and --task ID). The config is the
 *   proposal in LCB_SPACE (config_space.json's ranges and log scales);
 *   the surrogate gives its val_accuracy and cumulative time at epochs
 *   1 .. 52 in one batch (bench/lcbench.c). Loss at epoch t: 1 -
 *   val_accuracy / 100 (val_accuracy, the metric the data's sanity figure
 *   gives, not val_balanced_accuracy); epoch t takes time(t) -
 *   max over s < t of time(s), at least MF_LCB_MIN_EPOCH_S (the surrogate's
 *   cumulative time is not always increasing). No start-up cost (time(1)
 *   includes it) and no noise: the reported loss is the true one. Best
 *   possible: the lowest loss at epoch 52 that lcb_best's search finds
 *   (65,536 random configs, then 8 rounds of 1,024 Gaussian steps around
 *   the best so far); an arm may beat it (negative regret).
 *
 * Each arm drives server/asha.h as bench/asha.c does (asha_report,
 * asha_trial_end, asha_promotions' trials to the front of the queue): idle
 * workers, in worker order, take the front of the promoted queue, else a
 * new trial, whose config the arm's searcher proposes there and then
 * (asynchronous: it sees every report made so far; the configs of trials
 * not ended, running, queued or paused, are its pending points). Events are
 * handled in time order, ties in worker order; the run ends at the budget
 * T: no report after T counts. Arms:
 *   random+asha          sampler_config of the random searcher, asha
 *   random+hyperband     the same under hyperband (what the scheduler
 *                        alone gives)
 *   bayes+asha           bayes_propose as rungd does without multi_fidelity:
 *                        each ended trial (stopped or completed) one
 *                        observation, its last reported value
 *   bayes_mf+asha        bayes_mf_propose given every rung record so far
 *                        (asha_records: per trial and rung level reached,
 *                        the loss the scheduler judged there), as rungd does
 *                        with searcher.multi_fidelity
 *   bayes_mf+hyperband   the same under hyperband
 *   bayes+hyperband      bayes on last values under hyperband (what
 *                        multi_fidelity false gives there)
 *   tpe+asha             tpe_propose (sampler/tpe.h) on each ended trial's
 *                        last value, as rungd's tpe with multi_fidelity false
 *   tpe_mf+asha          tpe_mf_propose given every rung record so far and
 *                        a record at max_t for each trial that ran to it,
 *                        as rungd's tpe does by default under rungs
 *   tpe_mf+hyperband     the same under hyperband: Rung's multi-fidelity
 *                        method (docs/searchers.md, "Multi-fidelity")
 *   tpe_mfb+hyperband    the same, each trial's config proposed from the
 *                        trials of its own hyperband bracket only (as
 *                        Optuna's TPE sees a HyperbandPruner's study); a
 *                        variant measured here, not in rungd
 *   random+hyperband_b, bayes_mf+hyperband_b, tpe_mf+hyperband_b
 *                        the same arms with "allocation": "budget" (the
 *                        brackets drawn as Hyperband sizes them, as
 *                        Optuna's HyperbandPruner does; docs/schedulers.md)
 * asha: grace period 1, rf 3, one bracket; hyperband: grace 1, rf 3, every
 * bracket, drawn by Ray's softmax unless the arm says budget; searcher
 * seed = the run's seed, bayes with its default n_initial.
 *
 * Figures per (arm, W, seed): the trial a user would pick at time T is the
 * one with the lowest reported loss at max_t among trials that reported
 * max_t by T; its regret is its true final loss minus the best possible.
 * Each run prints one JSON line with the regret as a step function of time
 * ("trace": [[time, regret], ...], from the first completed trial on), the
 * trials started, steps reported, and the CPU seconds spent proposing and
 * in the whole run;
 * bench/multifidelity.sh aggregates them beside Optuna's
 * (bench/optuna_multifidelity.py).
 *
 * --check-lc4 FILE writes lc4's noise and durations of seeds 0 .. 1,
 * trials 0 .. 29, and --dump-table FILE the table's cube coordinates (on
 * lcbench: the best possible and the curve of LCB_CHECK_CONFIG), so that
 * the Python side can check it replays the same numbers. */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "asha.h"
#include "bayes.h"
#include "lc4.h"
#include "lcbench.h"
#include "sampler.h"
#include "tpe.h"

#define MF_MAX_T 81
#define MF_MAX_WORKERS 256
#define MF_MAX_DIMS 16
#define MF_LOSS_CAP 10.0
#define MF_QUEUE 65536 /* promoted trials waiting at once */

static const char *LC4_SPACE = "{\"x0\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"x1\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"x2\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                               " \"x3\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}";

/* LCBench's tuned parameters (config_space.json's ranges and log scales;
 * randint and lograndint exclude high), and x_cont's columns 1 .. 7 in
 * order (column 0 is the epoch). */
static const char *LCB_SPACE =
    "{\"batch_size\": {\"type\": \"lograndint\", \"low\": 16, \"high\": 513},"
    " \"learning_rate\": {\"type\": \"loguniform\", \"low\": 0.0001, \"high\": 0.1},"
    " \"momentum\": {\"type\": \"uniform\", \"low\": 0.1, \"high\": 0.99},"
    " \"weight_decay\": {\"type\": \"uniform\", \"low\": 0.00001, \"high\": 0.1},"
    " \"num_layers\": {\"type\": \"randint\", \"low\": 1, \"high\": 6},"
    " \"max_units\": {\"type\": \"lograndint\", \"low\": 64, \"high\": 1025},"
    " \"max_dropout\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}";
static const char *const LCB_NAMES[LCB_X_CONT] = {"epoch",     "batch_size",   "learning_rate",
                                                  "momentum",  "weight_decay", "num_layers",
                                                  "max_units", "max_dropout"};
/* config_space.json's defaults: the curve --dump-table writes */
static const char *LCB_CHECK_CONFIG =
    "{\"batch_size\": 91, \"learning_rate\": 0.0031622777, \"momentum\": 0.545,"
    " \"weight_decay\": 0.050005, \"num_layers\": 3, \"max_units\": 256, \"max_dropout\": 0.5}";
#define MF_LCB_EPOCHS 52
#define MF_LCB_MIN_EPOCH_S 0.01
#define MF_LCB_WORKER_TIME 20000.0 /* budget T = this / W seconds (bench/README.md) */

/* ---- the benchmark ---- */

/* The table's tuned parameters, in the space's order: the names
 * --dump-table writes beside the cube coordinates. */
typedef struct Dim {
    const char *name;
} Dim;

typedef struct Bench {
    bool lc4;
    LcbGraph *lcb; /* lcbench: the surrogate; NULL otherwise */
    int lcb_cat;   /* the task's x_cat */
    json_t *space_json;
    Space *space;
    int max_t;
    double best; /* g*, or the table's lowest final loss */
    int jitter;
    double startup;
    /* the table */
    int n_rows;
    json_t **row_config; /* the tuned values */
    double *row_u;       /* n_rows x n_dims */
    double *row_loss;    /* n_rows x (max_t + 1), capped; [0] unused */
    double *row_dur;     /* n_rows x (max_t + 1): epoch_s; [0] unused */
    Dim dims[MF_MAX_DIMS];
    int n_dims;
} Bench;

/* The space's unit-cube coordinates of a table config: sampler/cube.c's
 * encoding (space_encode), the one bayes models. */
static void encode(const Bench *b, const json_t *config, double *u)
{
    if (space_encode(b->space, config, u, NULL) != 0)
        abort(); /* load_table encoded every row once already */
}

static int load_table(Bench *b, const char *space_path, const char *curves_path)
{
    json_error_t je;
    b->space_json = json_load_file(space_path, 0, &je);
    if (b->space_json == NULL) {
        fprintf(stderr, "multifidelity: %s: %s\n", space_path, je.text);
        return -1;
    }
    RungError err;
    if (space_parse(b->space_json, &b->space, &err) != 0) {
        fprintf(stderr, "multifidelity: %s: %s\n", space_path, err.message);
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(b->space_json, key, v) {
        const json_t *type = json_object_get(v, "type");
        if (!json_is_string(type))
            continue; /* a constant */
        if (b->n_dims == MF_MAX_DIMS)
            return -1;
        b->dims[b->n_dims++].name = key;
    }
    if (b->n_dims != space_cube_dims(b->space)) {
        fprintf(stderr, "multifidelity: %d tuned parameters, the space has %d\n", b->n_dims,
                space_cube_dims(b->space));
        return -1;
    }
    b->max_t = (int)json_integer_value(json_object_get(b->space_json, "epochs"));
    if (b->max_t < 1 || b->max_t > MF_MAX_T) {
        fprintf(stderr, "multifidelity: epochs %d out of range\n", b->max_t);
        return -1;
    }
    FILE *f = fopen(curves_path, "r");
    if (f == NULL) {
        perror(curves_path);
        return -1;
    }
    int cap = 1024, T = b->max_t;
    b->row_config = malloc((size_t)cap * sizeof *b->row_config);
    b->row_u = malloc((size_t)cap * (size_t)b->n_dims * sizeof(double));
    b->row_loss = malloc((size_t)cap * (size_t)(T + 1) * sizeof(double));
    b->row_dur = malloc((size_t)cap * (size_t)(T + 1) * sizeof(double));
    char *line = NULL;
    size_t linecap = 0;
    b->best = INFINITY;
    while (getline(&line, &linecap, f) > 0) {
        if (line[0] == '\n')
            continue;
        json_t *row = json_loads(line, 0, &je);
        if (row == NULL || b->n_rows == cap) {
            fprintf(stderr, "multifidelity: %s row %d: %s\n", curves_path, b->n_rows,
                    row == NULL ? je.text : "too many rows");
            return -1;
        }
        int r = b->n_rows++;
        const json_t *config = json_object_get(row, "config"),
                     *loss = json_object_get(row, "val_loss"),
                     *dur = json_object_get(row, "epoch_s");
        if ((int)json_array_size(loss) != T || (int)json_array_size(dur) != T) {
            fprintf(stderr, "multifidelity: row %d: not %d epochs\n", r, T);
            return -1;
        }
        b->row_config[r] = json_incref((json_t *)config);
        double *L = &b->row_loss[(size_t)r * (size_t)(T + 1)];
        double *D = &b->row_dur[(size_t)r * (size_t)(T + 1)];
        L[0] = D[0] = 0;
        for (int t = 1; t <= T; t++) {
            const json_t *l = json_array_get(loss, (size_t)t - 1);
            double x = json_is_number(l) ? json_number_value(l) : MF_LOSS_CAP;
            L[t] = isfinite(x) && x < MF_LOSS_CAP ? x : MF_LOSS_CAP;
            D[t] = json_number_value(json_array_get(dur, (size_t)t - 1));
        }
        if (L[T] < b->best)
            b->best = L[T];
        if (space_encode(b->space, config, &b->row_u[(size_t)r * (size_t)b->n_dims], &err) != 0) {
            fprintf(stderr, "multifidelity: row %d: %s\n", r, err.message);
            return -1;
        }
        json_decref(row);
    }
    free(line);
    fclose(f);
    if (b->n_rows == 0) {
        fprintf(stderr, "multifidelity: %s: no rows\n", curves_path);
        return -1;
    }
    return 0;
}

/* One config's loss and epoch durations at epochs 1 .. 52 (header). */
static int lcb_curve(const Bench *b, const json_t *config, double *loss, double *dur)
{
    float x[MF_LCB_EPOCHS * LCB_X_CONT], y[MF_LCB_EPOCHS * LCB_OUTPUTS];
    int32_t cat[MF_LCB_EPOCHS];
    for (int t = 0; t < MF_LCB_EPOCHS; t++) {
        cat[t] = b->lcb_cat;
        x[t * LCB_X_CONT] = (float)(t + 1);
        for (int j = 1; j < LCB_X_CONT; j++)
            x[t * LCB_X_CONT + j] = (float)json_number_value(json_object_get(config, LCB_NAMES[j]));
    }
    char err[256];
    if (lcb_eval(b->lcb, MF_LCB_EPOCHS, cat, x, y, err, sizeof err) != 0) {
        fprintf(stderr, "multifidelity: lcbench: %s\n", err);
        return -1;
    }
    double done = 0; /* the latest cumulative time so far */
    loss[0] = dur[0] = 0;
    for (int t = 1; t <= MF_LCB_EPOCHS; t++) {
        double cum = y[(t - 1) * LCB_OUTPUTS + 0];
        loss[t] = 1.0 - y[(t - 1) * LCB_OUTPUTS + 1] / 100.0;
        dur[t] = cum - done > MF_LCB_MIN_EPOCH_S ? cum - done : MF_LCB_MIN_EPOCH_S;
        done = cum > done ? cum : done;
    }
    return 0;
}

/* LCB_SPACE's values of a point u of [0, 1]^7 into x_cont's columns 1 .. 7. */
static void lcb_decode(const double *u, float *x)
{
    x[1] = (float)fmin(512, floor(exp(log(16) + u[0] * (log(513) - log(16)))));
    x[2] = (float)exp(log(1e-4) + u[1] * (log(0.1) - log(1e-4)));
    x[3] = (float)(0.1 + u[2] * 0.89);
    x[4] = (float)(1e-5 + u[3] * (0.1 - 1e-5));
    x[5] = (float)fmin(5, 1 + floor(u[4] * 5));
    x[6] = (float)fmin(1024, floor(exp(log(64) + u[5] * (log(1025) - log(64)))));
    x[7] = (float)u[6];
}

/* The best possible final loss, as the header says: a search, not a proof. */
static int lcb_best(Bench *b, double *best)
{
    enum { BATCH = 1024, DIMS = LCB_X_CONT - 1 };
    static float x[BATCH * LCB_X_CONT], y[BATCH * LCB_OUTPUTS];
    static double u[BATCH * DIMS];
    static int32_t cat[BATCH];
    double ubest[DIMS] = {0};
    uint64_t st = 0x6c6362656e6368ULL; /* "lcbench": the search is the same every run */
    char err[256];
    *best = INFINITY;
    for (int round = 0; round < 64 + 8; round++) {
        double sigma = round < 64 ? -1 : 0.1 / (double)(1 << (round - 64));
        for (int i = 0; i < BATCH; i++) {
            for (int d = 0; d < DIMS; d++) {
                double v;
                if (sigma < 0) {
                    v = lc4_uniform(&st);
                } else { /* Box-Muller */
                    double r = sqrt(-2 * log(1 - lc4_uniform(&st)));
                    v = ubest[d] + sigma * r * cos(2 * M_PI * lc4_uniform(&st));
                }
                u[i * DIMS + d] = fmin(1, fmax(0, v));
            }
            cat[i] = b->lcb_cat;
            x[i * LCB_X_CONT] = MF_LCB_EPOCHS;
            lcb_decode(&u[i * DIMS], &x[i * LCB_X_CONT]);
        }
        if (lcb_eval(b->lcb, BATCH, cat, x, y, err, sizeof err) != 0) {
            fprintf(stderr, "multifidelity: lcbench: %s\n", err);
            return -1;
        }
        for (int i = 0; i < BATCH; i++) {
            double l = 1.0 - y[i * LCB_OUTPUTS + 1] / 100.0;
            if (l < *best) {
                *best = l;
                memcpy(ubest, &u[i * DIMS], sizeof ubest);
            }
        }
    }
    return 0;
}

/* The nearest table config not run yet in this simulation (used[], may
 * be NULL), or the nearest of all once every one has run: a tabular
 * benchmark is a finite space, and a searcher that proposes near a config
 * it has already run should get that region's next config rather than a
 * repeat (Syne Tune's searchers skip configs already chosen, too). */
static int nearest_row(const Bench *b, const json_t *config, const bool *used)
{
    double u[MF_MAX_DIMS];
    encode(b, config, u);
    int best = -1;
    double bd = INFINITY;
    for (int pass = 0; pass < 2 && best < 0; pass++, used = NULL)
        for (int r = 0; r < b->n_rows; r++) {
            if (used != NULL && used[r])
                continue;
            const double *ru = &b->row_u[(size_t)r * (size_t)b->n_dims];
            double d = 0;
            for (int i = 0; i < b->n_dims; i++)
                d += (u[i] - ru[i]) * (u[i] - ru[i]);
            if (d < bd) {
                bd = d;
                best = r;
            }
        }
    return best;
}

/* ---- arms ---- */

typedef enum { S_RANDOM, S_BAYES, S_BAYES_MF, S_TPE, S_TPE_MF, S_TPE_MFB } SearcherKind;

typedef struct Arm {
    const char *name;
    SearcherKind searcher;
    AshaType type;
    bool budget_brackets; /* hyperband's brackets as Li et al. size them */
} Arm;

static const Arm ARMS[] = {
    {"random+asha", S_RANDOM, ASHA_ASHA, false},
    {"random+hyperband", S_RANDOM, ASHA_HYPERBAND, false},
    {"bayes+asha", S_BAYES, ASHA_ASHA, false},
    {"bayes_mf+asha", S_BAYES_MF, ASHA_ASHA, false},
    {"bayes_mf+hyperband", S_BAYES_MF, ASHA_HYPERBAND, false},
    {"bayes+hyperband", S_BAYES, ASHA_HYPERBAND, false},
    {"tpe+asha", S_TPE, ASHA_ASHA, false},
    {"tpe_mf+asha", S_TPE_MF, ASHA_ASHA, false},
    {"tpe_mf+hyperband", S_TPE_MF, ASHA_HYPERBAND, false},
    {"tpe_mfb+hyperband", S_TPE_MFB, ASHA_HYPERBAND, false},
    {"random+hyperband_b", S_RANDOM, ASHA_HYPERBAND, true},
    {"bayes_mf+hyperband_b", S_BAYES_MF, ASHA_HYPERBAND, true},
    {"tpe_mf+hyperband_b", S_TPE_MF, ASHA_HYPERBAND, true},
};
#define MF_NARMS ((int)(sizeof ARMS / sizeof ARMS[0]))

/* ---- the simulation ---- */

typedef enum { TS_RUNNING, TS_QUEUED, TS_PAUSED, TS_ENDED } TrialState;

typedef struct SimTrial {
    json_t *config; /* what the searcher was told */
    TrialState state;
    int t; /* last step reported */
    double final;
    double loss[MF_MAX_T + 1];
    double dur[MF_MAX_T + 1];
} SimTrial;

typedef struct Sim {
    const Bench *b;
    const Arm *arm;
    int seed;
    Asha *asha;
    bool promote;
    SearcherSpec spec;
    SimTrial *trials;
    int64_t n, cap;
    int64_t *queue; /* promoted trials, front first */
    bool *used;     /* the table: rows run so far */
    int64_t q_len;
    int workers;
    int64_t running[MF_MAX_WORKERS];
    double due[MF_MAX_WORKERS];
    int64_t steps;
    double inc_loss, inc_regret;
    double *trace; /* (time, regret) pairs */
    int64_t n_trace, cap_trace;
    double propose_s;
    int failed;
} Sim;

/* CPU seconds of this process: wall time means little on a shared machine. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The searcher's config for trial s->n. */
static json_t *propose(Sim *s)
{
    int64_t n = s->n;
    if (s->arm->searcher == S_RANDOM)
        return sampler_config(s->b->space, &s->spec, n);
    BayesObservation *obs = calloc((size_t)n + 1, sizeof *obs);
    const json_t **pend = calloc((size_t)n + 1, sizeof *pend);
    BayesRungRecord *rr = NULL;
    int64_t n_obs = 0, n_pend = 0, n_rr = 0;
    const AshaParams *ap = asha_params(s->asha);
    int my_bracket = asha_bracket(ap, n);
    bool per_bracket = s->arm->searcher == S_TPE_MFB;
    for (int64_t i = 0; i < n; i++) {
        const SimTrial *t = &s->trials[i];
        if (per_bracket && asha_bracket(ap, i) != my_bracket)
            continue;
        if (t->state == TS_ENDED)
            obs[n_obs++] = (BayesObservation){.config = t->config, .loss = t->loss[t->t]};
        else
            pend[n_pend++] = t->config;
    }
    BayesHistory h = {.obs = obs, .n_obs = n_obs, .pending = pend, .n_pending = n_pend};
    if (s->arm->searcher == S_BAYES_MF || s->arm->searcher == S_TPE_MF || per_bracket) {
        int64_t k = asha_records(s->asha, NULL, 0);
        AshaRecord *recs = malloc((size_t)(k + 1) * sizeof *recs);
        rr = malloc((size_t)(k + 1) * sizeof *rr);
        asha_records(s->asha, recs, k);
        for (int64_t i = 0; i < k; i++)
            if (!per_bracket || asha_bracket(ap, recs[i].trial) == my_bracket)
                rr[n_rr++] = (BayesRungRecord){.config = s->trials[recs[i].trial].config,
                                               .level = recs[i].milestone,
                                               .loss = recs[i].loss,
                                               .number = recs[i].trial};
        free(recs);
        /* The trials that ran to max_t: a record there (max_t is not
         * always a rung: LCBench's 52 epochs under rf 3). */
        if (s->arm->searcher != S_BAYES_MF) {
            rr = realloc(rr, (size_t)(k + n + 1) * sizeof *rr);
            for (int64_t i = 0; i < n; i++) {
                const SimTrial *t = &s->trials[i];
                if (t->t == s->b->max_t && (!per_bracket || asha_bracket(ap, i) == my_bracket))
                    rr[n_rr++] = (BayesRungRecord){.config = t->config,
                                                   .level = s->b->max_t,
                                                   .loss = t->loss[t->t],
                                                   .number = i};
            }
        }
        h.rungs = rr;
        h.n_rungs = n_rr;
    }
    json_t *out = NULL;
    RungError err;
    double t0 = now_s();
    int rc;
    switch (s->arm->searcher) {
    case S_BAYES_MF:
        rc = bayes_mf_propose(s->b->space, &s->spec, n, 1, &h, &out, NULL, &err);
        break;
    case S_TPE:
        rc = tpe_propose(s->b->space, &s->spec, n, 1, &h, &out, &err);
        break;
    case S_TPE_MF:
    case S_TPE_MFB:
        rc = tpe_mf_propose(s->b->space, &s->spec, n, 1, &h, &out, &err);
        break;
    default:
        rc = bayes_propose(s->b->space, &s->spec, n, 1, &h, &out, &err);
    }
    s->propose_s += now_s() - t0;
    if (rc != 0) {
        fprintf(stderr, "multifidelity: %s seed %d trial %lld: %s\n", s->arm->name, s->seed,
                (long long)n, err.message);
        out = NULL;
    }
    free(obs);
    free(pend);
    free(rr);
    return out;
}

/* A new trial, number s->n, proposed now; -1 on failure. */
static int64_t new_trial(Sim *s)
{
    if (s->n == s->cap) {
        s->cap *= 2;
        s->trials = realloc(s->trials, (size_t)s->cap * sizeof *s->trials);
    }
    json_t *config = propose(s);
    if (config == NULL)
        return -1;
    const Bench *b = s->b;
    SimTrial *t = &s->trials[s->n];
    memset(t, 0, sizeof *t);
    if (b->lc4) {
        double x[LC4_DIMS], eps[LC4_STEPS + 1];
        for (int d = 0; d < LC4_DIMS; d++) {
            char name[4] = {'x', (char)('0' + d), 0};
            x[d] = json_number_value(json_object_get(config, name));
        }
        double drawn[LC4_DIMS]; /* the stream's own config, unused: the searcher's is x */
        int dur = lc4_draw(s->seed, s->n, b->jitter, drawn, eps);
        for (int k = 1; k <= LC4_STEPS; k++) {
            t->loss[k] = lc4_clean(x, k) + LC4_NOISE * eps[k];
            t->dur[k] = dur;
        }
        t->final = lc4_clean(x, LC4_STEPS);
        t->config = config;
    } else if (b->lcb != NULL) {
        t->config = config;
        if (lcb_curve(b, config, t->loss, t->dur) != 0) {
            json_decref(config);
            return -1;
        }
        t->final = t->loss[b->max_t];
    } else {
        int r = nearest_row(b, config, s->used);
        s->used[r] = true;
        /* The proposal with the table's values: what the searcher is told. */
        json_object_update(config, b->row_config[r]);
        memcpy(t->loss, &b->row_loss[(size_t)r * (size_t)(b->max_t + 1)],
               (size_t)(b->max_t + 1) * sizeof(double));
        memcpy(t->dur, &b->row_dur[(size_t)r * (size_t)(b->max_t + 1)],
               (size_t)(b->max_t + 1) * sizeof(double));
        t->final = t->loss[b->max_t];
        t->config = config;
    }
    t->state = TS_RUNNING;
    return s->n++;
}

/* Idle workers, in worker order, take the queue's front, else a new trial. */
static void dispatch(Sim *s, double now)
{
    for (int w = 0; w < s->workers && !s->failed; w++) {
        if (s->running[w] >= 0)
            continue;
        int64_t trial;
        if (s->q_len > 0) {
            trial = s->queue[0];
            memmove(s->queue, s->queue + 1, (size_t)(--s->q_len) * sizeof *s->queue);
        } else {
            trial = new_trial(s);
            if (trial < 0) {
                s->failed = 1;
                return;
            }
        }
        SimTrial *t = &s->trials[trial];
        t->state = TS_RUNNING;
        s->running[w] = trial;
        s->due[w] = now + s->b->startup + t->dur[t->t + 1];
    }
}

static void report(Sim *s, int w, double now)
{
    int64_t trial = s->running[w];
    SimTrial *t = &s->trials[trial];
    int k = ++t->t;
    s->steps++;
    int rung;
    AshaDecision d = asha_report(s->asha, trial, k, true, t->loss[k], &rung);
    if (k >= s->b->max_t) {
        if (d == ASHA_CONTINUE)
            d = ASHA_COMPLETE;
        if (t->loss[k] < s->inc_loss) {
            s->inc_loss = t->loss[k];
            double regret = t->final - s->b->best;
            if (regret != s->inc_regret) {
                s->inc_regret = regret;
                if (s->n_trace == s->cap_trace) {
                    s->cap_trace = s->cap_trace ? 2 * s->cap_trace : 64;
                    s->trace = realloc(s->trace, (size_t)s->cap_trace * 2 * sizeof(double));
                }
                s->trace[2 * s->n_trace] = now;
                s->trace[2 * s->n_trace + 1] = regret;
                s->n_trace++;
            }
        }
    }
    if (d == ASHA_CONTINUE) {
        s->due[w] = now + t->dur[k + 1];
    } else {
        s->running[w] = -1;
        if (d == ASHA_PAUSE) {
            t->state = TS_PAUSED;
        } else {
            asha_trial_end(s->asha, trial, k, true, t->loss[k]);
            t->state = TS_ENDED;
        }
    }
    if (s->promote) {
        int64_t buf[256];
        int64_t m = asha_promotions(s->asha, buf, 256);
        if (s->q_len + m > MF_QUEUE)
            m = MF_QUEUE - s->q_len;
        /* Promoted trials go to the queue's front in their order (sched_asha.c). */
        memmove(s->queue + m, s->queue, (size_t)s->q_len * sizeof *s->queue);
        for (int64_t i = 0; i < m; i++) {
            s->queue[i] = buf[i];
            s->trials[buf[i]].state = TS_QUEUED;
        }
        s->q_len += m;
    }
    dispatch(s, now);
}

static int simulate(Sim *s, const Bench *b, const Arm *arm, int workers, int seed, double budget)
{
    memset(s, 0, sizeof *s);
    s->b = b;
    s->arm = arm;
    s->seed = seed;
    s->workers = workers;
    s->inc_loss = INFINITY;
    s->inc_regret = NAN;
    AshaParams p = {.type = arm->type,
                    .max_t = b->max_t,
                    .grace_period = 1,
                    .rf = 3,
                    .brackets = 1,
                    .budget_brackets = arm->budget_brackets,
                    .seed = (uint64_t)seed};
    s->asha = asha_new(&p);
    s->promote = asha_params(s->asha)->promote;
    char text[96];
    snprintf(text, sizeof text, "{\"type\": \"%s\", \"seed\": %d}",
             arm->searcher == S_RANDOM ? "random"
             : arm->searcher == S_TPE || arm->searcher == S_TPE_MF || arm->searcher == S_TPE_MFB
                 ? "tpe"
                 : "bayes",
             seed);
    json_t *sj = json_loads(text, 0, NULL);
    RungError err;
    if (searcher_parse(sj, b->space, &s->spec, &err) != 0) {
        fprintf(stderr, "multifidelity: searcher: %s\n", err.message);
        return -1;
    }
    json_decref(sj);
    s->cap = 1024;
    s->trials = malloc((size_t)s->cap * sizeof *s->trials);
    s->queue = malloc((size_t)MF_QUEUE * sizeof *s->queue);
    s->used = calloc((size_t)(b->n_rows > 0 ? b->n_rows : 1), sizeof *s->used);
    for (int w = 0; w < workers; w++)
        s->running[w] = -1;
    dispatch(s, 0);
    while (!s->failed) {
        int w = -1;
        for (int i = 0; i < workers; i++)
            if (s->running[i] >= 0 && (w < 0 || s->due[i] < s->due[w]))
                w = i;
        if (w < 0 || s->due[w] > budget)
            break;
        report(s, w, s->due[w]);
    }
    return s->failed ? -1 : 0;
}

static void sim_free(Sim *s)
{
    for (int64_t i = 0; i < s->n; i++)
        json_decref(s->trials[i].config);
    free(s->trials);
    free(s->queue);
    free(s->used);
    free(s->trace);
    asha_free(s->asha);
}

static void bench_free(Bench *b)
{
    for (int r = 0; r < b->n_rows; r++)
        json_decref(b->row_config[r]);
    free(b->row_config);
    free(b->row_u);
    free(b->row_loss);
    free(b->row_dur);
    lcb_free(b->lcb);
    space_free(b->space);
    json_decref(b->space_json);
}

/* ---- main ---- */

static int parse_list(const char *text, int *out, int cap)
{
    int n = 0;
    for (const char *p = text; *p && n < cap;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > MF_MAX_WORKERS)
            return -1;
        out[n++] = (int)v;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return n;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: multifidelity_bench lc4|fmnist|lcbench [--space FILE --curves FILE.jsonl]\n"
            "  [--lcbench GRAPH_DIR --task ID (lcbench_export.py's folder, an OpenML task)]\n"
            "  [--workers 4,16] [--seeds 20] [--seed0 0] [--worker-time C (budget T = C / W)]\n"
            "  [--arms a,b,...] [--jitter 4] [--startup 1.0] [--check-lc4 FILE]\n"
            "  [--dump-table FILE]\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage();
        return 2;
    }
    Bench b = {.lc4 = strcmp(argv[1], "lc4") == 0, .jitter = 4, .startup = 1.0};
    bool lcbench = strcmp(argv[1], "lcbench") == 0;
    if (!b.lc4 && !lcbench && strcmp(argv[1], "fmnist") != 0) {
        usage();
        return 2;
    }
    const char *space_path = NULL, *curves_path = NULL, *arms = NULL, *check = NULL, *dump = NULL;
    const char *lcb_dir = NULL, *task = NULL;
    int workers[8] = {4, 16}, n_workers = 2, seeds = 20, seed0 = 0;
    double worker_time = -1;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) {
            usage();
            return 2;
        }
        i++;
        if (!strcmp(a, "--space"))
            space_path = v;
        else if (!strcmp(a, "--curves"))
            curves_path = v;
        else if (!strcmp(a, "--workers"))
            n_workers = parse_list(v, workers, 8);
        else if (!strcmp(a, "--seeds"))
            seeds = atoi(v);
        else if (!strcmp(a, "--seed0"))
            seed0 = atoi(v);
        else if (!strcmp(a, "--worker-time"))
            worker_time = atof(v);
        else if (!strcmp(a, "--arms"))
            arms = v;
        else if (!strcmp(a, "--jitter"))
            b.jitter = atoi(v);
        else if (!strcmp(a, "--startup"))
            b.startup = atof(v);
        else if (!strcmp(a, "--check-lc4"))
            check = v;
        else if (!strcmp(a, "--dump-table"))
            dump = v;
        else if (!strcmp(a, "--lcbench"))
            lcb_dir = v;
        else if (!strcmp(a, "--task"))
            task = v;
        else {
            usage();
            return 2;
        }
    }
    if (n_workers < 1 || seeds < 0 || b.jitter < 1 || b.jitter > 100 || !(b.startup >= 0)) {
        usage();
        return 2;
    }
    RungError err;
    if (b.lc4) {
        b.space_json = json_loads(LC4_SPACE, 0, NULL);
        if (space_parse(b.space_json, &b.space, &err) != 0)
            return 1;
        b.max_t = LC4_STEPS;
        b.best = lc4_gstar(NULL);
        b.startup = 0;
        if (fabs(b.best - 0.0530) > 5e-4) {
            fprintf(stderr, "multifidelity: g* = %.6f, not about 0.0530\n", b.best);
            return 1;
        }
        if (worker_time < 0)
            worker_time = 4000;
    } else if (lcbench) {
        if (lcb_dir == NULL || task == NULL) {
            fprintf(stderr, "multifidelity: lcbench needs --lcbench GRAPH_DIR and --task ID\n");
            return 2;
        }
        char lerr[512];
        b.lcb = lcb_load(lcb_dir, lerr, sizeof lerr);
        if (b.lcb == NULL) {
            fprintf(stderr, "multifidelity: --lcbench: %s\n", lerr);
            return 1;
        }
        b.lcb_cat = lcb_task_index(b.lcb, task);
        if (b.lcb_cat < 0) {
            fprintf(stderr, "multifidelity: --task: %s is not one of LCBench's tasks\n", task);
            return 2;
        }
        b.space_json = json_loads(LCB_SPACE, 0, NULL);
        if (space_parse(b.space_json, &b.space, &err) != 0)
            return 1;
        b.max_t = MF_LCB_EPOCHS;
        b.startup = 0;
        if (lcb_best(&b, &b.best) != 0)
            return 1;
        if (worker_time < 0)
            worker_time = MF_LCB_WORKER_TIME;
    } else {
        if (space_path == NULL || curves_path == NULL) {
            usage();
            return 2;
        }
        if (load_table(&b, space_path, curves_path) != 0)
            return 1;
        if (worker_time < 0)
            worker_time = 4000;
    }
    if (check != NULL) {
        FILE *f = fopen(check, "w");
        if (f == NULL)
            return 1;
        for (int seed = 0; seed < 2; seed++)
            for (int n = 0; n < 30; n++) {
                double eps[LC4_STEPS + 1];
                double drawn[LC4_DIMS];
                int dur = lc4_draw(seed, n, b.jitter, drawn, eps);
                fprintf(f, "{\"seed\": %d, \"trial\": %d, \"dur\": %d, \"eps\": [", seed, n, dur);
                for (int t = 1; t <= LC4_STEPS; t++)
                    fprintf(f, "%s%.17g", t > 1 ? ", " : "", eps[t]);
                fprintf(f, "]}\n");
            }
        fprintf(f, "{\"gstar\": %.17g}\n", lc4_gstar(NULL));
        fclose(f);
    }
    if (dump != NULL && b.lcb != NULL) {
        json_t *cc = json_loads(LCB_CHECK_CONFIG, 0, NULL);
        double loss[MF_MAX_T + 1], dur[MF_MAX_T + 1];
        FILE *f = fopen(dump, "w");
        if (f == NULL || lcb_curve(&b, cc, loss, dur) != 0)
            return 1;
        fprintf(f, "{\"task\": \"%s\", \"x_cat\": %d, \"best\": %.17g, \"loss\": [", task,
                b.lcb_cat, b.best);
        for (int t = 1; t <= b.max_t; t++)
            fprintf(f, "%s%.17g", t > 1 ? ", " : "", loss[t]);
        fprintf(f, "], \"dur\": [");
        for (int t = 1; t <= b.max_t; t++)
            fprintf(f, "%s%.17g", t > 1 ? ", " : "", dur[t]);
        fprintf(f, "]}\n");
        fclose(f);
        json_decref(cc);
    } else if (dump != NULL && !b.lc4) {
        FILE *f = fopen(dump, "w");
        if (f == NULL)
            return 1;
        fprintf(f, "{\"names\": [");
        for (int i = 0; i < b.n_dims; i++)
            fprintf(f, "%s\"%s\"", i ? ", " : "", b.dims[i].name);
        fprintf(f, "], \"best\": %.17g, \"u\": [", b.best);
        for (int r = 0; r < b.n_rows; r++) {
            fprintf(f, "%s[", r ? ", " : "");
            for (int i = 0; i < b.n_dims; i++)
                fprintf(f, "%s%.17g", i ? ", " : "", b.row_u[(size_t)r * (size_t)b.n_dims + i]);
            fprintf(f, "]");
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    /* lcbench's runs are named by task, so that the report keeps them apart */
    char name[64];
    snprintf(name, sizeof name, "%s%s%s", argv[1], lcbench ? "-" : "", lcbench ? task : "");
    fprintf(stderr, "multifidelity: %s, max_t %d, best %.6f%s, worker time %g (T = %g / W)\n", name,
            b.max_t, b.best, b.lc4 ? " (g*)" : "", worker_time, worker_time);
    int rc = 0;
    for (int wi = 0; wi < n_workers; wi++) {
        int W = workers[wi];
        double budget = worker_time / W;
        for (int a = 0; a < MF_NARMS; a++) {
            if (arms != NULL) {
                const char *p = strstr(arms, ARMS[a].name);
                size_t len = strlen(ARMS[a].name);
                bool found = false;
                while (p != NULL && !found) {
                    found = (p == arms || p[-1] == ',') && (p[len] == ',' || p[len] == 0);
                    p = strstr(p + 1, ARMS[a].name);
                }
                if (!found)
                    continue;
            }
            for (int seed = seed0; seed < seed0 + seeds; seed++) {
                Sim s;
                double t0 = now_s();
                if (simulate(&s, &b, &ARMS[a], W, seed, budget) != 0) {
                    rc = 1;
                    sim_free(&s);
                    continue;
                }
                /* Why an arm ends where it does: the best true final
                 * regret among the trials it ran to max_t, and among those
                 * its scheduler stopped (or left unfinished) before. */
                double reached = INFINITY, cut = INFINITY;
                for (int64_t i = 0; i < s.n; i++) {
                    double r = s.trials[i].final - b.best;
                    if (s.trials[i].t >= b.max_t)
                        reached = r < reached ? r : reached;
                    else
                        cut = r < cut ? r : cut;
                }
                printf("{\"bench\": \"%s\", \"arm\": \"%s\", \"W\": %d, \"seed\": %d, "
                       "\"budget\": %.17g, \"trials\": %lld, \"steps\": %lld, "
                       "\"propose_s\": %.3f, \"run_s\": %.3f, \"best_reached\": %.17g, "
                       "\"best_cut\": %.17g, \"trace\": [",
                       name, ARMS[a].name, W, seed, budget, (long long)s.n, (long long)s.steps,
                       s.propose_s, now_s() - t0, isfinite(reached) ? reached : -1.0,
                       isfinite(cut) ? cut : -1.0);
                for (int64_t i = 0; i < s.n_trace; i++)
                    printf("%s[%.17g, %.17g]", i ? ", " : "", s.trace[2 * i], s.trace[2 * i + 1]);
                printf("]}\n");
                fflush(stdout);
                sim_free(&s);
            }
        }
    }
    bench_free(&b);
    return rc;
}
