/* The analysis thread and what it computes (analysis.h; docs/api.md,
 * "GET /api/v1/experiments/{id}/importance" and ".../surface"). */
#include "analysis.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bayes.h"
#include "clock.h"
#include "errjson.h"
#include "fanova.h"
#include "views.h"

void analysis_job_free(AnalysisJob *job)
{
    if (job == NULL)
        return;
    free(job->key);
    json_decref(job->space);
    store_completed_free(job->rows, job->n_rows);
    json_decref(job->reply);
    free(job);
}

static void fail(AnalysisJob *job, int code, const char *field, const char *message)
{
    job->status = rung_error_status(code);
    json_decref(job->reply);
    job->reply = rung_error_json(code, field, message);
}

/* The parsed snapshot: each row's config and last metrics. */
typedef struct Parsed {
    Space *space;
    SpaceFeature feat[SPACE_MAX_PARAMS];
    int nf;
    json_t **config; /* n_rows; NULL where the text did not parse */
    json_t **last;
} Parsed;

static void parsed_free(Parsed *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        json_decref(p->config ? p->config[i] : NULL);
        json_decref(p->last ? p->last[i] : NULL);
    }
    free(p->config);
    free(p->last);
    space_free(p->space);
}

static int parse(AnalysisJob *job, Parsed *p)
{
    memset(p, 0, sizeof *p);
    RungError err;
    if (space_parse(job->space, &p->space, &err) != 0) {
        fail(job, RUNG_E_INTERNAL, "", "the experiment's search space no longer parses");
        return -1;
    }
    p->nf = space_features(p->space, p->feat);
    size_t n = (size_t)(job->n_rows > 0 ? job->n_rows : 1);
    p->config = calloc(n, sizeof *p->config);
    p->last = calloc(n, sizeof *p->last);
    if (p->config == NULL || p->last == NULL)
        abort();
    for (int64_t i = 0; i < job->n_rows; i++) {
        const StoreCompleted *r = &job->rows[i];
        p->config[i] = r->config ? json_loads(r->config, 0, NULL) : NULL;
        p->last[i] = r->last ? json_loads(r->last, 0, NULL) : NULL;
    }
    return 0;
}

/* Trial i's value of target t: NAN when it has none (not reported, not a
 * finite number). */
static double target_value(const AnalysisJob *job, const Parsed *p, int64_t i,
                           const AnalysisTarget *t)
{
    if (t->use_best)
        return job->rows[i].has_best ? job->rows[i].best : NAN;
    const json_t *v = json_object_get(p->last[i], t->name);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *kind_name(AnalysisTargetKind k)
{
    return k == TARGET_OBJECTIVE ? "objective" : k == TARGET_CONSTRAINT ? "constraint" : "metric";
}

static json_t *mode_json(int mode)
{
    return mode < 0 ? json_null() : json_string(mode == 1 ? "max" : "min");
}

/* ---- importance ---------------------------------------------------------- */

typedef struct Ranked {
    int k;
    double importance;
} Ranked;

static int cmp_ranked(const void *a, const void *b)
{
    const Ranked *x = a, *y = b;
    if (x->importance != y->importance)
        return x->importance > y->importance ? -1 : 1;
    return x->k - y->k; /* ties in spec order */
}

/* One metric's entry: fANOVA (sampler/fanova.h) over the trials with a
 * finite value of it and a config that fits the space. */
static json_t *importance_of(const AnalysisJob *job, const Parsed *p, const double *x,
                             const bool *fits, const AnalysisTarget *t)
{
    int64_t n = job->n_rows;
    int nf = p->nf;
    double *xs = malloc((size_t)(n > 0 ? n : 1) * (size_t)(nf > 0 ? nf : 1) * sizeof *xs);
    double *ys = malloc((size_t)(n > 0 ? n : 1) * sizeof *ys);
    if (xs == NULL || ys == NULL)
        abort();
    int m = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = fits[i] ? target_value(job, p, i, t) : NAN;
        if (!isfinite(v))
            continue;
        memcpy(xs + (size_t)m * (size_t)nf, x + (size_t)i * (size_t)nf, (size_t)nf * sizeof *xs);
        ys[m++] = v;
    }
    json_t *o = json_pack("{s:s, s:s, s:o, s:i}", "name", t->name, "kind", kind_name(t->kind),
                          "mode", mode_json(t->mode), "trials", m);
    json_t *list = json_array();
    char why[ANALYSIS_NAME_MAX + 128] = "";
    if (nf == 0) {
        snprintf(why, sizeof why, "the search space has no parameter that varies");
    } else if (m < 2) {
        snprintf(why, sizeof why,
                 "%d completed trial%s with a finite value of %s: at least 2 "
                 "are needed",
                 m, m == 1 ? "" : "s", t->name);
    } else {
        int cats[SPACE_MAX_PARAMS];
        for (int k = 0; k < nf; k++)
            cats[k] = p->feat[k].categories;
        FanovaData data = {.n = m, .d = nf, .x = xs, .categories = cats, .y = ys};
        FanovaOptions opt;
        fanova_options_default(&opt);
        opt.seed = job->searcher.seed; /* the same trials give the same answer */
        double imp[SPACE_MAX_PARAMS], sd[SPACE_MAX_PARAMS];
        int active[SPACE_MAX_PARAMS];
        if (fanova_importance(&data, &opt, imp, sd, active, why, sizeof why) == 0) {
            why[0] = '\0';
            Ranked r[SPACE_MAX_PARAMS];
            int nr = 0;
            for (int k = 0; k < nf; k++)
                if (isfinite(imp[k]))
                    r[nr++] = (Ranked){k, imp[k]};
            qsort(r, (size_t)nr, sizeof *r, cmp_ranked);
            for (int j = 0; j < nr; j++) {
                int k = r[j].k;
                json_array_append_new(list,
                                      json_pack("{s:s, s:o, s:o, s:i}", "param", p->feat[k].name,
                                                "importance", view_value(imp[k]), "std",
                                                view_value(isfinite(sd[k]) ? sd[k] : 0.0), "trials",
                                                active[k]));
            }
        } else if (why[0] == '\0') {
            snprintf(why, sizeof why, "fANOVA could not be computed");
        }
    }
    json_object_set_new(o, "importance", list);
    if (why[0] != '\0')
        json_object_set_new(o, "reason", json_string(why));
    free(xs);
    free(ys);
    return o;
}

static void importance(AnalysisJob *job, const Parsed *p)
{
    int64_t n = job->n_rows;
    int nf = p->nf;
    double *x = malloc((size_t)(n > 0 ? n : 1) * (size_t)(nf > 0 ? nf : 1) * sizeof *x);
    bool *fits = calloc((size_t)(n > 0 ? n : 1), sizeof *fits);
    if (x == NULL || fits == NULL)
        abort();
    for (int64_t i = 0; i < n; i++)
        fits[i] = p->config[i] != NULL &&
                  space_feature_row(p->space, p->feat, nf, p->config[i],
                                    x + (size_t)i * (size_t)(nf > 0 ? nf : 1)) == 0;
    json_t *metrics = json_array();
    for (int k = 0; k < job->n_targets; k++)
        json_array_append_new(metrics, importance_of(job, p, x, fits, &job->targets[k]));
    job->status = 200;
    job->reply = json_pack("{s:I, s:s, s:o, s:o}", "experiment_id", (json_int_t)job->exp_id,
                           "method", "fanova", "computed_at", view_time(rung_now_ms()), "metrics",
                           metrics);
    free(x);
    free(fits);
}

/* ---- surface ------------------------------------------------------------- */

static const SpaceFeature *feature(const Parsed *p, const char *name)
{
    for (int k = 0; k < p->nf; k++)
        if (strcmp(p->feat[k].name, name) == 0)
            return &p->feat[k];
    return NULL;
}

/* n values from low to high of f, log-spaced on a log domain. */
static void axis(const SpaceFeature *f, int n, double *v)
{
    for (int i = 0; i < n; i++) {
        double t = (double)i / (double)(n - 1);
        v[i] = f->log && f->low > 0.0 ? exp(log(f->low) + t * (log(f->high) - log(f->low)))
                                      : f->low + t * (f->high - f->low);
    }
    v[0] = f->low; /* exactly the ends, not a rounding off them */
    v[n - 1] = f->high;
}

static json_t *axis_json(const SpaceFeature *f, const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, view_value(v[i]));
    return json_pack("{s:s, s:b, s:o}", "param", f->name, "log", f->log, "values", a);
}

/* Inverse-distance weighting (power 2) of the points in the two
 * parameters' cube coordinates: without a model of the searcher's there is
 * nothing to fit, and IDW needs no hyperparameters, passes through every
 * trial and never leaves the range of the values seen (a thin-plate RBF
 * overshoots between close points of different values, and solving it is
 * cubic in the trials: 10,000 of them would take minutes). */
static void interpolate(const double *pu, const double *pv, const double *pz, int m,
                        const double *gu, const double *gv, int n, double *z)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double num = 0.0, den = 0.0, exact = NAN;
            for (int k = 0; k < m && isnan(exact); k++) {
                double du = pu[k] - gu[j], dv = pv[k] - gv[i];
                double d2 = du * du + dv * dv;
                if (d2 < 1e-24) {
                    exact = pz[k];
                    break;
                }
                num += pz[k] / d2;
                den += 1.0 / d2;
            }
            z[(size_t)i * (size_t)n + (size_t)j] = !isnan(exact) ? exact
                                                                 : (den > 0.0 ? num / den : NAN);
        }
}

static void surface(AnalysisJob *job, const Parsed *p)
{
    const AnalysisTarget *t = &job->targets[0];
    const SpaceFeature *fx = feature(p, job->x), *fy = feature(p, job->y);
    if (fx == NULL || fx->categories > 0 || fy == NULL || fy->categories > 0) {
        fail(job, RUNG_E_INVALID_ARGUMENT, fx == NULL || fx->categories > 0 ? "x" : "y",
             "not a numeric parameter of the search space");
        return;
    }
    int n = job->grid_n;
    int64_t rows = job->n_rows;
    double gx[100], gy[100], gu[100], gv[100];
    axis(fx, n, gx);
    axis(fy, n, gy);
    for (int i = 0; i < n; i++) {
        gu[i] = space_feature_coord(p->space, fx, gx[i]);
        gv[i] = space_feature_coord(p->space, fy, gy[i]);
    }
    /* The points: every completed trial with both parameters and a value. */
    double *pu = malloc((size_t)(rows > 0 ? rows : 1) * 3 * sizeof *pu);
    BayesObservation *obs = calloc((size_t)(rows > 0 ? rows : 1), sizeof *obs);
    if (pu == NULL || obs == NULL)
        abort();
    double *pv = pu + (rows > 0 ? rows : 1), *pz = pv + (rows > 0 ? rows : 1);
    json_t *points = json_array();
    int m = 0;
    int64_t n_obs = 0, best = -1;
    double best_loss = INFINITY;
    for (int64_t i = 0; i < rows; i++) {
        double v = p->config[i] ? target_value(job, p, i, t) : NAN;
        if (!isfinite(v))
            continue;
        /* The searcher's loss: lower is better (bayes.h). */
        double loss = t->mode == 1 ? -v : v;
        obs[n_obs++] = (BayesObservation){.config = p->config[i], .loss = loss};
        if (loss < best_loss) {
            best_loss = loss;
            best = i;
        }
        const json_t *a = json_object_get(p->config[i], fx->name);
        const json_t *b = json_object_get(p->config[i], fy->name);
        if (!json_is_number(a) || !json_is_number(b))
            continue;
        double xa = json_number_value(a), yb = json_number_value(b);
        pu[m] = space_feature_coord(p->space, fx, xa);
        pv[m] = space_feature_coord(p->space, fy, yb);
        pz[m++] = v;
        json_array_append_new(points, json_pack("[o, o, o, I]", view_value(xa), view_value(yb),
                                                view_value(v), (json_int_t)job->rows[i].id));
    }
    double *z = malloc((size_t)n * (size_t)n * sizeof *z);
    if (z == NULL)
        abort();
    for (int k = 0; k < n * n; k++)
        z[k] = NAN;
    bool gp = job->searcher.type == SEARCHER_BAYES;
    json_t *fixed = json_object();
    if (gp && best >= 0) {
        /* The GP the searcher fits (bayes_predict) on every completed trial
         * with a value, its mean on the grid with the other parameters held
         * at the best trial's values. Fewer than two trials: z stays null. */
        const json_t *base = p->config[best];
        int dims = space_cube_dims(p->space);
        size_t cells = (size_t)n * (size_t)n, d = (size_t)(dims > 0 ? dims : 1);
        double *u = malloc(cells * d * sizeof *u);
        double *bu = malloc(d * sizeof *bu);
        if (u == NULL || bu == NULL)
            abort();
        if (space_encode(p->space, base, bu, NULL) == 0 && fx->cube >= 0 && fy->cube >= 0) {
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    double *row = u + ((size_t)i * (size_t)n + (size_t)j) * d;
                    memcpy(row, bu, d * sizeof *row);
                    row[fx->cube] = gu[j];
                    row[fy->cube] = gv[i];
                }
            SearcherSpec searcher = job->searcher;
            BayesHistory h = {.obs = obs, .n_obs = n_obs, .n_objectives = 1};
            RungError err;
            if (bayes_predict(p->space, &searcher, &h, base, u, n * n, z, &err) == 0) {
                for (size_t k = 0; k < cells; k++)
                    z[k] = t->mode == 1 ? -z[k] : z[k];
            } else {
                for (size_t k = 0; k < cells; k++)
                    z[k] = NAN;
            }
        }
        free(bu);
        free(u);
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)base, key, v) {
            if (strcmp(key, fx->name) != 0 && strcmp(key, fy->name) != 0)
                json_object_set(fixed, key, v);
        }
    } else if (!gp) {
        interpolate(pu, pv, pz, m, gu, gv, n, z);
    }
    json_t *zj = json_array();
    for (int i = 0; i < n; i++) {
        json_t *row = json_array();
        for (int j = 0; j < n; j++) {
            double v = z[(size_t)i * (size_t)n + (size_t)j];
            json_array_append_new(row, isfinite(v) ? view_value(v) : json_null());
        }
        json_array_append_new(zj, row);
    }
    job->status = 200;
    job->reply = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "model",
                           gp ? "gp" : "interpolation", "metric", t->name, "x",
                           axis_json(fx, gx, n), "y", axis_json(fy, gy, n), "z", zj, "fixed", fixed,
                           "points", points);
    free(z);
    free(pu);
    free(obs);
}

void analysis_compute(AnalysisJob *job)
{
    Parsed p;
    if (parse(job, &p) != 0) {
        parsed_free(&p, job->n_rows);
        return;
    }
    /* A metric that is no objective or constraint must be one some
     * completed trial reported: a typo is an error, not an empty entry. */
    for (int k = 0; k < job->n_targets; k++) {
        const AnalysisTarget *t = &job->targets[k];
        bool seen = t->kind != TARGET_METRIC;
        for (int64_t i = 0; i < job->n_rows && !seen; i++)
            seen = json_object_get(p.last[i], t->name) != NULL;
        if (!seen) {
            char msg[ANALYSIS_NAME_MAX + 96];
            snprintf(msg, sizeof msg, "metric: no completed trial of the experiment reported %s",
                     t->name);
            fail(job, RUNG_E_INVALID_ARGUMENT, "metric", msg);
            parsed_free(&p, job->n_rows);
            return;
        }
    }
    if (job->kind == ANALYSIS_IMPORTANCE)
        importance(job, &p);
    else
        surface(job, &p);
    parsed_free(&p, job->n_rows);
}

/* ---- the thread ---------------------------------------------------------- */

struct Analysis {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    AnalysisJob *head, *tail; /* queued, oldest first */
    bool stopping;
    AnalysisDone done;
    void *ctx;
};

static void *run(void *arg)
{
    Analysis *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (a->head == NULL && !a->stopping)
            pthread_cond_wait(&a->cond, &a->mu);
        if (a->stopping)
            break;
        AnalysisJob *job = a->head;
        a->head = job->next;
        if (a->head == NULL)
            a->tail = NULL;
        job->next = NULL;
        pthread_mutex_unlock(&a->mu);
        analysis_compute(job);
        a->done(a->ctx, job);
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

Analysis *analysis_start(AnalysisDone done, void *ctx)
{
    Analysis *a = calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    a->done = done;
    a->ctx = ctx;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cond, NULL);
    if (pthread_create(&a->thread, NULL, run, a) != 0) {
        pthread_mutex_destroy(&a->mu);
        pthread_cond_destroy(&a->cond);
        free(a);
        return NULL;
    }
    return a;
}

void analysis_submit(Analysis *a, AnalysisJob *job)
{
    job->next = NULL;
    pthread_mutex_lock(&a->mu);
    if (a->tail)
        a->tail->next = job;
    else
        a->head = job;
    a->tail = job;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->mu);
}

void analysis_stop(Analysis *a)
{
    if (a == NULL)
        return;
    pthread_mutex_lock(&a->mu);
    a->stopping = true;
    pthread_cond_signal(&a->cond);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    while (a->head) {
        AnalysisJob *job = a->head;
        a->head = job->next;
        analysis_job_free(job);
    }
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cond);
    free(a);
}
