/* The TPE searcher (tpe.h; docs/searchers.md, "TPE").
 *
 * The method is Optuna 3.1's TPESampler with its defaults, written again
 * over rung's unit cube (sampler/cube.c): every sampled parameter is a
 * coordinate in [0, 1] that is linear in the parameter (in its log for log
 * domains), which is the space Optuna's estimators work in up to an affine
 * map, and the kernels' widths are fractions of the domain, so the map
 * changes nothing. Integer domains (randint, qrandint) are equal cells of
 * the cube, which is Optuna's domain widened by half a step at each end;
 * their kernels weigh the mass of a value's cell. Choices (conditional
 * choices included) are categorical dimensions: the index of the value.
 *
 * One proposal:
 *  1. Every usable observation (its config fits the space) and, with the
 *     constant liar, every pending config becomes a row: its cube point and
 *     which blocks (below) are active in it.
 *  2. The rows are split (tpe__split): the gamma(n) lowest losses of the n
 *     finished ones are good, the rest bad; failed and pending rows rank
 *     last, so they are always bad.
 *  3. The parameters are grouped in blocks, each proposed on its own: in
 *     group mode (the default) the parameters that are active together
 *     (the same branch of the same conditional choice, or the top level)
 *     form a block, which is what Optuna's group decomposition finds on a
 *     tree-structured space; multivariate without group, one block of the
 *     always-active parameters and one per other parameter; univariate,
 *     one per parameter. A block is estimated on the rows where it is
 *     active, so a branch's parameters learn from that branch's trials.
 *  4. Per block, l(x) from its good rows and g(x) from its bad rows; 24
 *     draws from l(x), each snapped to a value the domain can take, and
 *     the one with the largest log l(x) - log g(x) is kept.
 *  5. The blocks' points make one cube point, decoded as any searcher's
 *     (space_decode): the choices' coordinates pick the branches, and the
 *     parameters of branches not taken are dropped. */
#include "tpe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sampler_internal.h"

#define TPE_PRIOR_WEIGHT 1.0 /* Optuna's prior_weight */
#define TPE_SIGMA0 0.2       /* Optuna's SIGMA0_MAGNITUDE: Scott's rule's factor */
#define TPE_MAGIC_CLIP 100.0 /* the smallest sigma is the range / min(100, kernels + 1) */
#define TPE_FLAT_WEIGHTS 25  /* the most recent 25 observations weigh 1, older ones less */
#define TPE_TRUNC_TRIES 64   /* rejection draws of a truncated normal (each accepted >= 1/3) */
/* searcher.noisy false, a proposal already tried: the model's other
 * draws, then the random searcher's (sampler_redraw), before a repeat. */
#define TPE_RETRIES 8
#define TPE_REDRAWS 64
#define LOG_SQRT_2PI 0.91893853320467274178

int64_t tpe__gamma(int64_t n)
{
    int64_t g = (n + 9) / 10; /* ceil(0.1 n) */
    return g < TPE_MAX_GOOD ? g : TPE_MAX_GOOD;
}

typedef struct {
    double loss;
    int64_t index;
} Ranked;

static int cmp_ranked(const void *a, const void *b)
{
    const Ranked *x = a, *y = b;
    if (x->loss != y->loss)
        return x->loss < y->loss ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

void tpe__split(const double *loss, int64_t n_obs, int64_t n_pending, bool *below)
{
    for (int64_t i = 0; i < n_obs + n_pending; i++)
        below[i] = false;
    if (n_obs <= 0)
        return;
    Ranked *r = malloc((size_t)n_obs * sizeof *r);
    if (r == NULL)
        abort();
    for (int64_t i = 0; i < n_obs; i++)
        r[i] = (Ranked){isnan(loss[i]) ? INFINITY : loss[i], i};
    qsort(r, (size_t)n_obs, sizeof *r, cmp_ranked);
    int64_t g = tpe__gamma(n_obs);
    for (int64_t i = 0; i < g; i++)
        below[r[i].index] = true;
    free(r);
}

/* --- randomness: splitmix64, seeded per (seed, trial, block) ---------------- */

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double next_unit(uint64_t *s) /* [0, 1) */
{
    return (double)(next_u64(s) >> 11) * 0x1.0p-53;
}

static double next_normal(uint64_t *s)
{
    double a = 1.0 - next_unit(s); /* (0, 1]: log is finite */
    double b = next_unit(s);
    return sqrt(-2.0 * log(a)) * cos(2.0 * M_PI * b);
}

/* --- the Parzen estimator --------------------------------------------------- */

struct TpeParzen {
    int nd;
    TpeDim *dims;
    int64_t n;     /* kernels: the observations, then the prior */
    double *logw;  /* n log weights (normalized) */
    double *w;     /* n weights (normalized), for sampling */
    double *mu;    /* n x nd: numeric means; categorical: the observed index (-1 prior) */
    double *sigma; /* n x nd: numeric sigmas */
    double *lnorm; /* n x nd: log(sqrt(2 pi) Z), Z the kernel's mass on [0, 1] */
    double *lz;    /* n x nd: log Z */
    double *cat_hit, *cat_miss; /* nd: a categorical kernel's log probability of its own value
                                   and of another */
};

static double phi_cdf(double z)
{
    return 0.5 * erfc(-z / M_SQRT2);
}

/* log of the standard normal mass on [a, b], a < b, accurate in the tails:
 * the side beyond 0 is measured from its own tail. */
static double log_gauss_mass(double a, double b)
{
    if (b <= 0.0) {
        double t = -a;
        a = -b;
        b = t;
    }
    double m;
    if (a >= 0.0)
        m = 0.5 * (erfc(a / M_SQRT2) - erfc(b / M_SQRT2));
    else
        m = 1.0 - phi_cdf(a) - 0.5 * erfc(b / M_SQRT2);
    if (m > 0.0)
        return log(m);
    /* Both ends far in one tail: the density at the nearer end times the width. */
    return -0.5 * a * a - LOG_SQRT_2PI + log(b - a);
}

void tpe__parzen_free(TpeParzen *pe)
{
    if (pe == NULL)
        return;
    free(pe->dims);
    free(pe->logw);
    free(pe->w);
    free(pe->mu);
    free(pe->sigma);
    free(pe->lnorm);
    free(pe->lz);
    free(pe->cat_hit);
    free(pe->cat_miss);
    free(pe);
}

typedef struct {
    double mu;
    int64_t k;
} Mu;

static int cmp_mu(const void *a, const void *b)
{
    const Mu *x = a, *y = b;
    if (x->mu != y->mu)
        return x->mu < y->mu ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

/* Optuna's univariate rule for dimension j: each kernel's sigma is the
 * larger of the gaps to its neighbours among the sorted means (prior
 * included) with the ends 0 and 1 added; the first and last take the gap
 * to their inner neighbour instead (consider_endpoints off). */
static int univariate_sigmas(TpeParzen *pe, int j)
{
    int64_t n = pe->n;
    Mu *m = malloc((size_t)n * sizeof *m);
    double *s = malloc((size_t)(n + 2) * sizeof *s);
    if (m == NULL || s == NULL) {
        free(m);
        free(s);
        return -1;
    }
    for (int64_t k = 0; k < n; k++)
        m[k] = (Mu){pe->mu[k * pe->nd + j], k};
    qsort(m, (size_t)n, sizeof *m, cmp_mu); /* ties in kernel order, a stable argsort */
    s[0] = 0.0;
    for (int64_t k = 0; k < n; k++)
        s[k + 1] = m[k].mu;
    s[n + 1] = 1.0;
    for (int64_t i = 0; i < n; i++) {
        double left = s[i + 1] - s[i], right = s[i + 2] - s[i + 1];
        double sig = left > right ? left : right;
        if (n + 2 >= 4 && i == 0)
            sig = s[2] - s[1];
        if (n + 2 >= 4 && i == n - 1)
            sig = s[n] - s[n - 1];
        pe->sigma[m[i].k * pe->nd + j] = sig;
    }
    free(m);
    free(s);
    return 0;
}

TpeParzen *tpe__parzen_new(const TpeDim *dims, int nd, const double *x, int64_t n,
                           bool multivariate)
{
    TpeParzen *pe = calloc(1, sizeof *pe);
    if (pe == NULL)
        return NULL;
    int64_t nk = n + 1;
    size_t cells = (size_t)nk * (size_t)(nd > 0 ? nd : 1);
    pe->nd = nd;
    pe->n = nk;
    pe->dims = malloc((size_t)(nd > 0 ? nd : 1) * sizeof *pe->dims);
    pe->logw = malloc((size_t)nk * sizeof *pe->logw);
    pe->w = malloc((size_t)nk * sizeof *pe->w);
    pe->mu = malloc(cells * sizeof *pe->mu);
    pe->sigma = malloc(cells * sizeof *pe->sigma);
    pe->lnorm = malloc(cells * sizeof *pe->lnorm);
    pe->lz = malloc(cells * sizeof *pe->lz);
    pe->cat_hit = calloc((size_t)(nd > 0 ? nd : 1), sizeof *pe->cat_hit);
    pe->cat_miss = calloc((size_t)(nd > 0 ? nd : 1), sizeof *pe->cat_miss);
    if (pe->dims == NULL || pe->logw == NULL || pe->w == NULL || pe->mu == NULL ||
        pe->sigma == NULL || pe->lnorm == NULL || pe->lz == NULL || pe->cat_hit == NULL ||
        pe->cat_miss == NULL) {
        tpe__parzen_free(pe);
        return NULL;
    }
    memcpy(pe->dims, dims, (size_t)nd * sizeof *dims);

    /* Optuna's default weights: 1 for the last 25 observations, a ramp from
     * 1/n up to 1 over the older ones; the prior weighs TPE_PRIOR_WEIGHT. */
    double sum = 0.0;
    int64_t ramp = n > TPE_FLAT_WEIGHTS ? n - TPE_FLAT_WEIGHTS : 0;
    for (int64_t k = 0; k < n; k++) {
        double w = 1.0;
        if (n >= TPE_FLAT_WEIGHTS && k < ramp)
            w = ramp == 1
                    ? 1.0 / (double)n
                    : 1.0 / (double)n + (1.0 - 1.0 / (double)n) * (double)k / (double)(ramp - 1);
        pe->w[k] = w;
        sum += w;
    }
    pe->w[n] = TPE_PRIOR_WEIGHT;
    sum += TPE_PRIOR_WEIGHT;
    for (int64_t k = 0; k < nk; k++) {
        pe->w[k] /= sum;
        pe->logw[k] = log(pe->w[k]);
    }

    double sigma0 = TPE_SIGMA0 * pow((double)(n > 1 ? n : 1), -1.0 / ((double)nd + 4.0));
    double minsigma = 1.0 / fmin(TPE_MAGIC_CLIP, (double)nk + 1.0);
    for (int j = 0; j < nd; j++) {
        for (int64_t k = 0; k < n; k++)
            pe->mu[k * nd + j] = x[k * nd + j];
        if (dims[j].categories > 0) {
            /* Each kernel puts prior_weight / (n + 1) on every value and 1
             * more on its own, normalized; the prior's kernel is uniform. */
            double kc = (double)dims[j].categories, v = TPE_PRIOR_WEIGHT / (double)nk;
            pe->cat_hit[j] = log((v + 1.0) / (kc * v + 1.0));
            pe->cat_miss[j] = log(v / (kc * v + 1.0));
            pe->mu[n * nd + j] = -1.0;
            continue;
        }
        pe->mu[n * nd + j] = 0.5;
        if (multivariate) {
            for (int64_t k = 0; k < n; k++)
                pe->sigma[k * nd + j] = sigma0;
        } else if (univariate_sigmas(pe, j) != 0) {
            tpe__parzen_free(pe);
            return NULL;
        }
        for (int64_t k = 0; k < n; k++)
            pe->sigma[k * nd + j] = fmin(fmax(pe->sigma[k * nd + j], minsigma), 1.0);
        pe->sigma[n * nd + j] = 1.0; /* the prior spans the whole range */
        for (int64_t k = 0; k < nk; k++) {
            double mu = pe->mu[k * nd + j], sg = pe->sigma[k * nd + j];
            double lz = log_gauss_mass((0.0 - mu) / sg, (1.0 - mu) / sg);
            pe->lz[k * nd + j] = lz;
            /* Optuna 3.1's kernel: the truncated normal's density without
             * its 1/sigma (docs/searchers.md, "TPE", says why rung keeps it). */
            pe->lnorm[k * nd + j] = LOG_SQRT_2PI + lz;
        }
    }
    return pe;
}

double tpe__parzen_mu(const TpeParzen *pe, int64_t k, int j)
{
    return pe->mu[k * pe->nd + j];
}

double tpe__parzen_sigma(const TpeParzen *pe, int64_t k, int j)
{
    return pe->sigma[k * pe->nd + j];
}

double tpe__parzen_weight(const TpeParzen *pe, int64_t k)
{
    return pe->w[k];
}

/* log of kernel k's density (mass) of dimension j at value xj. */
static double kernel_log(const TpeParzen *pe, int64_t k, int j, double xj)
{
    const TpeDim *d = &pe->dims[j];
    size_t at = (size_t)k * (size_t)pe->nd + (size_t)j;
    if (d->categories > 0) {
        if (k == pe->n - 1)
            return -log((double)d->categories);
        return pe->mu[at] == xj ? pe->cat_hit[j] : pe->cat_miss[j];
    }
    double mu = pe->mu[at], sg = pe->sigma[at];
    if (d->cells > 0) {
        double half = 0.5 / (double)d->cells;
        double lo = fmax(xj - half, 0.0), hi = fmin(xj + half, 1.0);
        return log_gauss_mass((lo - mu) / sg, (hi - mu) / sg) - pe->lz[at];
    }
    double z = (xj - mu) / sg;
    return -0.5 * z * z - pe->lnorm[at];
}

double tpe__parzen_log_pdf(const TpeParzen *pe, const double *x)
{
    /* log sum_k w_k prod_j p_kj(x_j), summed with a running maximum. */
    double m = -INFINITY, s = 0.0;
    for (int64_t k = 0; k < pe->n; k++) {
        double v = pe->logw[k];
        for (int j = 0; j < pe->nd; j++)
            v += kernel_log(pe, k, j, x[j]);
        if (v > m) {
            s = s * exp(m - v) + 1.0;
            m = v;
        } else {
            s += exp(v - m);
        }
    }
    return m + log(s);
}

void tpe__parzen_sample(const TpeParzen *pe, uint64_t *rng, double *x)
{
    double r = next_unit(rng), acc = 0.0;
    int64_t k = 0;
    while (k < pe->n - 1 && (acc += pe->w[k]) <= r)
        k++;
    for (int j = 0; j < pe->nd; j++) {
        const TpeDim *d = &pe->dims[j];
        size_t at = (size_t)k * (size_t)pe->nd + (size_t)j;
        if (d->categories > 0) {
            int kc = d->categories;
            double q = next_unit(rng);
            if (k == pe->n - 1) {
                int c = (int)(q * kc);
                x[j] = c < kc ? c : kc - 1;
                continue;
            }
            double hit = exp(pe->cat_hit[j]), miss = exp(pe->cat_miss[j]), cum = 0.0;
            int c = 0;
            for (; c < kc - 1; c++) {
                cum += c == (int)pe->mu[at] ? hit : miss;
                if (q < cum)
                    break;
            }
            x[j] = c;
            continue;
        }
        double mu = pe->mu[at], sg = pe->sigma[at], v = mu;
        /* The mean lies in [0, 1], so each draw lands inside with
         * probability at least 1/3: rejection is exact and quick. */
        for (int t = 0; t < TPE_TRUNC_TRIES; t++) {
            double y = mu + sg * next_normal(rng);
            if (y >= 0.0 && y <= 1.0) {
                v = y;
                break;
            }
        }
        x[j] = v;
    }
}

/* --- the searcher ----------------------------------------------------------- */

typedef struct {
    int n;                       /* dimensions */
    int param[SPACE_MAX_PARAMS]; /* space->params index of each */
    TpeDim dims[SPACE_MAX_PARAMS];
    int head; /* a parameter whose activity is the block's */
} Block;

typedef struct {
    const Space *space;
    Block *blocks;
    int nblocks;
    int64_t rows, cap;
    double *u;          /* rows x dims cube points */
    double *loss;       /* rows: finished first, then pending */
    bool *active;       /* rows x nblocks */
    const json_t **cfg; /* rows: each row's config (borrowed), for seen() */
    int64_t n_fin;      /* finished rows */
} Rows;

static TpeDim dim_of(const SpaceParam *p)
{
    TpeDim d = {0, 0};
    if (p->kind == SPACE_CHOICE)
        d.categories = (int)p->count;
    else if (p->kind == SPACE_RANDINT || p->kind == SPACE_QRANDINT)
        d.cells = p->count;
    return d;
}

static int make_blocks(const Space *space, const SearcherSpec *s, Block **out)
{
    Block *b = calloc((size_t)(space->nparams > 0 ? space->nparams : 1), sizeof *b);
    if (b == NULL)
        return -1;
    int nb = 0;
    int top = -1; /* multivariate without group: the block of the always-active ones */
    for (int i = 0; i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        if (p->cube < 0)
            continue;
        int at = -1;
        if (s->multivariate && s->group) {
            for (int k = 0; k < nb && at < 0; k++) {
                const SpaceParam *h = &space->params[b[k].head];
                if (h->parent == p->parent && h->branch == p->branch)
                    at = k;
            }
        } else if (s->multivariate && p->parent < 0) {
            at = top;
        }
        if (at < 0) {
            at = nb++;
            b[at].head = i;
            if (s->multivariate && !s->group && p->parent < 0)
                top = at;
        }
        b[at].param[b[at].n] = i;
        b[at].dims[b[at].n] = dim_of(p);
        b[at].n++;
    }
    *out = b;
    return nb;
}

/* Adds config as a row (loss for a finished one); a config that does not
 * fit the space is skipped. -1 when out of memory. */
static int add_row(Rows *r, const json_t *config, double loss)
{
    const Space *space = r->space;
    if (r->rows == r->cap) {
        int64_t cap = r->cap * 2 + 16;
        double *u = realloc(r->u, (size_t)cap * (size_t)(space->dims) * sizeof *u);
        if (u == NULL)
            return -1;
        r->u = u;
        double *l = realloc(r->loss, (size_t)cap * sizeof *l);
        if (l == NULL)
            return -1;
        r->loss = l;
        bool *a = realloc(r->active, (size_t)cap * (size_t)r->nblocks * sizeof *a);
        if (a == NULL)
            return -1;
        r->active = a;
        const json_t **cf = realloc(r->cfg, (size_t)cap * sizeof *cf);
        if (cf == NULL)
            return -1;
        r->cfg = cf;
        r->cap = cap;
    }
    RungError err;
    bool active[SPACE_MAX_PARAMS];
    int sel[SPACE_MAX_PARAMS];
    double *u = r->u + r->rows * space->dims;
    if (space_encode(space, config, u, &err) != 0 || space__resolve(space, config, active, sel))
        return 0;
    for (int b = 0; b < r->nblocks; b++)
        r->active[r->rows * r->nblocks + b] = active[r->blocks[b].head];
    r->loss[r->rows] = isnan(loss) ? INFINITY : loss;
    r->cfg[r->rows] = config;
    r->rows++;
    return 0;
}

/* Whether config c is one of r's rows (finished, and with constant_liar
 * pending or proposed before it in the batch): the same cube point, then
 * the same JSON (grid parameters have no cube coordinate). */
static bool seen(const Rows *r, const json_t *c)
{
    const Space *space = r->space;
    double u[SPACE_MAX_PARAMS];
    RungError err;
    if (c == NULL || space_encode(space, c, u, &err) != 0)
        return false;
    for (int64_t i = 0; i < r->rows; i++) {
        const double *v = r->u + i * space->dims;
        int j = 0;
        while (j < space->dims && fabs(v[j] - u[j]) <= 1e-9)
            j++;
        if (j == space->dims && json_equal(r->cfg[i], c))
            return true;
    }
    return false;
}

/* The value of dimension j of block b in row u: the category index of a
 * choice, else the cube coordinate. */
static double coord(const Space *space, const Block *b, int j, const double *u)
{
    const SpaceParam *p = &space->params[b->param[j]];
    double x = u[p->cube];
    if (b->dims[j].categories > 0) {
        int64_t c = (int64_t)(x * (double)p->count);
        return (double)(c < 0 ? 0 : c >= p->count ? p->count - 1 : c);
    }
    return x;
}

/* A drawn value moved onto one the domain can take (an integer, a multiple
 * of q), as the kernels then see it: its cube coordinate. */
static double snap(const SpaceParam *p, double x)
{
    if (p->kind == SPACE_UNIFORM || p->kind == SPACE_LOGUNIFORM || p->kind == SPACE_NORMAL)
        return x;
    json_t *v = space__decode_value(p, x);
    if (v == NULL)
        return x;
    double y = space__encode_number(p, json_number_value(v));
    json_decref(v);
    return y;
}

/* Proposes block b's part of the cube point into ucfg. -1 out of memory. */
static int propose_block(const Rows *r, int bi, const bool *below, bool multivariate, uint64_t seed,
                         int64_t number, int attempt, double *ucfg)
{
    const Space *space = r->space;
    const Block *b = &r->blocks[bi];
    int nd = b->n;
    double *good = malloc((size_t)(r->rows + 1) * (size_t)nd * sizeof *good);
    double *bad = malloc((size_t)(r->rows + 1) * (size_t)nd * sizeof *bad);
    if (good == NULL || bad == NULL) {
        free(good);
        free(bad);
        return -1;
    }
    int64_t ng = 0, nb = 0;
    for (int64_t i = 0; i < r->rows; i++) {
        if (!r->active[i * r->nblocks + bi])
            continue;
        double *dst = below[i] ? good + ng++ * nd : bad + nb++ * nd;
        for (int j = 0; j < nd; j++)
            dst[j] = coord(space, b, j, r->u + i * space->dims);
    }
    TpeParzen *l = tpe__parzen_new(b->dims, nd, good, ng, multivariate);
    TpeParzen *g = tpe__parzen_new(b->dims, nd, bad, nb, multivariate);
    free(good);
    free(bad);
    if (l == NULL || g == NULL) {
        tpe__parzen_free(l);
        tpe__parzen_free(g);
        return -1;
    }
    /* Attempt 0 is the proposal; later ones (a repeat, tpe_propose) draw
     * other candidates. */
    uint64_t rng = sampler__hash(seed, SAMPLER_STREAM_TPE, (uint64_t)number,
                                 (uint64_t)bi + (uint64_t)attempt * SPACE_MAX_PARAMS);
    double x[SPACE_MAX_PARAMS], best[SPACE_MAX_PARAMS];
    double best_score = -INFINITY;
    for (int c = 0; c < TPE_CANDIDATES; c++) {
        tpe__parzen_sample(l, &rng, x);
        for (int j = 0; j < nd; j++)
            if (b->dims[j].categories == 0)
                x[j] = snap(&space->params[b->param[j]], x[j]);
        double score = tpe__parzen_log_pdf(l, x) - tpe__parzen_log_pdf(g, x);
        if (c == 0 || score > best_score) {
            best_score = score;
            memcpy(best, x, (size_t)nd * sizeof *x);
        }
    }
    tpe__parzen_free(l);
    tpe__parzen_free(g);
    for (int j = 0; j < nd; j++) {
        const SpaceParam *p = &space->params[b->param[j]];
        ucfg[p->cube] = b->dims[j].categories > 0 ? (best[j] + 0.5) / (double)p->count : best[j];
    }
    return 0;
}

static json_t *propose_one(const Rows *r, const SearcherSpec *s, int64_t number, int attempt,
                           int *oom)
{
    const Space *space = r->space;
    bool *below = malloc((size_t)(r->rows > 0 ? r->rows : 1) * sizeof *below);
    double ucfg[SPACE_MAX_PARAMS];
    if (below == NULL) {
        *oom = 1;
        return NULL;
    }
    tpe__split(r->loss, r->n_fin, r->rows - r->n_fin, below);
    for (int j = 0; j < space->dims; j++)
        ucfg[j] = SPACE_INACTIVE_U;
    for (int b = 0; b < r->nblocks; b++) {
        if (propose_block(r, b, below, s->multivariate, s->seed, number, attempt, ucfg) != 0) {
            free(below);
            *oom = 1;
            return NULL;
        }
    }
    free(below);
    json_t *c = space_decode(space, ucfg, number % space->grid_size, s->grid_order);
    if (c == NULL)
        *oom = 1;
    return c;
}

int tpe_propose(const Space *space, const SearcherSpec *searcher, int64_t first, int64_t count,
                const BayesHistory *history, json_t **out, RungError *err)
{
    if (first < 0 || count < 0 || count > TPE_MAX_BATCH ||
        (history != NULL && (history->n_obs < 0 || history->n_pending < 0 ||
                             (history->n_obs > 0 && history->obs == NULL) ||
                             (history->n_pending > 0 && history->pending == NULL))))
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "history",
                              "tpe_propose: arguments out of range");
    for (int64_t i = 0; i < count; i++)
        out[i] = NULL;
    Rows r = {.space = space};
    int nb = make_blocks(space, searcher, &r.blocks);
    if (nb < 0)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL, "tpe_propose: out of memory");
    r.nblocks = nb;
    int oom = 0;
    if (history != NULL) {
        for (int64_t i = 0; i < history->n_obs && !oom; i++)
            oom = add_row(&r, history->obs[i].config, history->obs[i].loss) != 0;
        r.n_fin = r.rows;
        for (int64_t i = 0; searcher->constant_liar && i < history->n_pending && !oom; i++)
            oom = add_row(&r, history->pending[i], INFINITY) != 0;
    }
    for (int64_t c = 0; c < count && !oom; c++) {
        int64_t number = first + c;
        if (number < searcher->n_initial || r.n_fin < searcher->n_initial || space->dims == 0 ||
            r.n_fin == 0) {
            out[c] = sampler_config(space, searcher, number);
            oom = out[c] == NULL;
        } else {
            out[c] = propose_one(&r, searcher, number, 0, &oom);
            /* searcher.noisy false: not a config tried already, while other
             * draws of the model, then of the random searcher, find one. */
            for (int a = 1; !oom && !searcher->noisy && a <= TPE_RETRIES && seen(&r, out[c]); a++) {
                json_decref(out[c]);
                out[c] = propose_one(&r, searcher, number, a, &oom);
            }
            for (int64_t k = 1; !oom && !searcher->noisy && k <= TPE_REDRAWS && seen(&r, out[c]);
                 k++) {
                json_t *alt = sampler_redraw(space, searcher, number, k);
                if (alt != NULL && !seen(&r, alt)) {
                    json_decref(out[c]);
                    out[c] = alt;
                } else {
                    json_decref(alt);
                }
            }
        }
        /* The constant liar: this config is pending for the next of the batch. */
        if (!oom && searcher->constant_liar && c + 1 < count)
            oom = add_row(&r, out[c], INFINITY) != 0;
    }
    free(r.blocks);
    free(r.u);
    free(r.loss);
    free(r.active);
    free(r.cfg);
    if (oom) {
        for (int64_t i = 0; i < count; i++) {
            json_decref(out[i]);
            out[i] = NULL;
        }
        return rung_error_set(err, RUNG_E_INTERNAL, NULL, "tpe_propose: out of memory");
    }
    return 0;
}
