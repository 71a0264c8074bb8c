/* The cmaes searcher (cmaes.h; docs/searchers.md, "CMA-ES").
 *
 * The strategy is the (mu/mu_w, lambda)-CMA-ES as Optuna's CmaEsSampler
 * runs it (docs/searchers.md, "CMA-ES", names its sources and constants):
 * weighted recombination of the better half with active (negative) weights
 * for the worse half, cumulative step-size adaptation, rank-one and rank-mu
 * covariance updates, and the eigendecomposition C = B D^2 B^T (GSL's
 * symmetric eigensolver) after every update. It runs on the unit cube of the
 * parameters it can model: the continuous and integer ones (log domains on
 * their log scale, as the cube has them; an integer is the continuous
 * relaxation, rounded when the cube point is decoded). Samples outside the
 * cube are drawn again, up to 10 d times, and the last one is clipped into
 * it, as Optuna does. With restart "ipop" (the default) a run that has
 * converged or stalled (cmaes__should_stop: Optuna's conditions) restarts
 * from a random mean with twice the population (IPOP).
 *
 * The replay. rungd's searchers keep no state between proposals (a restart
 * of rungd, or another experiment's proposals in between, must not change
 * what trial n gets), so each call rebuilds the strategy from the history:
 * the completed observations, in trial-number order, are cut into batches
 * of the current population size and each full batch is one generation's
 * update; a partial batch waits. A completed trial's point enters through
 * its recomputed step y = (x - m) / sigma from the mean of the generation
 * it is fed to, as an injected solution does (docs/searchers.md): y is
 * shortened to Mahalanobis length at most sqrt(n) + 2n / (n + 2), so a
 * point sampled from an older distribution (parallel workers finish out of
 * order) cannot throw the step size off. Trial n's config is then drawn
 * from the replayed distribution, its normal deviates the inverse normal
 * CDF of point n of a Sobol sequence shifted by the seed (consecutive
 * trials, a generation's samples when they run one at a time, are spread
 * evenly: measured better than independent draws, docs/searchers.md),
 * hashed from (seed, n) beyond 40 dimensions and for the resamples of a
 * point outside the cube. Every trial number gets its own sample, so
 * running trials never share a config, and the same history always gives
 * trial n the same config. Optuna instead stores the pickled optimizer
 * with each trial and drops results of older generations; the replay uses
 * every result once and needs no storage.
 *
 * The cost is the replay: O(N d) to encode N observations and O(d^3 +
 * lambda d^2) per generation; bench/sampler_speed.c times it. */
#include "cmaes.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sampler_internal.h"

#define CMAES_EPS 1e-8       /* the floor of an eigenvalue, as the cmaes package's */
#define CMAES_SIGMA_MAX 1e32 /* step sizes are capped there, as the cmaes package's */
/* should_stop's tolerances (Optuna's, through the cmaes package): tolfun
 * on the recent losses' range, tolx times sigma0 on the steps, tolxup on
 * a step that diverges, and the covariance's condition. */
#define CMAES_TOLFUN 1e-12
#define CMAES_TOLX 1e-12
#define CMAES_TOLXUP 1e4
#define CMAES_TOLCOND 1e14

void cmaes__free(CmaesEs *es)
{
    if (es == NULL)
        return;
    free(es->w);
    free(es->mean);
    free(es->ps);
    free(es->pc);
    free(es->C);
    free(es->B);
    free(es->D);
    free(es->isqrtC);
    free(es->funhist);
    free(es->work);
    memset(es, 0, sizeof *es);
}

/* The tutorial's default parameters for n dimensions and lambda points
 * (docs/searchers.md, "CMA-ES"; the cmaes package's choices where it has
 * one). */
static void set_parameters(CmaesEs *es)
{
    int n = es->n, lambda = es->lambda, mu = lambda / 2;
    es->mu = mu;
    double sp = 0, sp2 = 0, sn = 0, sn2 = 0;
    for (int i = 0; i < lambda; i++) {
        double w = log((lambda + 1) / 2.0) - log(i + 1.0);
        es->w[i] = w;
        if (i < mu) {
            sp += w;
            sp2 += w * w;
        } else {
            sn += w;
            sn2 += w * w;
        }
    }
    es->mueff = sp * sp / sp2;
    double mueff_neg = sn2 > 0 ? sn * sn / sn2 : 0;
    double dn = n;
    es->c1 = 2.0 / ((dn + 1.3) * (dn + 1.3) + es->mueff);
    double cmu = 2.0 * (es->mueff - 2.0 + 1.0 / es->mueff) / ((dn + 2) * (dn + 2) + es->mueff);
    es->cmu = fmin(1.0 - es->c1 - 1e-8, cmu);
    /* The negative weights' total: the least of the tutorial's three bounds
     * (its eqs. 50-52); the first and third need cmu > 0. */
    double alpha = 1.0 + 2.0 * mueff_neg / (es->mueff + 2.0);
    if (es->cmu > 0) {
        alpha = fmin(alpha, 1.0 + es->c1 / es->cmu);
        alpha = fmin(alpha, (1.0 - es->c1 - es->cmu) / (dn * es->cmu));
    }
    double pos = 0, neg = 0;
    for (int i = 0; i < lambda; i++) {
        if (es->w[i] > 0)
            pos += es->w[i];
        else
            neg -= es->w[i];
    }
    for (int i = 0; i < lambda; i++)
        es->w[i] = es->w[i] >= 0 ? es->w[i] / pos : (neg > 0 ? alpha * es->w[i] / neg : 0);
    es->cs = (es->mueff + 2.0) / (dn + es->mueff + 5.0);
    es->ds = 1.0 + 2.0 * fmax(0.0, sqrt((es->mueff - 1.0) / (dn + 1.0)) - 1.0) + es->cs;
    es->cc = (4.0 + es->mueff / dn) / (dn + 4.0 + 2.0 * es->mueff / dn);
    es->chin = sqrt(dn) * (1.0 - 1.0 / (4.0 * dn) + 1.0 / (21.0 * dn * dn));
    es->term = 10 + (int)ceil(30.0 * dn / lambda);
}

/* B, D and C^-1/2 of es->C; C itself is made B D^2 B^T, symmetric with
 * eigenvalues floored at CMAES_EPS. Returns 0 or -1 (GSL failed). */
static int eigen(CmaesEs *es)
{
    int n = es->n;
    gsl_set_error_handler_off(); /* errors are returned, never abort() */
    gsl_matrix *a = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_matrix *v = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_vector *ev = gsl_vector_alloc((size_t)n);
    gsl_eigen_symmv_workspace *ws = gsl_eigen_symmv_alloc((size_t)n);
    int rc = -1;
    if (a == NULL || v == NULL || ev == NULL || ws == NULL)
        goto out;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            gsl_matrix_set(a, (size_t)i, (size_t)j, 0.5 * (es->C[i * n + j] + es->C[j * n + i]));
    if (gsl_eigen_symmv(a, ev, v, ws) != GSL_SUCCESS)
        goto out;
    /* Ascending eigenvalues with their vectors: the order then does not
     * depend on GSL's, and the no-effect-axis test walks them alike. */
    gsl_eigen_symmv_sort(ev, v, GSL_EIGEN_SORT_VAL_ASC);
    for (int k = 0; k < n; k++) {
        double d2 = gsl_vector_get(ev, (size_t)k);
        if (!isfinite(d2))
            goto out;
        es->D[k] = sqrt(d2 < 0 ? CMAES_EPS : d2);
        for (int i = 0; i < n; i++)
            es->B[i * n + k] = gsl_matrix_get(v, (size_t)i, (size_t)k);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double c = 0, s = 0;
            for (int k = 0; k < n; k++) {
                double b = es->B[i * n + k] * es->B[j * n + k];
                c += b * es->D[k] * es->D[k];
                s += b / es->D[k];
            }
            es->C[i * n + j] = c;
            es->isqrtC[i * n + j] = s;
        }
    rc = 0;
out:
    gsl_eigen_symmv_free(ws);
    gsl_vector_free(ev);
    gsl_matrix_free(v);
    gsl_matrix_free(a);
    return rc;
}

int cmaes__init(CmaesEs *es, int n, int lambda, const double *mean, double sigma)
{
    memset(es, 0, sizeof *es);
    if (n < 1 || lambda < 2 || !(sigma > 0))
        return -1;
    es->n = n;
    es->lambda = lambda;
    size_t nn = (size_t)n * (size_t)n;
    es->w = calloc((size_t)lambda, sizeof *es->w);
    es->mean = calloc((size_t)n, sizeof *es->mean);
    es->ps = calloc((size_t)n, sizeof *es->ps);
    es->pc = calloc((size_t)n, sizeof *es->pc);
    es->C = calloc(nn, sizeof *es->C);
    es->B = calloc(nn, sizeof *es->B);
    es->D = calloc((size_t)n, sizeof *es->D);
    es->isqrtC = calloc(nn, sizeof *es->isqrtC);
    /* Steps (lambda x n), their clipped copies' norms (lambda), losses and
     * the ranking (lambda each). */
    es->work = calloc((size_t)lambda * ((size_t)n + 3), sizeof *es->work);
    if (es->w == NULL || es->mean == NULL || es->ps == NULL || es->pc == NULL || es->C == NULL ||
        es->B == NULL || es->D == NULL || es->isqrtC == NULL || es->work == NULL) {
        cmaes__free(es);
        return -1;
    }
    set_parameters(es);
    es->funhist = calloc(2 * (size_t)es->term, sizeof *es->funhist);
    if (es->funhist == NULL) {
        cmaes__free(es);
        return -1;
    }
    memcpy(es->mean, mean, (size_t)n * sizeof *mean);
    for (int i = 0; i < n; i++) {
        es->C[i * n + i] = 1;
        es->B[i * n + i] = 1;
        es->isqrtC[i * n + i] = 1;
        es->D[i] = 1;
    }
    es->sigma = es->sigma0 = sigma;
    return 0;
}

void cmaes__sample(const CmaesEs *es, const double *z, double *x)
{
    int n = es->n;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int k = 0; k < n; k++)
            s += es->B[i * n + k] * es->D[k] * z[k];
        x[i] = es->mean[i] + es->sigma * s;
    }
}

/* |C^-1/2 y|: the Mahalanobis length of a step. */
static double mahalanobis(const CmaesEs *es, const double *y)
{
    int n = es->n;
    double s2 = 0;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < n; j++)
            s += es->isqrtC[i * n + j] * y[j];
        s2 += s * s;
    }
    return sqrt(s2);
}

/* Ranks by loss, ties by position: a sort that never depends on qsort's
 * order of equal keys. */
typedef struct Ranked {
    double f;
    int i;
} Ranked;

static int cmp_ranked(const void *x, const void *y)
{
    const Ranked *a = x, *b = y;
    if (a->f != b->f)
        return a->f < b->f ? -1 : 1;
    return a->i - b->i;
}

int cmaes__tell(CmaesEs *es, const double *x, const double *f)
{
    int n = es->n, lambda = es->lambda;
    double *y = es->work;                  /* lambda x n steps, in rank order */
    double *ylen = y + (size_t)lambda * n; /* their Mahalanobis lengths */
    Ranked *rank = malloc((size_t)lambda * sizeof *rank);
    double *yw = calloc((size_t)n, sizeof *yw);
    double *tmp = calloc((size_t)n, sizeof *tmp);
    if (rank == NULL || yw == NULL || tmp == NULL) {
        free(rank);
        free(yw);
        free(tmp);
        return -1;
    }
    for (int i = 0; i < lambda; i++)
        rank[i] = (Ranked){isnan(f[i]) ? INFINITY : f[i], i};
    qsort(rank, (size_t)lambda, sizeof *rank, cmp_ranked);
    es->g++;
    int slot = (int)(es->g % es->term);
    es->funhist[2 * slot] = rank[0].f;
    es->funhist[2 * slot + 1] = rank[lambda - 1].f;

    /* The steps from the mean, each shortened to the injection bound. */
    double clip = sqrt((double)n) + 2.0 * n / (n + 2.0);
    for (int r = 0; r < lambda; r++) {
        const double *xr = x + (size_t)rank[r].i * n;
        double *yr = y + (size_t)r * n;
        for (int j = 0; j < n; j++)
            yr[j] = (xr[j] - es->mean[j]) / es->sigma;
        double len = mahalanobis(es, yr);
        if (len > clip) {
            for (int j = 0; j < n; j++)
                yr[j] *= clip / len;
            len = clip;
        }
        ylen[r] = len;
    }
    for (int r = 0; r < es->mu; r++)
        for (int j = 0; j < n; j++)
            yw[j] += es->w[r] * y[(size_t)r * n + j];
    /* Mean (learning rate cm = 1), then the step-size path with the old
     * C^-1/2 and the step size. */
    for (int j = 0; j < n; j++)
        es->mean[j] += es->sigma * yw[j];
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < n; j++)
            s += es->isqrtC[i * n + j] * yw[j];
        tmp[i] = s;
    }
    double kps = sqrt(es->cs * (2 - es->cs) * es->mueff), nps = 0;
    for (int i = 0; i < n; i++) {
        es->ps[i] = (1 - es->cs) * es->ps[i] + kps * tmp[i];
        nps += es->ps[i] * es->ps[i];
    }
    nps = sqrt(nps);
    es->sigma *= exp((es->cs / es->ds) * (nps / es->chin - 1));
    if (es->sigma > CMAES_SIGMA_MAX)
        es->sigma = CMAES_SIGMA_MAX;
    /* h_sigma stalls the rank-one path while |p_sigma| is large (tutorial
     * p. 28; the generation counted as the cmaes package does). */
    double left = nps / sqrt(1 - pow(1 - es->cs, 2.0 * (double)(es->g + 1)));
    double hs = left < (1.4 + 2.0 / (n + 1.0)) * es->chin ? 1.0 : 0.0;
    double kpc = hs * sqrt(es->cc * (2 - es->cc) * es->mueff);
    for (int i = 0; i < n; i++)
        es->pc[i] = (1 - es->cc) * es->pc[i] + kpc * yw[i];
    double wsum = 0;
    for (int r = 0; r < lambda; r++)
        wsum += es->w[r];
    double dh = (1 - hs) * es->cc * (2 - es->cc);
    double keep = 1 + es->c1 * dh - es->c1 - es->cmu * wsum;
    for (int r = 0; r < lambda; r++) {
        /* Active weights scaled by n / |C^-1/2 y|^2 (the tutorial's w°). */
        double wr = es->w[r];
        ylen[r] = wr >= 0 ? wr : wr * n / (ylen[r] * ylen[r] + CMAES_EPS);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double mu_part = 0;
            for (int r = 0; r < lambda; r++)
                mu_part += ylen[r] * y[(size_t)r * n + i] * y[(size_t)r * n + j];
            es->C[i * n + j] = keep * es->C[i * n + j] + es->c1 * es->pc[i] * es->pc[j] +
                               es->cmu * mu_part;
        }
    free(rank);
    free(yw);
    free(tmp);
    return eigen(es);
}

bool cmaes__should_stop(const CmaesEs *es)
{
    int n = es->n;
    if (es->g > es->term) {
        double lo = INFINITY, hi = -INFINITY;
        for (int k = 0; k < 2 * es->term; k++) {
            lo = fmin(lo, es->funhist[k]);
            hi = fmax(hi, es->funhist[k]);
        }
        if (hi - lo < CMAES_TOLFUN)
            return true;
    }
    double tolx = CMAES_TOLX * es->sigma0;
    bool small = true;
    for (int i = 0; i < n; i++)
        small = small && es->sigma * es->C[i * n + i] < tolx && es->sigma * fabs(es->pc[i]) < tolx;
    if (small)
        return true;
    double dmax = 0, dmin = INFINITY;
    for (int i = 0; i < n; i++) {
        dmax = fmax(dmax, es->D[i]);
        dmin = fmin(dmin, es->D[i]);
    }
    if (es->sigma * dmax > CMAES_TOLXUP)
        return true;
    /* No effect of a coordinate: 0.2 standard deviations along it leave the
     * mean as it is. */
    for (int i = 0; i < n; i++) {
        volatile double moved = es->mean[i] + 0.2 * es->sigma * sqrt(es->C[i * n + i]);
        if (moved == es->mean[i])
            return true;
    }
    /* No effect of an axis: 0.1 standard deviations along principal axis
     * g mod n leave every coordinate of the mean as it is. */
    int k = (int)(es->g % n);
    bool none = true;
    for (int i = 0; i < n; i++) {
        volatile double moved = es->mean[i] + 0.1 * es->sigma * es->D[k] * es->B[i * n + k];
        none = none && moved == es->mean[i];
    }
    if (none)
        return true;
    return dmax / dmin > CMAES_TOLCOND;
}

/* ---- The replay over a space. ---- */

/* The coordinates the strategy models: the cube coordinates of the numeric
 * parameters, none when the space is conditional (its parameters come and
 * go with the branches, which a fixed-dimension strategy cannot follow). */
static int modeled_dims(const Space *space, int *cube)
{
    int n = 0;
    if (space->conditional)
        return 0;
    for (int i = 0; i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        if (p->cube >= 0 && p->kind != SPACE_CHOICE)
            cube[n++] = p->cube;
    }
    return n;
}

static int default_popsize(int n)
{
    return 4 + (int)floor(3.0 * log((double)n));
}

/* The replay's state: the strategy, its run, and the batch it fills. */
typedef struct Replay {
    CmaesEs es;
    int restarts;
    int64_t used;
    double *bx, *bf; /* the batch: lambda points and losses */
    int nb;
} Replay;

static void replay_free(Replay *r)
{
    cmaes__free(&r->es);
    free(r->bx);
    free(r->bf);
    memset(r, 0, sizeof *r);
}

static int replay_start(Replay *r, const SearcherSpec *s, int n, int lambda, const double *mean)
{
    double sigma0 = s->sigma0 > 0 ? s->sigma0 : 1.0 / 6.0; /* Optuna's: a sixth of the width */
    cmaes__free(&r->es);
    free(r->bx);
    free(r->bf);
    r->bx = malloc((size_t)lambda * (size_t)n * sizeof *r->bx);
    r->bf = malloc((size_t)lambda * sizeof *r->bf);
    r->nb = 0;
    if (r->bx == NULL || r->bf == NULL)
        return -1;
    return cmaes__init(&r->es, n, lambda, mean, sigma0);
}

/* The state before any result: the middle of the cube (Optuna's mean). */
static int replay_initial(Replay *r, const SearcherSpec *s, int n)
{
    double mean[SPACE_MAX_PARAMS];
    for (int j = 0; j < n; j++)
        mean[j] = 0.5;
    return replay_start(r, s, n, s->popsize > 0 ? s->popsize : default_popsize(n), mean);
}

/* A deep copy of src (whose batch is empty: a generation boundary). */
static int replay_clone(Replay *dst, const Replay *src, const SearcherSpec *s)
{
    const CmaesEs *a = &src->es;
    int n = a->n;
    memset(dst, 0, sizeof *dst);
    if (replay_start(dst, s, n, a->lambda, a->mean) != 0)
        return -1;
    CmaesEs *b = &dst->es;
    size_t nn = (size_t)n * (size_t)n;
    memcpy(b->ps, a->ps, (size_t)n * sizeof *b->ps);
    memcpy(b->pc, a->pc, (size_t)n * sizeof *b->pc);
    memcpy(b->C, a->C, nn * sizeof *b->C);
    memcpy(b->B, a->B, nn * sizeof *b->B);
    memcpy(b->D, a->D, (size_t)n * sizeof *b->D);
    memcpy(b->isqrtC, a->isqrtC, nn * sizeof *b->isqrtC);
    memcpy(b->funhist, a->funhist, 2 * (size_t)a->term * sizeof *b->funhist);
    b->sigma = a->sigma;
    b->sigma0 = a->sigma0;
    b->g = a->g;
    dst->restarts = src->restarts;
    dst->used = src->used;
    return 0;
}

/* Feeds one point; a full batch is a generation, after which IPOP may
 * restart. Returns 1 when a generation ended, 0 when the batch waits, -1
 * on a numerical failure or out of memory. */
static int replay_feed(Replay *r, const SearcherSpec *s, const double *x, double f)
{
    int n = r->es.n;
    memcpy(r->bx + (size_t)r->nb * n, x, (size_t)n * sizeof *x);
    r->bf[r->nb++] = f;
    if (r->nb < r->es.lambda)
        return 0;
    r->used += r->nb;
    r->nb = 0;
    if (cmaes__tell(&r->es, r->bx, r->bf) != 0)
        return -1;
    if (s->no_restart || !cmaes__should_stop(&r->es))
        return 1;
    /* IPOP: a random mean (Optuna's randomize_start_point), twice the
     * population, the initial step and an identity covariance. */
    r->restarts++;
    int lambda = r->es.lambda * 2 > CMAES_MAX_POPSIZE ? CMAES_MAX_POPSIZE : r->es.lambda * 2;
    double mean[SPACE_MAX_PARAMS];
    for (int j = 0; j < n; j++) {
        uint64_t bits = sampler__hash(s->seed, SAMPLER_STREAM_CMAES_RESTART, (uint64_t)r->restarts,
                                      (uint64_t)j);
        mean[j] = (double)(bits >> 11) * 0x1.0p-53;
    }
    return replay_start(r, s, n, lambda, mean) == 0 ? 1 : -1;
}

/* Feeds observation o: its modeled coordinates (cube[0 .. n-1]) and loss.
 * One that does not fit the space is skipped (0), as bayes skips it. */
static int replay_feed_obs(Replay *r, const Space *space, const SearcherSpec *s,
                           const BayesObservation *o, const int *cube)
{
    double u[SPACE_MAX_PARAMS], x[SPACE_MAX_PARAMS];
    if (o->config == NULL || space_encode(space, o->config, u, NULL) != 0)
        return 0;
    for (int j = 0; j < r->es.n; j++)
        x[j] = u[cube[j]];
    return replay_feed(r, s, x, o->loss);
}

static int check_args(const SearcherSpec *searcher, int64_t first, int64_t count,
                      const BayesHistory *h, RungError *err)
{
    if (first < 0 || count < 0 || count > CMAES_MAX_BATCH || first > SAMPLER_MAX_TRIALS)
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "count",
                              "cmaes: first %lld and count %lld out of range", (long long)first,
                              (long long)count);
    if (searcher->popsize != 0 && (searcher->popsize < 2 || searcher->popsize > CMAES_MAX_POPSIZE))
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "searcher.popsize",
                              "searcher.popsize: must be in [2, %d]", CMAES_MAX_POPSIZE);
    if (!(searcher->sigma0 >= 0 && searcher->sigma0 <= 1))
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "searcher.sigma0",
                              "searcher.sigma0: must be in (0, 1]");
    if (h == NULL)
        return 0;
    if (h->n_obs < 0 || (h->n_obs > 0 && h->obs == NULL))
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "history",
                              "cmaes: history's observations out of range");
    if (h->n_objectives > 1 || h->n_constraints > 0)
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "searcher.type",
                              "searcher.type: cmaes models one objective, without constraints");
    return 0;
}

static int replay_failed(RungError *err)
{
    return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                          "cmaes: the covariance's eigendecomposition failed (or out of memory)");
}

/* Replays h from the start into r (zeroed by the caller). */
static int replay(const Space *space, const SearcherSpec *s, const BayesHistory *h, int n,
                  const int *cube, Replay *r, RungError *err)
{
    if (replay_initial(r, s, n) != 0)
        return replay_failed(err);
    int64_t nobs = h != NULL ? h->n_obs : 0;
    for (int64_t i = 0; i < nobs; i++)
        if (replay_feed_obs(r, space, s, &h->obs[i], cube) < 0)
            return replay_failed(err);
    return 0;
}

int cmaes_replay(const Space *space, const SearcherSpec *searcher, const BayesHistory *history,
                 CmaesSummary *out, RungError *err)
{
    memset(out, 0, sizeof *out);
    int rc = check_args(searcher, 0, 0, history, err);
    int cube[SPACE_MAX_PARAMS];
    int n = modeled_dims(space, cube);
    if (rc != 0 || n == 0)
        return rc;
    Replay r = {0};
    rc = replay(space, searcher, history, n, cube, &r, err);
    if (rc == 0) {
        out->dims = n;
        out->popsize = r.es.lambda;
        out->restarts = r.restarts;
        out->generation = r.es.g;
        out->used = r.used;
        out->sigma = r.es.sigma;
        memcpy(out->mean, r.es.mean, (size_t)n * sizeof *out->mean);
    }
    replay_free(&r);
    return rc;
}

/* A standard normal deviate from (seed, number, key), never infinite. */
static double normal_draw(uint64_t seed, int64_t number, uint64_t key)
{
    uint64_t bits = sampler__hash(seed, SAMPLER_STREAM_CMAES_SAMPLE, (uint64_t)number, key);
    return gsl_cdf_ugaussian_Pinv(((double)(bits >> 11) + 0.5) * 0x1.0p-53);
}

/* Trial `number`'s modeled coordinates: samples of the replayed
 * distribution until one lies in the cube (10 n tries), else the last one
 * clipped into it. The first try's deviates come from the shifted Sobol
 * point `number` (its 30-bit coordinates kept off 0 and 1, where the
 * normal quantile is infinite), the others from the hash. */
static void draw(const CmaesEs *es, uint64_t seed, int64_t number, double *x)
{
    int n = es->n, tries = 10 * n;
    double z[SPACE_MAX_PARAMS], q[SPACE_MAX_PARAMS];
    bool sobol = n <= SOBOL_MAX_DIMS && sampler__sobol_point((uint64_t)number, n, seed,
                                                             SAMPLER_STREAM_CMAES_SAMPLE, q) == 0;
    for (int t = 0; t <= tries; t++) {
        for (int j = 0; j < n; j++)
            z[j] = t == 0 && sobol
                       ? gsl_cdf_ugaussian_Pinv(fmin(fmax(q[j], 0x1.0p-31), 1 - 0x1.0p-31))
                       : normal_draw(seed, number, (uint64_t)t * SPACE_MAX_PARAMS + (uint64_t)j);
        cmaes__sample(es, z, x);
        bool inside = true;
        for (int j = 0; j < n; j++)
            inside = inside && x[j] >= 0 && x[j] <= 1;
        if (inside)
            return;
    }
    for (int j = 0; j < n; j++)
        x[j] = x[j] < 0 ? 0 : x[j] > 1 ? 1 : x[j];
}

/* The configs of trials first .. first + count - 1 from the replayed state
 * r (NULL when no coordinate is modeled: n is 0). */
static int sample_configs(const Space *space, const SearcherSpec *searcher, int64_t first,
                          int64_t count, const Replay *r, int n, const int *cube, json_t **out,
                          RungError *err)
{
    int64_t g = space->grid_size;
    for (int64_t k = 0; k < count; k++) {
        int64_t number = first + k;
        /* What CMA-ES does not model is drawn as the random searcher draws
         * it (sampler_config): a choice as Optuna's independent sampler
         * would, the grid combination number mod G. */
        double u[SPACE_MAX_PARAMS], x[SPACE_MAX_PARAMS];
        for (int j = 0; j < space->dims; j++)
            u[j] = sampler__uniform(searcher->seed, (uint64_t)number, (uint64_t)j);
        if (n > 0) {
            draw(&r->es, searcher->seed, number, x);
            for (int j = 0; j < n; j++)
                u[cube[j]] = x[j];
        }
        out[k] = space_decode(space, u, number % g, searcher->grid_order);
        if (out[k] == NULL) {
            for (int64_t i = 0; i < k; i++) {
                json_decref(out[i]);
                out[i] = NULL;
            }
            return rung_error_set(err, RUNG_E_INTERNAL, NULL, "cmaes: out of memory");
        }
    }
    return 0;
}

int cmaes_propose(const Space *space, const SearcherSpec *searcher, int64_t first, int64_t count,
                  const BayesHistory *history, json_t **out, RungError *err)
{
    int rc = check_args(searcher, first, count, history, err);
    if (rc != 0 || count == 0)
        return rc;
    int cube[SPACE_MAX_PARAMS];
    int n = modeled_dims(space, cube);
    Replay r = {0};
    if (n > 0)
        rc = replay(space, searcher, history, n, cube, &r, err);
    if (rc == 0)
        rc = sample_configs(space, searcher, first, count, &r, n, cube, out, err);
    replay_free(&r);
    return rc;
}

/* ---- The memo of replays. ---- */

typedef struct CacheEntry {
    json_t *config; /* a reference, or NULL as the observation had */
    double loss;    /* compared bit for bit */
} CacheEntry;

typedef struct Checkpoint {
    int64_t at; /* the state after history entries 0 .. at-1 (a generation boundary) */
    Replay state;
} Checkpoint;

struct CmaesCache {
    bool valid;
    /* What the replay depends on besides the history. */
    uint64_t seed;
    double sigma0;
    int popsize;
    bool no_restart;
    int dims, n;
    int cube[SPACE_MAX_PARAMS];
    CacheEntry *entries; /* the last call's history, len of them */
    int64_t len, cap;
    Checkpoint cps[CMAES_CACHE_CHECKPOINTS]; /* ascending at, ncps of them */
    int ncps;
};

CmaesCache *cmaes_cache_new(void)
{
    return calloc(1, sizeof(CmaesCache));
}

static void cache_truncate(CmaesCache *c, int64_t len)
{
    while (c->len > len)
        json_decref(c->entries[--c->len].config);
}

static void cache_reset(CmaesCache *c)
{
    cache_truncate(c, 0);
    while (c->ncps > 0)
        replay_free(&c->cps[--c->ncps].state);
    c->valid = false;
}

void cmaes_cache_free(CmaesCache *cache)
{
    if (cache == NULL)
        return;
    cache_reset(cache);
    free(cache->entries);
    free(cache);
}

static bool cache_fits(const CmaesCache *c, const Space *space, const SearcherSpec *s, int n,
                       const int *cube)
{
    return c->valid && c->seed == s->seed && c->sigma0 == s->sigma0 && c->popsize == s->popsize &&
           c->no_restart == s->no_restart && c->dims == space->dims && c->n == n &&
           memcmp(c->cube, cube, (size_t)n * sizeof *cube) == 0;
}

static bool same_entry(const CacheEntry *e, const BayesObservation *o)
{
    return e->config == o->config && memcmp(&e->loss, &o->loss, sizeof e->loss) == 0;
}

static int cache_append(CmaesCache *c, const BayesObservation *o)
{
    if (c->len == c->cap) {
        int64_t cap = c->cap > 0 ? 2 * c->cap : 256;
        CacheEntry *e = realloc(c->entries, (size_t)cap * sizeof *e);
        if (e == NULL)
            return -1;
        c->entries = e;
        c->cap = cap;
    }
    c->entries[c->len++] = (CacheEntry){json_incref((json_t *)o->config), o->loss};
    return 0;
}

static int cache_checkpoint(CmaesCache *c, int64_t at, const Replay *r, const SearcherSpec *s)
{
    if (c->ncps == CMAES_CACHE_CHECKPOINTS) {
        replay_free(&c->cps[0].state);
        memmove(c->cps, c->cps + 1, (size_t)(c->ncps - 1) * sizeof *c->cps);
        c->ncps--;
    }
    Checkpoint *cp = &c->cps[c->ncps];
    cp->at = at;
    if (replay_clone(&cp->state, r, s) != 0) {
        replay_free(&cp->state);
        return -1;
    }
    c->ncps++;
    return 0;
}

/* Brings r to the state after all of h, from the cache's latest
 * checkpoint within the part of h the cache saw; the cache then holds h. */
static int cache_replay(CmaesCache *c, const Space *space, const SearcherSpec *s,
                        const BayesHistory *h, int n, const int *cube, Replay *r)
{
    if (!cache_fits(c, space, s, n, cube)) {
        cache_reset(c);
        c->valid = true;
        c->seed = s->seed;
        c->sigma0 = s->sigma0;
        c->popsize = s->popsize;
        c->no_restart = s->no_restart;
        c->dims = space->dims;
        c->n = n;
        memcpy(c->cube, cube, (size_t)n * sizeof *cube);
    }
    int64_t nobs = h != NULL ? h->n_obs : 0, same = 0;
    while (same < c->len && same < nobs && same_entry(&c->entries[same], &h->obs[same]))
        same++;
    while (c->ncps > 0 && c->cps[c->ncps - 1].at > same)
        replay_free(&c->cps[--c->ncps].state);
    int64_t from = 0;
    if (c->ncps > 0) {
        from = c->cps[c->ncps - 1].at;
        if (replay_clone(r, &c->cps[c->ncps - 1].state, s) != 0)
            return -1;
    } else if (replay_initial(r, s, n) != 0) {
        return -1;
    }
    cache_truncate(c, from);
    for (int64_t i = from; i < nobs; i++) {
        if (cache_append(c, &h->obs[i]) != 0)
            return -1;
        int rc = replay_feed_obs(r, space, s, &h->obs[i], cube);
        if (rc < 0 || (rc == 1 && cache_checkpoint(c, i + 1, r, s) != 0))
            return -1;
    }
    return 0;
}

int cmaes_propose_cached(CmaesCache *cache, const Space *space, const SearcherSpec *searcher,
                         int64_t first, int64_t count, const BayesHistory *history, json_t **out,
                         RungError *err)
{
    int cube[SPACE_MAX_PARAMS];
    int n = modeled_dims(space, cube);
    if (cache == NULL || n == 0)
        return cmaes_propose(space, searcher, first, count, history, out, err);
    int rc = check_args(searcher, first, count, history, err);
    if (rc != 0 || count == 0)
        return rc;
    Replay r = {0};
    if (cache_replay(cache, space, searcher, history, n, cube, &r) != 0) {
        cache_reset(cache); /* whatever it holds may be half-updated */
        rc = replay_failed(err);
    }
    if (rc == 0)
        rc = sample_configs(space, searcher, first, count, &r, n, cube, out, err);
    replay_free(&r);
    return rc;
}
