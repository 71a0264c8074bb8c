/* The bayes searcher: Gaussian-process search over the unit cube (bayes.h,
 * docs/searchers.md).
 *
 * What the GP sees. Every sampled parameter is one feature: continuous,
 * integer and quantized domains their cube coordinate (log domains are
 * already log-scaled there, integers and quantized values are relaxed to
 * the whole cell and rounded by space_decode), a choice its category
 * index under a Hamming term of the kernel (gp.h). A grid parameter with
 * more than one value is a categorical feature too: a proposal keeps the
 * grid combination of its trial number (n mod G, as Ray does) and the GP
 * learns from the other combinations' trials. Observed configs are encoded
 * with space_encode, so they sit where proposals are decoded from.
 *
 * What it models. Losses (failed trials as the worst finite loss), as
 * their log when all are positive and span three orders of magnitude or
 * more (BayesTuning.log_span), through a Box-Cox transform whose power in [0, 1] is chosen by
 * likelihood (a log for heavy right tails such as Rosenbrock's, linear for Hartmann's),
 * standardized to mean 0 and sd 1 (with several objectives each is only
 * standardized: output_of says why). The hyperparameters are fitted once per
 * call: gp_fit scores the prior means and fit_raw random starts and runs
 * BFGS from the best (from the two best up to fit_starts_max_n
 * observations, where a run is cheap); with more observations than fit_max
 * the fit sees the best quarter of them plus a random rest, and the GP is
 * then conditioned on all of them. Both bounds keep a proposal within
 * about 10 ms at 100 observations and 0.3 s at 1,000 (bench/sampler_speed).
 *
 * How a proposal is made (trial t, after n_initial Sobol trials):
 *   1. candidates: `candidates` points of a Sobol sequence digitally
 *      shifted by (seed, t) (pseudo-random beyond Sobol's 40 dimensions),
 *      plus `local_candidates` Gaussian steps around the best observations;
 *   2. log EI (acq.h) of the candidates, and BFGS refinement of the best
 *      `refine_starts` over the continuous features in [0, 1]: with one
 *      objective only the candidates that may be among those best are
 *      computed exactly (acq_log_ei_top: a bound on the variance from the
 *      kernel row rules out the rest, usually all but one in forty);
 *   3. the winner is rounded to a config and back (space_decode, then
 *      space_encode), and each discrete dimension of at most
 *      BAYES_SWEEP_MAX values (choices, small integer and quantized
 *      domains) is swept over its values, coordinate by coordinate;
 *   4. the config joins the GP as a kriging-believer point (its value the
 *      posterior mean, which leaves the mean unchanged and shrinks the
 *      variance around it), as did every pending trial before the first
 *      proposal: parallel proposals spread out.
 *
 * Every draw hashes (seed, stream, trial number or observation count):
 * the same seed and history give the same proposals, and proposing a batch
 * at once gives what proposing its trials one by one (each earlier one
 * pending) gives (the GP's capacity is rounded so that both have the same
 * row stride: BLAS kernels may round otherwise for another). */
#include "sampler_internal.h"

#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acq.h"
#include "gp.h"
#include "pareto.h"

/* The most observations a GP is conditioned on (the best half and the most
 * recent rest when there are more): its factor is O(n^2) memory and each
 * fit O(n^3); 2,000 points model any function a tuner meets. */
#define BAYES_MAX_OBS 2000
/* The most pending trials taken into account (the most recent ones). */
#define BAYES_MAX_PENDING 1024
/* A GP holds the observations, the pending trials and a batch at once. */
_Static_assert(BAYES_MAX_OBS + BAYES_MAX_PENDING + BAYES_MAX_BATCH <= GP_MAX_POINTS,
               "a GP must hold every point a call gives it");
/* Discrete dimensions with at most this many values are swept at the end
 * of a proposal; larger ones are only rounded. */
#define BAYES_SWEEP_MAX 64
#define BAYES_SWEEP_PASSES 2
/* Below this many observations there is nothing to model: Sobol points. */
#define BAYES_MIN_OBS 2
/* The most doubles of a fit's pair cache (gp_objective: n(n-1)/2 pairs x
 * features), 32 MiB: with many features a fit sees fewer points. */
#define BAYES_PAIR_CACHE_MAX (INT64_C(4) << 20)
/* The GP's capacity is a multiple of this (build_gp_on). */
#define BAYES_CAP_ROUND 64
/* Local candidates step around this many of the best observations. */
#define BAYES_LOCAL_CENTRES 5
/* Their spreads: local_scale times 1, 1/4 and 1/16, in turn. */
#define BAYES_LOCAL_LEVELS 3
/* A GP per objective and per constraint bound. */
#define BAYES_MAX_MODELS (BAYES_MAX_OBJECTIVES + BAYES_MAX_CONSTRAINTS)
/* The most EHVI cells (pareto_cells_new): beyond, the front is thinned to
 * its most crowding-distant points; 4 objectives and 30 front points make
 * 29,791 cells, a few milliseconds per thousand candidates each. */
#define BAYES_EHVI_CELLS_MAX 32768
/* The reference point of the hypervolume, per objective in the GP's
 * standardized units: mid-way between the front's worst value and the
 * worst observed, plus this share of the observed range (prepare_multi,
 * docs/searchers.md). */
#define BAYES_REF_MARGIN 0.1
/* Derivative-free refinement of several objectives or constraints: rounds
 * of this many Gaussian steps around the point, the spread halving from
 * local_scale each round. */
#define BAYES_PATTERN_STEPS 32
#define BAYES_PATTERN_ROUNDS 6

/* The defaults were tuned with a driver over bench/README.md section 2's
 * functions (Branin, Hartmann6, Rosenbrock-4, Ackley-5, Levy-4; 40 seeds x
 * 100 trials) and timed at 100 and 1,000 observations. */
void bayes__default_tuning(BayesTuning *t)
{
    memset(t, 0, sizeof *t);
    t->candidates = 2048; /* a power of two: a complete Sobol net */
    /* Candidates near the best points find EI's narrow peak there, which
     * the net misses once the GP is sure of the region (Levy-4's median
     * regret at 50 trials over 100 seeds: 0.67 with 512, 0.80 with 256). */
    t->local_candidates = 512;
    t->local_scale = 0.1;
    t->refine_starts = 5;
    t->refine_iter = 50;
    /* A fit on 300 points costs about 2 ms per likelihood; conditioning on
     * more points is cheap beside it. */
    t->fit_max = 300;
    t->fit_raw = 8;
    t->fit_starts = 2;
    t->fit_starts_max_n = 64;
    /* The likelihood is flat near its optimum: 15 iterations gave the
     * regrets of 60 (within the seeds' spread) at a quarter of the time. */
    t->fit_iter = 15;
    /* Rosenbrock-4's median regret at 50 trials: 31 with Box-Cox, 390
     * without; delta = 0.1 of the spread keeps the best point from
     * becoming an outlier of the log (0.01: Branin 1e-4 instead of 2e-5). */
    t->output = BAYES_OUTPUT_BOXCOX;
    t->boxcox_delta = 0.1;
    /* Positive losses over three orders of magnitude (an MSE, a loss that
     * diverges for bad configs): with z = (loss - min) / spread + 0.1 all
     * good configs sit at z = 0.1 and look flat; their log keeps them apart.
     * Paired over 20 seeds at 100 evaluations (docs/searchers.md, "Heavy
     * tails"): exp(Branin / 10) 0.557 -> 1.2e-5, exp(5 (Hartmann6 +
     * 3.33)) 0.476 -> 1.5e-4, Rosenbrock-4 4.76 -> 3.69, Levy-4 0.055 ->
     * 0.043, the others unchanged; at 100 instead, Branin's median at 50
     * went from 2.9e-5 to 1.3e-3, worse in 20 seeds of 20. */
    t->log_span = 1e3;
    /* Weak log-normal priors: length scales around 0.3 of the cube (times
     * sqrt(d)), a signal variance around the standardized 1, and little
     * noise, within a factor of 20 of 1e-4 at two sd (with sd 3 instead,
     * Hartmann6's median regret at 50 trials was 0.065, not 0.009). */
    t->prior.log_ls_mean = log(0.3);
    t->prior.log_ls_sd = 1.5;
    t->prior.log_sf2_mean = 0.0;
    t->prior.log_sf2_sd = 1.5;
    t->prior.log_noise_mean = log(1e-4);
    t->prior.log_noise_sd = 1.5;
}

typedef struct Feature {
    int param;      /* index into space->params */
    int cube;       /* cube coordinate; -1 for a grid parameter */
    int64_t levels; /* categorical: number of categories; 0: continuous */
} Feature;

/* Everything one call works with. */
typedef struct Bayes {
    const Space *space;
    const SearcherSpec *searcher;
    const BayesTuning *tu;
    int dims; /* cube coordinates */
    int nf;   /* GP features */
    Feature feat[SPACE_MAX_PARAMS];
    bool cat[SPACE_MAX_PARAMS];  /* per feature: categorical */
    bool free[SPACE_MAX_PARAMS]; /* per feature: refined by BFGS */
    /* Discrete cube dimensions swept at the end: their values' coordinates. */
    double *levels[SPACE_MAX_PARAMS];
    int nlevels[SPACE_MAX_PARAMS];
    /* Usable observations: n of them. */
    int n;
    double *u;    /* n x dims cube coordinates */
    double *x;    /* n x nf features */
    double *loss; /* n losses, failed ones set to the worst */
    double *y;    /* n transformed, standardized */
    bool flat;    /* all y equal: nothing to fit */
    double best;  /* min y, and of the believed values since */
    int centres[BAYES_LOCAL_CENTRES];
    int ncentres;
    Gp *gp;
    /* Several objectives or constraints (multi): model 0 is the loss above
     * (gm[0] == gp, ym[0] == y), models 1 .. nobj - 1 the other objectives,
     * nobj .. nobj + ncon - 1 the constraint bounds (thr: the feasibility
     * threshold g = 0 in the model's standardized units). */
    bool multi;
    int nobj, ncon;
    double *raw[BAYES_MAX_MODELS]; /* n values each, models >= 1 */
    double *ym[BAYES_MAX_MODELS];
    bool flatm[BAYES_MAX_MODELS];
    Gp *gm[BAYES_MAX_MODELS];
    double thr[BAYES_MAX_MODELS];
    bool *ok;          /* n: every objective finite (not failed) */
    bool any_feasible; /* some observation (or believer) is feasible */
    double *front;     /* nfront x nobj, standardized: the feasible front and believers */
    int nfront, capfront;
    double ref[BAYES_MAX_OBJECTIVES];
    ParetoCells *cells;
    /* The loss's output transform (transform), for bayes_predict to undo:
     * Box-Cox of (loss - out_lo) / out_spread + delta with power
     * out_lambda (boxcox: false when none), then (y - out_mean) / out_sd. */
    bool out_boxcox;
    bool out_log; /* the losses were log(loss) first (BayesTuning.log_span) */
    double out_lo, out_spread, out_lambda, out_mean, out_sd;
    /* Configs observed, pending or proposed in this call, as features:
     * nseen rows of nf (searcher.noisy false: a proposal is none of them,
     * unseen_alternative). NULL when repeats are allowed. */
    double *seen;
    int nseen, capseen;
    /* Candidate buffers: cap of them. */
    int cap;
    double *cu; /* cap x dims */
    double *cx; /* cap x nf */
    double *cv; /* cap log EI */
} Bayes;

static int oom(RungError *err)
{
    return rung_error_set(err, RUNG_E_INTERNAL, NULL, "bayes: out of memory");
}

static double hash_uniform(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b)
{
    return (double)(sampler__hash(seed, stream, a, b) >> 11) * 0x1.0p-53;
}

/* ---- layout: parameters to features ------------------------------------ */

static void build_layout(Bayes *b)
{
    const Space *s = b->space;
    b->dims = s->dims;
    b->nf = 0;
    for (int i = 0; i < s->nparams; i++) {
        const SpaceParam *p = &s->params[i];
        bool categorical = p->kind == SPACE_CHOICE || p->kind == SPACE_GRID;
        /* A constant, or a single value, carries no information. */
        if (p->kind == SPACE_CONST || (categorical && p->count < 2))
            continue;
        Feature *f = &b->feat[b->nf];
        f->param = i;
        f->cube = p->cube;
        f->levels = categorical ? p->count : 0;
        b->cat[b->nf] = categorical;
        b->free[b->nf] = !categorical;
        b->nf++;
    }
}


/* Features of the cube point u with grid indices gidx. A parameter of a
 * branch not taken is imputed (docs/searchers.md): SPACE_INACTIVE_U, as
 * space_encode gives observed configs, and category -1 for a choice. */
static void features_of(const Bayes *b, const double *u, const int64_t *gidx, double *x)
{
    bool active[SPACE_MAX_PARAMS];
    int sel[SPACE_MAX_PARAMS];
    if (b->space->conditional)
        space__active(b->space, u, NULL, active, sel);
    for (int k = 0; k < b->nf; k++) {
        const Feature *f = &b->feat[k];
        if (b->space->conditional && !active[f->param]) {
            x[k] = f->levels > 0 ? -1.0 : SPACE_INACTIVE_U;
        } else if (f->cube < 0) {
            x[k] = (double)gidx[f->param];
        } else if (f->levels > 0) {
            double c = floor(u[f->cube] * (double)f->levels);
            x[k] = c < 0.0 ? 0.0 : (c > (double)(f->levels - 1) ? (double)(f->levels - 1) : c);
        } else {
            x[k] = u[f->cube];
        }
    }
}

/* Cube coordinates and features of a config; -1 when it does not fit the
 * space (a missing parameter, an unknown choice or grid value). */
static int config_point(const Bayes *b, const json_t *config, double *u, double *x)
{
    const Space *s = b->space;
    if (space_encode(s, config, u, NULL) != 0)
        return -1;
    int64_t gidx[SPACE_MAX_PARAMS];
    for (int i = 0; i < s->nparams; i++) {
        const SpaceParam *p = &s->params[i];
        gidx[i] = -1;
        if (p->kind != SPACE_GRID)
            continue;
        const json_t *v = json_object_get(config, p->name);
        int64_t k = 0;
        while (v != NULL && k < p->count && !json_equal(json_array_get(p->values, (size_t)k), v))
            k++;
        if (v == NULL || k == p->count)
            return -1;
        gidx[i] = k;
    }
    features_of(b, u, gidx, x);
    return 0;
}

/* Rounds u to the config it decodes to and back. */
static int snap(const Bayes *b, double *u, int64_t combo)
{
    json_t *config = space_decode(b->space, u, combo, b->searcher->grid_order);
    if (config == NULL)
        return -1;
    int rc = space_encode(b->space, config, u, NULL);
    json_decref(config);
    return rc == 0 ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

/* The cube coordinates of every value of the small discrete dimensions.
 * Linear domains have cells of equal width, so value k sits at
 * (k + 0.5) / count; log and quantized domains are asked of space_encode. */
static int build_levels(Bayes *b)
{
    const Space *s = b->space;
    json_t *tmpl = NULL;
    double u[SPACE_MAX_PARAMS];
    for (int i = 0; i < s->nparams; i++) {
        const SpaceParam *p = &s->params[i];
        if (p->cube < 0)
            continue;
        int64_t count = 0;
        bool direct = false;
        switch (p->kind) {
        case SPACE_RANDINT:
        case SPACE_QRANDINT:
        case SPACE_CHOICE:
            count = p->count;
            direct = true;
            break;
        case SPACE_LOGRANDINT:
        case SPACE_QLOGRANDINT:
            count = p->count;
            break;
        case SPACE_QUNIFORM:
        case SPACE_QLOGUNIFORM:
        case SPACE_QNORMAL:
            count = (int64_t)(p->kmax - p->kmin) + 1;
            break;
        default:
            break;
        }
        if (count < 2 || count > BAYES_SWEEP_MAX)
            continue;
        double *lv = malloc((size_t)count * sizeof *lv);
        if (lv == NULL)
            goto fail;
        b->levels[p->cube] = lv;
        for (int64_t k = 0; k < count; k++) {
            if (direct) {
                lv[k] = ((double)k + 0.5) / (double)count;
                continue;
            }
            if (tmpl == NULL) {
                for (int j = 0; j < s->dims; j++)
                    u[j] = 0.5;
                tmpl = space_decode(s, u, 0, b->searcher->grid_order);
                if (tmpl == NULL)
                    goto fail;
            }
            json_t *v;
            if (p->kind == SPACE_LOGRANDINT)
                v = json_integer(p->ilow + k);
            else if (p->kind == SPACE_QLOGRANDINT)
                v = json_integer((p->ik0 + k) * p->iq);
            else
                v = json_real(space__quantize(p, (p->kmin + (double)k) * p->q));
            if (v == NULL || json_object_set_new(tmpl, p->name, v) != 0 ||
                space_encode(s, tmpl, u, NULL) != 0)
                goto fail;
            lv[k] = u[p->cube];
        }
        /* Rounding can merge neighbours of a quantized domain. */
        qsort(lv, (size_t)count, sizeof *lv, cmp_double);
        int m = 0;
        for (int64_t k = 0; k < count; k++)
            if (m == 0 || lv[k] != lv[m - 1])
                lv[m++] = lv[k];
        b->nlevels[p->cube] = m;
    }
    json_decref(tmpl);
    return 0;
fail:
    json_decref(tmpl);
    return -1;
}

static void bayes_close(Bayes *b)
{
    for (int j = 0; j < SPACE_MAX_PARAMS; j++)
        free(b->levels[j]);
    free(b->u);
    free(b->x);
    free(b->loss);
    free(b->y);
    free(b->cu);
    free(b->cx);
    free(b->cv);
    free(b->seen);
    gp_free(b->gp);
    for (int k = 1; k < BAYES_MAX_MODELS; k++) {
        free(b->raw[k]);
        free(b->ym[k]);
        gp_free(b->gm[k]);
    }
    free(b->front);
    free(b->ok);
    pareto_cells_free(b->cells);
}

/* ---- observations -------------------------------------------------------- */

typedef struct Ranked {
    double key;
    int64_t index;
} Ranked;

static int cmp_ranked(const void *a, const void *b)
{
    const Ranked *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index ? 1 : 0);
}

static double clean_loss(double loss)
{
    return loss == loss ? loss : INFINITY; /* NaN: failed */
}

/* Encodes the usable observations (at most BAYES_MAX_OBS: the best half
 * and the most recent rest), in trial order. */
static int collect(Bayes *b, const BayesHistory *h, RungError *err)
{
    int64_t total = h->n_obs;
    bool *take = calloc((size_t)(total > 0 ? total : 1), sizeof *take);
    if (take == NULL)
        return oom(err);
    if (total <= BAYES_MAX_OBS) {
        for (int64_t i = 0; i < total; i++)
            take[i] = true;
    } else {
        Ranked *r = malloc((size_t)total * sizeof *r);
        if (r == NULL) {
            free(take);
            return oom(err);
        }
        for (int64_t i = 0; i < total; i++) {
            r[i].key = clean_loss(h->obs[i].loss);
            r[i].index = i;
        }
        qsort(r, (size_t)total, sizeof *r, cmp_ranked);
        for (int64_t i = 0; i < BAYES_MAX_OBS / 2; i++)
            take[r[i].index] = true;
        free(r);
        int64_t left = BAYES_MAX_OBS - BAYES_MAX_OBS / 2;
        for (int64_t i = total - 1; i >= 0 && left > 0; i--)
            if (!take[i]) {
                take[i] = true;
                left--;
            }
    }
    int cap = total < BAYES_MAX_OBS ? (int)total : BAYES_MAX_OBS;
    size_t c = (size_t)(cap > 0 ? cap : 1);
    b->u = malloc(c * (size_t)(b->dims > 0 ? b->dims : 1) * sizeof *b->u);
    b->x = malloc(c * (size_t)(b->nf > 0 ? b->nf : 1) * sizeof *b->x);
    b->loss = malloc(c * sizeof *b->loss);
    b->y = malloc(c * sizeof *b->y);
    b->ok = malloc(c * sizeof *b->ok);
    bool fail = b->u == NULL || b->x == NULL || b->loss == NULL || b->y == NULL || b->ok == NULL;
    for (int k = 1; k < b->nobj + b->ncon; k++) {
        b->raw[k] = malloc(c * sizeof *b->raw[k]);
        b->ym[k] = malloc(c * sizeof *b->ym[k]);
        fail = fail || b->raw[k] == NULL || b->ym[k] == NULL;
    }
    if (fail) {
        free(take);
        return oom(err);
    }
    b->n = 0;
    for (int64_t i = 0; i < total; i++) {
        if (!take[i] || h->obs[i].config == NULL)
            continue;
        double *u = b->u + (size_t)b->n * (size_t)b->dims;
        double *x = b->x + (size_t)b->n * (size_t)b->nf;
        /* A config from an older spec, say, is skipped rather than failing
         * every later proposal of the experiment. */
        if (config_point(b, h->obs[i].config, u, x) != 0)
            continue;
        b->loss[b->n] = clean_loss(h->obs[i].loss);
        for (int k = 1; k < b->nobj; k++)
            b->raw[k][b->n] = clean_loss(h->obs[i].more[k - 1]);
        for (int k = 0; k < b->ncon; k++)
            b->raw[b->nobj + k][b->n] = h->obs[i].cons[k];
        b->ok[b->n] = isfinite(b->loss[b->n]);
        for (int k = 1; k < b->nobj; k++)
            b->ok[b->n] = b->ok[b->n] && isfinite(b->raw[k][b->n]);
        b->n++;
    }
    free(take);
    return 0;
}

/* Box-Cox of z = (loss - lo) / spread + delta into y, with the lambda in
 * [0, 1] that maximizes the profile likelihood of a normal sample,
 * -n/2 log var(y) + (lambda - 1) sum log z: heavy right tails (lambda near
 * 0, a log) are pulled in, symmetric or left-skewed losses stay linear. */
#define BAYES_BOXCOX_STEPS 20
static double boxcox(const double *loss, int n, double lo, double spread, double delta, double *y)
{
    if (!(spread > 0.0)) {
        for (int i = 0; i < n; i++)
            y[i] = 0.0;
        return 1.0;
    }
    double sumlog = 0.0;
    for (int i = 0; i < n; i++)
        sumlog += log((loss[i] - lo) / spread + delta);
    double best_l = 1.0, best_ll = -INFINITY;
    for (int s = 0; s <= BAYES_BOXCOX_STEPS; s++) {
        double lam = (double)s / BAYES_BOXCOX_STEPS;
        double mean = 0.0, ss = 0.0;
        for (int i = 0; i < n; i++) {
            double z = (loss[i] - lo) / spread + delta;
            y[i] = lam == 0.0 ? log(z) : (pow(z, lam) - 1.0) / lam;
            mean += y[i];
        }
        mean /= n;
        for (int i = 0; i < n; i++)
            ss += (y[i] - mean) * (y[i] - mean);
        double ll = -0.5 * n * log(ss / n) + (lam - 1.0) * sumlog;
        if (ll > best_ll) {
            best_ll = ll;
            best_l = lam;
        }
    }
    for (int i = 0; i < n; i++) {
        double z = (loss[i] - lo) / spread + delta;
        y[i] = best_l == 0.0 ? log(z) : (pow(z, best_l) - 1.0) / best_l;
    }
    return best_l;
}

/* The objectives' output transform. With several objectives they are only
 * standardized: EHVI measures the hypervolume in the models' units, and
 * an affine map per objective scales every hypervolume alike, so the best
 * point is the same as in the user's units; a Box-Cox log stretches the
 * values near each objective's minimum and sends the search to the ends of
 * the front, where little hypervolume is (DTLZ2, 20 seeds, median at 50
 * evaluations: 0.317 with Box-Cox, 0.360 without; docs/searchers.md). */
static BayesOutput output_of(const Bayes *b)
{
    return b->nobj > 1 ? BAYES_OUTPUT_NONE : b->tu->output;
}

/* Failed trials to the worst finite loss, then the output transform and
 * standardization into y; sets flat, best and the local centres. */
static int transform(Bayes *b)
{
    int n = b->n;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(b->loss[i])) {
            lo = b->loss[i] < lo ? b->loss[i] : lo;
            hi = b->loss[i] > hi ? b->loss[i] : hi;
        }
    for (int i = 0; i < n; i++) {
        if (!isfinite(b->loss[i]))
            b->loss[i] = isfinite(hi) ? hi : 0.0; /* -inf too: nothing tells */
    }
    if (!isfinite(lo))
        lo = hi = 0.0;
    b->out_log = output_of(b) == BAYES_OUTPUT_BOXCOX && b->tu->log_span > 0.0 && lo > 0.0 &&
                 hi / lo >= b->tu->log_span;
    if (b->out_log) {
        for (int i = 0; i < n; i++)
            b->loss[i] = log(b->loss[i]);
        lo = log(lo);
        hi = log(hi);
    }
    Ranked *r = malloc((size_t)(n > 0 ? n : 1) * sizeof *r);
    if (r == NULL)
        return -1;
    for (int i = 0; i < n; i++) {
        r[i].key = b->loss[i];
        r[i].index = i;
    }
    qsort(r, (size_t)n, sizeof *r, cmp_ranked);
    b->ncentres = n < BAYES_LOCAL_CENTRES ? n : BAYES_LOCAL_CENTRES;
    for (int k = 0; k < b->ncentres; k++)
        b->centres[k] = (int)r[k].index;

    double spread = hi - lo;
    b->out_lo = lo;
    b->out_spread = spread;
    b->out_boxcox = false;
    switch (output_of(b)) {
    case BAYES_OUTPUT_BOXCOX:
        b->out_lambda = boxcox(b->loss, n, lo, spread, b->tu->boxcox_delta, b->y);
        b->out_boxcox = spread > 0.0;
        break;
    default:
        for (int i = 0; i < n; i++)
            b->y[i] = b->loss[i];
        break;
    }
    free(r);
    double mean = 0.0, ss = 0.0;
    for (int i = 0; i < n; i++)
        mean += b->y[i];
    mean /= n > 0 ? n : 1;
    for (int i = 0; i < n; i++)
        ss += (b->y[i] - mean) * (b->y[i] - mean);
    double sd = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
    /* Equal losses (or a spread lost to rounding) carry no slope. */
    b->flat = !(sd > 1e-12 * (fabs(mean) + 1e-300)) || !isfinite(sd);
    b->out_mean = mean;
    b->out_sd = b->flat ? 0.0 : sd;
    b->best = 0.0;
    for (int i = 0; i < n; i++) {
        b->y[i] = b->flat ? 0.0 : (b->y[i] - mean) / sd;
        if (i == 0 || b->y[i] < b->best)
            b->best = b->y[i];
    }
    return 0;
}

/* ---- several objectives and constraints ------------------------------------ */

static double hash_normal(uint64_t seed, uint64_t a, uint64_t b);

/* Model k >= 1's targets: failed or missing values to the worst seen,
 * Box-Cox for an objective (as transform does), then standardized; a
 * constraint's threshold g = 0 follows it into the standardized units. */
static void transform_model(Bayes *b, int k)
{
    int n = b->n;
    double *v = b->raw[k], *y = b->ym[k];
    bool objective = k < b->nobj;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            lo = v[i] < lo ? v[i] : lo;
            hi = v[i] > hi ? v[i] : hi;
        }
    if (!isfinite(lo))
        lo = hi = objective ? 0.0 : 1.0; /* no value: all infeasible */
    for (int i = 0; i < n; i++)
        v[i] = y[i] = isfinite(v[i]) ? v[i] : hi;
    if (objective && output_of(b) == BAYES_OUTPUT_BOXCOX)
        boxcox(v, n, lo, hi - lo, b->tu->boxcox_delta, y);
    double mean = 0.0, ss = 0.0;
    for (int i = 0; i < n; i++)
        mean += y[i];
    mean /= n > 0 ? n : 1;
    for (int i = 0; i < n; i++)
        ss += (y[i] - mean) * (y[i] - mean);
    double sd = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
    b->flatm[k] = !(sd > 1e-12 * (fabs(mean) + 1e-300)) || !isfinite(sd);
    if (b->flatm[k]) {
        /* All equal: feasible everywhere or nowhere, as far as is known. */
        b->thr[k] = mean <= 0.0 ? 8.0 : -8.0;
        for (int i = 0; i < n; i++)
            y[i] = 0.0;
        return;
    }
    b->thr[k] = (0.0 - mean) / sd;
    for (int i = 0; i < n; i++)
        y[i] = (y[i] - mean) / sd;
}

/* The objective vector (standardized) of observation i. */
static void obj_row(const Bayes *b, int i, double *row)
{
    row[0] = b->y[i];
    for (int k = 1; k < b->nobj; k++)
        row[k] = b->ym[k][i];
}

static bool obs_feasible(const Bayes *b, int i)
{
    if (!b->ok[i])
        return false;
    for (int k = 0; k < b->ncon; k++) {
        double g = b->raw[b->nobj + k][i];
        if (!(g <= 0.0))
            return false;
    }
    return true;
}

/* (Re)makes the EHVI cells of the front, thinning it by crowding distance
 * when it would make more than BAYES_EHVI_CELLS_MAX cells. */
static int make_cells(Bayes *b)
{
    pareto_cells_free(b->cells);
    b->cells = NULL;
    if (b->nobj < 2 || !b->any_feasible)
        return 0;
    int m = b->nobj, k = b->nfront;
    b->cells = pareto_cells_new(b->front, k, m, b->ref, BAYES_EHVI_CELLS_MAX);
    if (b->cells != NULL)
        return 0;
    /* Too many: keep the front's points of largest crowding distance. */
    int *rank = calloc((size_t)k, sizeof *rank);
    double *crowd = malloc((size_t)k * sizeof *crowd);
    Ranked *r = malloc((size_t)k * sizeof *r);
    double *keep = malloc((size_t)k * (size_t)m * sizeof *keep);
    int rc = -1;
    if (rank != NULL && crowd != NULL && r != NULL && keep != NULL &&
        pareto_ranks(b->front, k, m, rank) >= 0 &&
        pareto_crowding(b->front, k, m, rank, crowd) == 0) {
        for (int i = 0; i < k; i++) {
            r[i].key = rank[i] == 0 ? -crowd[i] : INFINITY;
            r[i].index = i;
        }
        qsort(r, (size_t)k, sizeof *r, cmp_ranked);
        for (int keepn = k - 1; keepn >= 2 && b->cells == NULL; keepn = keepn * 3 / 4) {
            for (int i = 0; i < keepn; i++)
                memcpy(keep + (size_t)i * m, b->front + (size_t)r[i].index * m,
                       (size_t)m * sizeof *keep);
            b->cells = pareto_cells_new(keep, keepn, m, b->ref, BAYES_EHVI_CELLS_MAX);
        }
        rc = b->cells != NULL ? 0 : -1;
    }
    free(rank);
    free(crowd);
    free(r);
    free(keep);
    return rc;
}

static int front_add(Bayes *b, const double *row)
{
    if (b->nfront == b->capfront) {
        int cap = b->capfront > 0 ? 2 * b->capfront : 64;
        double *f = realloc(b->front, (size_t)cap * (size_t)b->nobj * sizeof *f);
        if (f == NULL)
            return -1;
        b->front = f;
        b->capfront = cap;
    }
    memcpy(b->front + (size_t)b->nfront++ * b->nobj, row, (size_t)b->nobj * sizeof *row);
    return 0;
}

/* After the transforms: each model's targets, the feasible observations'
 * front (or best, for one objective), the reference point, and the local
 * candidates' centres (front points, or the least infeasible). */
static int prepare_multi(Bayes *b)
{
    int n = b->n;
    for (int k = 1; k < b->nobj + b->ncon; k++)
        transform_model(b, k);
    b->ym[0] = b->y;
    b->flatm[0] = b->flat;
    b->any_feasible = false;
    double row[BAYES_MAX_OBJECTIVES];
    double lo[BAYES_MAX_OBJECTIVES], hi[BAYES_MAX_OBJECTIVES];
    for (int j = 0; j < b->nobj; j++) {
        lo[j] = INFINITY;
        hi[j] = -INFINITY;
    }
    Ranked *r = malloc((size_t)(n > 0 ? n : 1) * sizeof *r);
    if (r == NULL)
        return -1;
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        obj_row(b, i, row);
        for (int j = 0; j < b->nobj; j++) {
            lo[j] = row[j] < lo[j] ? row[j] : lo[j];
            hi[j] = row[j] > hi[j] ? row[j] : hi[j];
        }
        bool feasible = obs_feasible(b, i);
        if (feasible) {
            b->any_feasible = true;
            if (b->nobj > 1 && front_add(b, row) != 0) {
                free(r);
                return -1;
            }
            best = row[0] < best ? row[0] : best;
        }
        /* Centres: feasible points by the first objective, then the
         * infeasible by their worst standardized violation. */
        double viol = -INFINITY;
        for (int k = 0; k < b->ncon; k++) {
            double v = b->ym[b->nobj + k][i] - b->thr[b->nobj + k];
            viol = v > viol ? v : viol;
        }
        r[i].key = feasible ? row[0] - 1e6 : viol;
        r[i].index = i;
    }
    if (b->nobj > 1 && b->nfront > 0) {
        /* Only the non-dominated feasible points count; centres spread
         * along them. */
        bool *on = malloc((size_t)b->nfront * sizeof *on);
        if (on == NULL || pareto_front(b->front, b->nfront, b->nobj, on) < 0) {
            free(on);
            free(r);
            return -1;
        }
        for (int i = 0; i < n; i++)
            if (r[i].key < -1e5) {
                obj_row(b, i, row);
                double spread = hash_uniform(b->searcher->seed, SAMPLER_STREAM_BAYES_SUBSET,
                                             (uint64_t)n + 0x9e37, (uint64_t)i);
                /* Front members first, in a seeded order. */
                bool member = false;
                for (int f = 0; f < b->nfront && !member; f++)
                    member = on[f] && memcmp(b->front + (size_t)f * b->nobj, row,
                                             (size_t)b->nobj * sizeof *row) == 0;
                r[i].key = member ? -2e6 + spread : -1e6 + spread;
            }
        int w = 0;
        for (int f = 0; f < b->nfront; f++)
            if (on[f])
                memmove(b->front + (size_t)w++ * b->nobj, b->front + (size_t)f * b->nobj,
                        (size_t)b->nobj * sizeof *b->front);
        b->nfront = w;
        free(on);
    }
    qsort(r, (size_t)n, sizeof *r, cmp_ranked);
    b->ncentres = n < BAYES_LOCAL_CENTRES ? n : BAYES_LOCAL_CENTRES;
    for (int k = 0; k < b->ncentres; k++)
        b->centres[k] = (int)r[k].index;
    free(r);
    b->best = best;
    /* The reference point: mid-way between the front's worst value and
     * the worst observed, plus 10% of the observed range (docs/searchers.md
     * says why). */
    for (int j = 0; j < b->nobj; j++) {
        double nadir = -INFINITY;
        for (int f = 0; f < b->nfront; f++)
            nadir = b->front[(size_t)f * b->nobj + j] > nadir ? b->front[(size_t)f * b->nobj + j]
                                                              : nadir;
        double worst = b->nfront > 0 ? 0.5 * (nadir + hi[j]) : hi[j];
        b->ref[j] = worst + BAYES_REF_MARGIN * (hi[j] - lo[j] > 0 ? hi[j] - lo[j] : 1.0);
    }
    return make_cells(b);
}

/* log Phi(z), accurate far into the lower tail. */
double bayes__log_cdf(double z)
{
    if (z > -5.0)
        return log(0.5 * erfc(-z / M_SQRT2));
    /* erfc underflows and loses digits there: the asymptotic series
     * Phi(z) ~ phi(z) / -z (1 - 1/z^2 + 3/z^4), relative error below 1e-4. */
    double z2 = z * z;
    return -0.5 * z2 - 0.5 * log(2.0 * M_PI) - log(-z) + log1p(-1.0 / z2 + 3.0 / (z2 * z2));
}

/* The acquisition of several objectives or constraints at m points (x is
 * m x nf): log EHVI (two or more objectives) or log EI (one), plus the log
 * probability of feasibility of every constraint; PoF alone while nothing
 * is feasible. Where EHVI underflows to 0 the sum of the objectives' log EI
 * ranks the points, below any positive EHVI. */
#define BAYES_MULTI_BLOCK 256
static int acq_multi(Bayes *b, const double *x, int m, double *out)
{
    double mean[BAYES_MAX_MODELS][BAYES_MULTI_BLOCK], var[BAYES_MAX_MODELS][BAYES_MULTI_BLOCK];
    int models = b->nobj + b->ncon;
    for (int s0 = 0; s0 < m; s0 += BAYES_MULTI_BLOCK) {
        int c = m - s0 < BAYES_MULTI_BLOCK ? m - s0 : BAYES_MULTI_BLOCK;
        for (int k = 0; k < models; k++)
            if (gp_predict_many(b->gm[k], x + (size_t)s0 * b->nf, c, mean[k], var[k]) != 0)
                return -1;
        for (int i = 0; i < c; i++) {
            double lp = 0.0;
            for (int k = b->nobj; k < models; k++) {
                double sd = sqrt(var[k][i] > ACQ_VAR_MIN ? var[k][i] : ACQ_VAR_MIN);
                lp += bayes__log_cdf((b->thr[k] - mean[k][i]) / sd);
            }
            double v = lp;
            if (b->any_feasible) {
                double mu[BAYES_MAX_OBJECTIVES], sd[BAYES_MAX_OBJECTIVES];
                for (int j = 0; j < b->nobj; j++) {
                    mu[j] = mean[j][i];
                    sd[j] = sqrt(var[j][i] > ACQ_VAR_MIN ? var[j][i] : ACQ_VAR_MIN);
                }
                double e = b->nobj > 1 && b->cells != NULL ? pareto_cells_ehvi(b->cells, mu, sd)
                                                           : 0.0;
                if (e > 0.0) {
                    v += log(e);
                } else {
                    double s = b->nobj > 1 ? -1e4 : 0.0;
                    for (int j = 0; j < b->nobj; j++) {
                        double bj = b->best;
                        if (j > 0 || b->nobj > 1) {
                            bj = INFINITY;
                            for (int f = 0; f < b->nfront; f++)
                                bj = b->front[(size_t)f * b->nobj + j] < bj
                                         ? b->front[(size_t)f * b->nobj + j]
                                         : bj;
                        }
                        s += log(sd[j]) + acq_log_h((bj - mu[j]) / sd[j], NULL);
                    }
                    v += s;
                }
            }
            out[s0 + i] = isnan(v) ? -INFINITY : v;
        }
    }
    return 0;
}

/* Derivative-free local maximization of acq_multi from x over the movable
 * features: rounds of Gaussian steps (seeded by the trial and start),
 * keeping the best; the spread halves each round. */
static int refine_multi(Bayes *b, int64_t t, int start, const bool *movable, double *x,
                        double *value)
{
    int nf = b->nf;
    double *cand = malloc((size_t)BAYES_PATTERN_STEPS * (size_t)nf * sizeof *cand);
    double vals[BAYES_PATTERN_STEPS];
    if (cand == NULL)
        return -1;
    double cur;
    if (acq_multi(b, x, 1, &cur) != 0) {
        free(cand);
        return -1;
    }
    double scale = b->tu->local_scale;
    for (int round = 0; round < BAYES_PATTERN_ROUNDS; round++, scale *= 0.5) {
        for (int i = 0; i < BAYES_PATTERN_STEPS; i++) {
            double *c = cand + (size_t)i * nf;
            memcpy(c, x, (size_t)nf * sizeof *c);
            for (int k = 0; k < nf; k++) {
                if (!movable[k])
                    continue;
                uint64_t key = (UINT64_C(3) << 32) +
                               (((uint64_t)start * BAYES_PATTERN_ROUNDS + (uint64_t)round) *
                                    BAYES_PATTERN_STEPS +
                                (uint64_t)i) *
                                   (uint64_t)nf +
                               (uint64_t)k;
                double v = c[k] + scale * hash_normal(b->searcher->seed, (uint64_t)t, key);
                c[k] = v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
            }
        }
        if (acq_multi(b, cand, BAYES_PATTERN_STEPS, vals) != 0) {
            free(cand);
            return -1;
        }
        for (int i = 0; i < BAYES_PATTERN_STEPS; i++)
            if (vals[i] > cur) {
                cur = vals[i];
                memcpy(x, cand + (size_t)i * nf, (size_t)nf * sizeof *x);
            }
    }
    free(cand);
    *value = cur;
    return 0;
}

/* ---- the model ------------------------------------------------------------ */

/* A deterministic subset of fit_max observations for the fit: the best
 * quarter, then the rest in an order drawn from (seed, n). */
static int fit_subset(const Bayes *b, const double *y, double *sx, double *sy, int m)
{
    int n = b->n;
    Ranked *r = malloc((size_t)n * sizeof *r);
    bool *take = calloc((size_t)n, sizeof *take);
    if (r == NULL || take == NULL) {
        free(r);
        free(take);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        r[i].key = y[i];
        r[i].index = i;
    }
    qsort(r, (size_t)n, sizeof *r, cmp_ranked);
    for (int k = 0; k < m / 4; k++)
        take[r[k].index] = true;
    for (int i = 0; i < n; i++) {
        r[i].key = hash_uniform(b->searcher->seed, SAMPLER_STREAM_BAYES_SUBSET, (uint64_t)n,
                                (uint64_t)i);
        r[i].index = i;
    }
    qsort(r, (size_t)n, sizeof *r, cmp_ranked);
    int have = m / 4;
    for (int k = 0; k < n && have < m; k++)
        if (!take[r[k].index]) {
            take[r[k].index] = true;
            have++;
        }
    int j = 0;
    for (int i = 0; i < n; i++) {
        if (!take[i])
            continue;
        memcpy(sx + (size_t)j * (size_t)b->nf, b->x + (size_t)i * (size_t)b->nf,
               (size_t)b->nf * sizeof *sx);
        sy[j++] = y[i];
    }
    free(r);
    free(take);
    return 0;
}

/* Makes *out: fitted to the observations' targets y (flat: all equal),
 * room for `extra` more points. */
static int build_gp_on(Bayes *b, const double *y, bool flat, int extra, Gp **out, RungError *err)
{
    const BayesTuning *tu = b->tu;
    /* The capacity is the factor's row stride, and OpenBLAS's kernels may
     * round differently for another stride: rounded up, a batch and the
     * same configs proposed one by one (each earlier one pending, so other
     * counts of extra points) share it and give the same bits. */
    int cap = (b->n + extra + BAYES_CAP_ROUND - 1) / BAYES_CAP_ROUND * BAYES_CAP_ROUND;
    Gp *gp = *out = gp_new(b->nf, b->cat, cap < GP_MAX_POINTS ? cap : GP_MAX_POINTS);
    if (gp == NULL)
        return oom(err);
    int rc = gp_set_data(gp, b->x, y, b->n);
    GpFitOptions opt = {
        .prior = tu->prior,
        .theta0 = NULL,
        .n_raw = tu->fit_raw,
        .n_starts = b->n <= tu->fit_starts_max_n ? tu->fit_starts : 1,
        .max_iter = tu->fit_iter,
        .seed = sampler__hash(b->searcher->seed, SAMPLER_STREAM_GP_FIT, (uint64_t)b->n, 0),
    };
    /* More features want longer length scales for the same correlation. */
    opt.prior.log_ls_mean += 0.5 * log((double)b->nf);
    double ls[SPACE_MAX_PARAMS];
    int fit_max = tu->fit_max;
    while (fit_max > 2 && (int64_t)fit_max * (fit_max - 1) / 2 * b->nf > BAYES_PAIR_CACHE_MAX)
        fit_max--;
    if (rc == 0 && flat) {
        for (int k = 0; k < b->nf; k++)
            ls[k] = exp(opt.prior.log_ls_mean);
        rc = gp_set_hyper(gp, ls, 1.0, GP_NOISE_MIN + exp(opt.prior.log_noise_mean));
    } else if (rc == 0 && b->n <= fit_max) {
        rc = gp_fit(gp, &opt, NULL);
    } else if (rc == 0) {
        int m = fit_max;
        Gp *sub = gp_new(b->nf, b->cat, m);
        double *sx = malloc((size_t)m * (size_t)b->nf * sizeof *sx);
        double *sy = malloc((size_t)m * sizeof *sy);
        double theta[SPACE_MAX_PARAMS + 2];
        rc = sub != NULL && sx != NULL && sy != NULL ? fit_subset(b, y, sx, sy, m) : -1;
        if (rc != 0) {
            rc = RUNG_E_INTERNAL;
        } else {
            rc = gp_set_data(sub, sx, sy, m);
            if (rc == 0)
                rc = gp_fit(sub, &opt, theta);
            if (rc == 0) {
                for (int k = 0; k < b->nf; k++)
                    ls[k] = exp(theta[k]);
                rc = gp_set_hyper(gp, ls, exp(theta[b->nf]), GP_NOISE_MIN + exp(theta[b->nf + 1]));
            }
        }
        gp_free(sub);
        free(sx);
        free(sy);
    }
    if (rc != 0)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                              "bayes: the Gaussian process could not be fitted to %d "
                              "observations (its kernel matrix stayed singular with the "
                              "largest jitter, or memory ran out)",
                              b->n);
    return 0;
}

static int build_gp(Bayes *b, int extra, RungError *err)
{
    int rc = build_gp_on(b, b->y, b->flat, extra, &b->gp, err);
    b->gm[0] = b->gp;
    for (int k = 1; rc == 0 && k < b->nobj + b->ncon; k++)
        rc = build_gp_on(b, b->ym[k], b->flatm[k], extra, &b->gm[k], err);
    return rc;
}

/* A kriging believer of several models: each GP gets its posterior mean;
 * when the means are feasible the point joins the front (or the best). */
/* ---- repeats (searcher.noisy false) ---------------------------------------- */

/* Two configs are the same when every feature is: discrete ones sit at
 * their value's cell centre, continuous ones are the decoded coordinate. */
#define BAYES_SAME_EPS 1e-9

static void see(Bayes *b, const double *x)
{
    if (b->seen == NULL || b->nseen == b->capseen)
        return;
    memcpy(b->seen + (size_t)b->nseen * (size_t)b->nf, x, (size_t)b->nf * sizeof *x);
    b->nseen++;
}

static bool seen(const Bayes *b, const double *x)
{
    for (int i = 0; b->seen != NULL && i < b->nseen; i++) {
        const double *r = b->seen + (size_t)i * (size_t)b->nf;
        int k = 0;
        while (k < b->nf && fabs(r[k] - x[k]) <= BAYES_SAME_EPS)
            k++;
        if (k == b->nf)
            return true;
    }
    return false;
}

static int add_believer_multi(Bayes *b, const double *x, RungError *err)
{
    double mean[BAYES_MAX_MODELS], var;
    bool feasible = true;
    for (int k = 0; k < b->nobj + b->ncon; k++) {
        if (gp_predict(b->gm[k], x, &mean[k], &var, NULL, NULL) != 0 ||
            gp_add_point(b->gm[k], x, mean[k]) != 0)
            return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                                  "bayes: a pending trial could not join the Gaussian processes");
        if (k >= b->nobj && mean[k] > b->thr[k])
            feasible = false;
    }
    if (!feasible)
        return 0;
    if (b->nobj == 1) {
        b->best = b->any_feasible && b->best < mean[0] ? b->best : mean[0];
        b->any_feasible = true;
        return 0;
    }
    b->any_feasible = true;
    if (front_add(b, mean) != 0 || make_cells(b) != 0)
        return oom(err);
    return 0;
}

/* Adds a config as a kriging-believer point; configs that do not fit the
 * space are left out. */
static int add_believer(Bayes *b, const json_t *config, RungError *err)
{
    double u[SPACE_MAX_PARAMS], x[SPACE_MAX_PARAMS], mean, var;
    if (config == NULL || config_point(b, config, u, x) != 0)
        return 0;
    see(b, x);
    if (b->multi)
        return add_believer_multi(b, x, err);
    if (gp_predict(b->gp, x, &mean, &var, NULL, NULL) != 0 || gp_add_point(b->gp, x, mean) != 0)
        return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                              "bayes: a pending trial could not join the Gaussian process");
    /* The believed value is an observation like the others: where it beats
     * the best, it becomes the best, or EI would keep its full improvement
     * and send the next proposal to the same spot. */
    if (mean < b->best)
        b->best = mean;
    return 0;
}

/* ---- one proposal ---------------------------------------------------------- */

/* A standard normal draw from two hashed uniforms (Box-Muller). */
static double hash_normal(uint64_t seed, uint64_t a, uint64_t b)
{
    double u1 = 1.0 - hash_uniform(seed, SAMPLER_STREAM_BAYES_FILL, a, 2 * b); /* (0, 1] */
    double u2 = hash_uniform(seed, SAMPLER_STREAM_BAYES_FILL, a, 2 * b + 1);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Fills the candidate buffers for trial t; returns how many. */
static int make_candidates(Bayes *b, int64_t t)
{
    int dims = b->dims;
    uint64_t seed = b->searcher->seed;
    int m = b->tu->candidates;
    /* A fresh digital shift per trial: the candidates of two proposals
     * are two different nets. */
    uint64_t shift_seed = sampler__hash(seed, SAMPLER_STREAM_BAYES_CANDIDATES, (uint64_t)t, 0);
    for (int i = 0; i < m; i++) {
        double *u = b->cu + (size_t)i * (size_t)dims;
        if (dims > SOBOL_MAX_DIMS ||
            sampler__sobol_point((uint64_t)i, dims, shift_seed, 0, u) != 0) {
            for (int j = 0; j < dims; j++)
                u[j] = hash_uniform(seed, SAMPLER_STREAM_BAYES_FILL, (uint64_t)t,
                                    (uint64_t)i * (uint64_t)dims + (uint64_t)j);
        }
    }
    int ml = b->ncentres > 0 ? b->tu->local_candidates : 0;
    /* Local steps in the continuous dimensions (categories kept), with a
     * key space of their own: (t, 2^32 + ...) never meets the fill above. */
    for (int i = 0; i < ml; i++) {
        double *u = b->cu + (size_t)(m + i) * (size_t)dims;
        int c = b->centres[i % b->ncentres];
        double scale = b->tu->local_scale;
        for (int l = (i / b->ncentres) % BAYES_LOCAL_LEVELS; l > 0; l--)
            scale *= 0.25;
        memcpy(u, b->u + (size_t)c * (size_t)dims, (size_t)dims * sizeof *u);
        for (int k = 0; k < b->nf; k++) {
            const Feature *f = &b->feat[k];
            if (!b->free[k])
                continue;
            uint64_t key = (UINT64_C(1) << 32) + (uint64_t)i * (uint64_t)dims + (uint64_t)f->cube;
            double v = u[f->cube] + scale * hash_normal(seed, (uint64_t)t, key);
            u[f->cube] = v < 0.0 ? 0.0 : (v > 1.0 ? 1.0 : v);
        }
    }
    return m + ml;
}

static int log_ei_at(Bayes *b, const double *u, const int64_t *gidx, double *value)
{
    double x[SPACE_MAX_PARAMS];
    features_of(b, u, gidx, x);
    if (b->multi)
        return acq_multi(b, x, 1, value);
    return acq_log_ei(b->gp, x, b->best, value, NULL);
}

/* The features refinement may move at cube point u: the continuous ones
 * of parameters active there. */
static void active_free(const Bayes *b, const double *u, bool *movable)
{
    bool active[SPACE_MAX_PARAMS];
    int sel[SPACE_MAX_PARAMS];
    if (b->space->conditional)
        space__active(b->space, u, NULL, active, sel);
    for (int k = 0; k < b->nf; k++)
        movable[k] = b->free[k] && (!b->space->conditional || active[b->feat[k].param]);
}

/* When u (snapped, of grid combination combo) is a config already seen,
 * u becomes the unseen config of highest acquisition among its neighbours
 * (one discrete coordinate moved to another of its values), else among
 * the m candidates snapped. Where every one of them was seen (a small
 * space nearly exhausted), u stays: a repeat beats no trial. 0, -1 out of
 * memory, 1 when the acquisition failed. */
/* v, when unseen and of higher log EI than *best, becomes alt. 0, or 1
 * when the acquisition failed. */
static int keep_unseen(Bayes *b, const double *v, const int64_t *gidx, double *best, double *alt)
{
    double x[SPACE_MAX_PARAMS], a;
    features_of(b, v, gidx, x);
    if (seen(b, x))
        return 0;
    if (log_ei_at(b, v, gidx, &a) != 0)
        return 1;
    if (a > *best) {
        *best = a;
        memcpy(alt, v, (size_t)b->dims * sizeof *v);
    }
    return 0;
}

static int unseen_alternative(Bayes *b, int m, const int64_t *gidx, int64_t combo, double *u)
{
    double x[SPACE_MAX_PARAMS], v[SPACE_MAX_PARAMS], alt[SPACE_MAX_PARAMS];
    features_of(b, u, gidx, x);
    if (!seen(b, x))
        return 0;
    double best = -INFINITY;
    int dims = b->dims;
    for (int j = 0; j < dims; j++)
        for (int l = 0; l < b->nlevels[j]; l++) {
            memcpy(v, u, (size_t)dims * sizeof *v);
            v[j] = b->levels[j][l];
            if (v[j] != u[j] && keep_unseen(b, v, gidx, &best, alt) != 0)
                return 1;
        }
    for (int i = 0; best == -INFINITY && i < m; i++) {
        memcpy(v, b->cu + (size_t)i * (size_t)dims, (size_t)dims * sizeof *v);
        if (snap(b, v, combo) != 0)
            return -1;
        if (keep_unseen(b, v, gidx, &best, alt) != 0)
            return 1;
    }
    if (best > -INFINITY)
        memcpy(u, alt, (size_t)dims * sizeof *u);
    return 0;
}

/* The GP's proposal for trial t: a new reference into *out. */
static int propose_gp(Bayes *b, int64_t t, json_t **out, RungError *err)
{
    const Space *s = b->space;
    int dims = b->dims, nf = b->nf;
    int64_t combo = t % s->grid_size;
    int64_t gidx[SPACE_MAX_PARAMS];
    /* The grid indices of trial t's combination, as sampler_config and
     * space_decode number it. */
    space__grid_indices(s, b->searcher->grid_order, combo, gidx);

    int m = make_candidates(b, t);
    for (int i = 0; i < m; i++)
        features_of(b, b->cu + (size_t)i * (size_t)dims, gidx, b->cx + (size_t)i * (size_t)nf);
    /* Only the best `starts` values are used: with one objective, the
     * others need not be computed exactly (acq_log_ei_top). */
    int starts = b->tu->refine_starts < m ? b->tu->refine_starts : m;
    if (starts > 0 && (b->multi ? acq_multi(b, b->cx, m, b->cv) != 0
                                : acq_log_ei_top(b->gp, b->cx, m, b->best, starts, b->cv) != 0))
        goto numeric;

    /* Refine the best few (ties to the lower index) and keep the best. */
    double best_u[SPACE_MAX_PARAMS], x[SPACE_MAX_PARAMS], u[SPACE_MAX_PARAMS];
    double best_v = -INFINITY;
    for (int r = 0; r < starts; r++) {
        int top = -1;
        for (int i = 0; i < m; i++)
            if (b->cv[i] > -INFINITY && (top < 0 || b->cv[i] > b->cv[top]))
                top = i;
        if (top < 0)
            break;
        b->cv[top] = -INFINITY;
        memcpy(x, b->cx + (size_t)top * (size_t)nf, (size_t)nf * sizeof *x);
        memcpy(u, b->cu + (size_t)top * (size_t)dims, (size_t)dims * sizeof *u);
        /* Only the start's active parameters move: an inactive one's
         * feature is imputed (features_of), and moving it away from that
         * value would raise the variance, and so the acquisition, of a
         * point no config can have. */
        bool movable[SPACE_MAX_PARAMS];
        active_free(b, u, movable);
        double v;
        if (b->multi ? refine_multi(b, t, r, movable, x, &v) != 0
                     : acq_refine(b->gp, b->best, movable, b->tu->refine_iter, x, &v) != 0)
            goto numeric;
        for (int k = 0; k < nf; k++)
            if (movable[k])
                u[b->feat[k].cube] = x[k];
        if (v > best_v) {
            best_v = v;
            memcpy(best_u, u, (size_t)dims * sizeof *u);
        }
    }
    if (best_v == -INFINITY)
        goto numeric;

    /* Round, then sweep the small discrete dimensions. */
    if (snap(b, best_u, combo) != 0)
        return oom(err);
    double cur;
    if (log_ei_at(b, best_u, gidx, &cur) != 0)
        goto numeric;
    for (int pass = 0; pass < BAYES_SWEEP_PASSES; pass++) {
        bool moved = false;
        for (int j = 0; j < dims; j++) {
            if (b->nlevels[j] == 0)
                continue;
            double keep = best_u[j];
            double choice = keep;
            for (int l = 0; l < b->nlevels[j]; l++) {
                double v;
                best_u[j] = b->levels[j][l];
                if (best_u[j] == keep)
                    continue;
                if (log_ei_at(b, best_u, gidx, &v) != 0)
                    goto numeric;
                if (v > cur) {
                    cur = v;
                    choice = best_u[j];
                }
            }
            best_u[j] = choice;
            moved = moved || choice != keep;
        }
        if (!moved)
            break;
    }
    if (b->seen != NULL) {
        int rc = unseen_alternative(b, m, gidx, combo, best_u);
        if (rc != 0)
            return rc < 0 ? oom(err)
                          : rung_error_set(err, RUNG_E_INTERNAL, NULL,
                                           "bayes: the acquisition function could "
                                           "not be evaluated for trial %lld",
                                           (long long)t);
    }
    *out = space_decode(s, best_u, combo, b->searcher->grid_order);
    return *out == NULL ? oom(err) : 0;
numeric:
    return rung_error_set(err, RUNG_E_INTERNAL, NULL,
                          "bayes: the acquisition function could not be evaluated for trial %lld",
                          (long long)t);
}

/* ---- the entry points ----------------------------------------------------- */

int bayes__propose_tuned(const Space *space, const SearcherSpec *searcher, int64_t first,
                         int64_t count, const BayesHistory *history, const BayesTuning *tuning,
                         json_t **out, RungError *err)
{
    if (first < 0 || count < 0 || count > BAYES_MAX_BATCH || first > SAMPLER_MAX_TRIALS ||
        (count > 0 && out == NULL) ||
        (history != NULL &&
         (history->n_obs < 0 || history->n_pending < 0 ||
          (history->n_obs > 0 && history->obs == NULL) ||
          (history->n_pending > 0 && history->pending == NULL) || history->n_objectives < 0 ||
          history->n_objectives > BAYES_MAX_OBJECTIVES || history->n_constraints < 0 ||
          history->n_constraints > BAYES_MAX_CONSTRAINTS)))
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, NULL,
                              "bayes: first and count must be >= 0 (count at most %d), with "
                              "arrays for the history's counts",
                              BAYES_MAX_BATCH);
    if (count == 0)
        return 0;
    gsl_set_error_handler_off();
    BayesHistory empty = {0};
    const BayesHistory *h = history != NULL ? history : &empty;
    for (int64_t k = 0; k < count; k++)
        out[k] = NULL;

    Bayes *b = calloc(1, sizeof *b);
    if (b == NULL)
        return oom(err);
    b->space = space;
    b->searcher = searcher;
    b->tu = tuning;
    b->nobj = h->n_objectives > 1 ? h->n_objectives : 1;
    b->ncon = h->n_constraints;
    b->multi = b->nobj > 1 || b->ncon > 0;
    build_layout(b);
    int rc = 0;
    /* The GP is only built when some trial of the batch needs it. */
    bool need_gp = first + count > searcher->n_initial && b->nf > 0 && b->dims > 0;
    if (need_gp) {
        rc = collect(b, h, err);
        if (rc == 0 && transform(b) != 0)
            rc = oom(err);
        if (rc == 0 && b->multi && prepare_multi(b) != 0)
            rc = oom(err);
        need_gp = rc == 0 && b->n >= BAYES_MIN_OBS;
    }
    int64_t pend_from = h->n_pending > BAYES_MAX_PENDING ? h->n_pending - BAYES_MAX_PENDING : 0;
    if (rc == 0 && need_gp && !searcher->noisy) {
        /* Every observation the GP holds, then the pending trials and the
         * batch's proposals as add_believer takes them. */
        b->capseen = b->n + (int)(h->n_pending - pend_from) + (int)count;
        b->seen = malloc((size_t)b->capseen * (size_t)b->nf * sizeof *b->seen);
        if (b->seen == NULL)
            rc = oom(err);
        for (int i = 0; rc == 0 && i < b->n; i++)
            see(b, b->x + (size_t)i * (size_t)b->nf);
    }
    if (rc == 0 && need_gp) {
        int extra = (int)(h->n_pending - pend_from) + (int)count;
        gp_blas_threads_for(b->n + extra);
        rc = build_gp(b, extra, err);
        if (rc == 0 && build_levels(b) != 0)
            rc = oom(err);
        for (int64_t i = pend_from; rc == 0 && i < h->n_pending; i++)
            rc = add_believer(b, h->pending[i], err);
        if (rc == 0) {
            b->cap = tuning->candidates + tuning->local_candidates;
            b->cu = malloc((size_t)b->cap * (size_t)b->dims * sizeof *b->cu);
            b->cx = malloc((size_t)b->cap * (size_t)b->nf * sizeof *b->cx);
            b->cv = malloc((size_t)b->cap * sizeof *b->cv);
            if (b->cu == NULL || b->cx == NULL || b->cv == NULL)
                rc = oom(err);
        }
    }
    for (int64_t k = 0; rc == 0 && k < count; k++) {
        int64_t t = first + k;
        if (t < searcher->n_initial || !need_gp) {
            out[k] = sampler_config(space, searcher, t);
            if (out[k] == NULL)
                rc = rung_error_set(err, RUNG_E_INTERNAL, NULL,
                                    "bayes: no quasi-random config for trial %lld", (long long)t);
        } else {
            rc = propose_gp(b, t, &out[k], err);
        }
        /* Each config of the batch is pending for the next. */
        if (rc == 0 && need_gp && k + 1 < count)
            rc = add_believer(b, out[k], err);
    }
    if (rc != 0)
        for (int64_t k = 0; k < count; k++) {
            json_decref(out[k]);
            out[k] = NULL;
        }
    bayes_close(b);
    free(b);
    return rc;
}

int bayes_propose(const Space *space, const SearcherSpec *searcher, int64_t first, int64_t count,
                  const BayesHistory *history, json_t **out, RungError *err)
{
    BayesTuning tuning;
    bayes__default_tuning(&tuning);
    return bayes__propose_tuned(space, searcher, first, count, history, &tuning, out, err);
}

/* ---- the model's mean, for rungd's surface (bayes.h) ---------------------- */

/* A standardized model value back in loss units: transform's steps undone. */
static double untransform(const Bayes *b, double y)
{
    double t = y * b->out_sd + b->out_mean;
    if (!b->out_boxcox) /* identity, or Box-Cox of equal losses: all at out_lo */
        return output_of(b) == BAYES_OUTPUT_BOXCOX ? (b->out_log ? exp(b->out_lo) : b->out_lo) : t;
    double lam = b->out_lambda, z;
    if (lam == 0.0) {
        z = exp(t);
    } else {
        double base = lam * t + 1.0;
        z = base > 0.0 ? pow(base, 1.0 / lam) : 0.0; /* below the transform's range */
    }
    double l = (z - b->tu->boxcox_delta) * b->out_spread + b->out_lo;
    return b->out_log ? exp(l) : l;
}

int bayes_predict(const Space *space, const SearcherSpec *searcher, const BayesHistory *history,
                  const json_t *base, const double *u, int m, double *loss, RungError *err)
{
    if (history == NULL || history->n_obs < 0 || (history->n_obs > 0 && history->obs == NULL) ||
        m < 0 || (m > 0 && (u == NULL || loss == NULL)))
        return rung_error_set(err, RUNG_E_INVALID_ARGUMENT, NULL,
                              "bayes_predict: a history and m >= 0 points are needed");
    gsl_set_error_handler_off();
    BayesTuning tuning;
    bayes__default_tuning(&tuning);
    Bayes *b = calloc(1, sizeof *b);
    if (b == NULL)
        return oom(err);
    b->space = space;
    b->searcher = searcher;
    b->tu = &tuning;
    b->nobj = 1; /* the loss alone: a surface shows one metric */
    build_layout(b);
    int rc = collect(b, history, err);
    if (rc == 0 && transform(b) != 0)
        rc = oom(err);
    if (rc == 0 && (b->n < BAYES_MIN_OBS || b->nf == 0))
        rc = rung_error_set(err, RUNG_E_INVALID_ARGUMENT, NULL,
                            "bayes_predict: %d usable observations of %d features: nothing to "
                            "model",
                            b->n, b->nf);
    /* OpenBLAS's thread count is process-wide and the proposer's to set
     * (gp_blas_threads_for): this may run on another thread beside it. */
    if (rc == 0)
        rc = build_gp(b, 0, err);
    /* The grid parameters' indices are base's (config_point's rule). */
    int64_t gidx[SPACE_MAX_PARAMS];
    double *scratch = NULL;
    if (rc == 0) {
        double *x = malloc((size_t)(b->nf > 0 ? b->nf : 1) * sizeof *x);
        scratch = malloc((size_t)(space->dims > 0 ? space->dims : 1) * sizeof *scratch);
        if (x == NULL || scratch == NULL || config_point(b, base, scratch, x) != 0)
            rc = x == NULL || scratch == NULL
                     ? oom(err)
                     : rung_error_set(err, RUNG_E_INVALID_ARGUMENT, "base",
                                      "bayes_predict: the base config does not fit the space");
        free(x);
    }
    for (int i = 0; rc == 0 && i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        gidx[i] = -1;
        if (p->kind != SPACE_GRID)
            continue;
        const json_t *v = json_object_get(base, p->name);
        int64_t k = 0;
        while (k < p->count && !json_equal(json_array_get(p->values, (size_t)k), v))
            k++;
        gidx[i] = k;
    }
    double *xs = NULL, *var = NULL;
    if (rc == 0 && m > 0) {
        xs = malloc((size_t)m * (size_t)b->nf * sizeof *xs);
        var = malloc((size_t)m * sizeof *var);
        if (xs == NULL || var == NULL)
            rc = oom(err);
    }
    for (int i = 0; rc == 0 && i < m; i++)
        features_of(b, u + (size_t)i * (size_t)b->dims, gidx, xs + (size_t)i * (size_t)b->nf);
    /* The mean alone: gp_predict_bound's, without the variance's O(n^2)
     * solve per point (10,000 cells of a GP of 2,000 points). */
    if (rc == 0 && m > 0 && gp_predict_bound(b->gp, xs, m, loss, var) != 0)
        rc = rung_error_set(err, RUNG_E_INTERNAL, NULL, "bayes_predict: the prediction failed");
    for (int i = 0; rc == 0 && i < m; i++)
        loss[i] = untransform(b, loss[i]);
    free(xs);
    free(var);
    free(scratch);
    bayes_close(b);
    free(b);
    return rc;
}
