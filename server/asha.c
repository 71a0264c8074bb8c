/* Early stopping; see asha.h for the rules.
 *
 * Structure: brackets hold rungs; a rung holds the values recorded there, in
 * arrival order (the promote variant ranks them, with their trial numbers)
 * and sorted (the ASHA cutoff is a quantile of them). Trials in flight are
 * found by number in a hash table (idmap.h) and keep which rungs they
 * recorded at (a bit set), the rung they are paused at, and, for the median
 * rule, every (time, value) they reported. A trial that ended for good is
 * forgotten (asha_trial_forget): what later decisions need of it stays,
 * its rung records in the rungs, and for the median rule its results from
 * grace_period on (AshaEnded), so that memory grows with the trials in
 * flight plus those records, not with a per-trial entry (docs/architecture.md,
 * "What lives in memory").
 *
 * Workload: one call per report, thousands per second. A rung's sorted array
 * makes the cutoff O(log n) to find and O(n) to insert (a memmove), fine up to
 * the 10^5 trials an experiment may hold; a restart's replay appends and
 * sorts a rung once, at its first use, rather than inserting each record in
 * place (O(n^2) memmoves: 7.8 of the 11.2 s a restart on 400,000 finished
 * asha trials took, bench/long_restart.py). The median rule is O(reports) per
 * report, as Ray's is. With several objectives, judging a record ranks its
 * whole rung (non-dominated sorting, O(n^2) at worst for n records there):
 * meant for the hundreds to thousands of trials such searches run.
 *
 * Files: this one holds the brackets, the rung records, the reports and
 * the promotions; asha_median.c the median rule; asha_points.c the ranking
 * of several objectives; asha_internal.h the types they share. */
#include "splitmix.h"
#include "asha_internal.h"

#include "grow.h"
#include "idmap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- rungs and brackets (pure functions of the params) ---- */

/* Ray's MAX_RUNGS = int(log(max_t/min_t)/log(rf) - s + 1), as written there,
 * so that the rounding of the logarithms matches too. */
static int rung_count(const AshaParams *p, int s)
{
    double n = log(p->max_t / p->grace_period) / log(p->rf) - s + 1;
    if (!(n >= 1))
        return 0;
    return n >= ASHA_MAX_RUNGS ? ASHA_MAX_RUNGS : (int)n;
}

int asha_max_brackets(const AshaParams *p)
{
    return rung_count(p, 0);
}

int asha_rungs(const AshaParams *p, int b, double milestones[ASHA_MAX_RUNGS])
{
    int n = rung_count(p, b);
    for (int k = 0; k < n; k++)
        milestones[k] = p->grace_period * pow(p->rf, k + b);
    return n;
}

/* splitmix64 (common/splitmix.h): a counter-based draw, so a trial's
 * bracket depends on nothing but (seed, number) and is the same after a
 * restart. */
static uint64_t mix64(uint64_t x)
{
    return rung_splitmix64(x);
}

static int bracket_count(const AshaParams *p)
{
    if (p->type == ASHA_HYPERBAND)
        return asha_max_brackets(p);
    int max = asha_max_brackets(p);
    return p->brackets < 1 ? 1 : (p->brackets > max ? max : p->brackets);
}

int asha_bracket(const AshaParams *p, int64_t trial)
{
    int nb = bracket_count(p);
    if (nb <= 1)
        return 0;
    /* Ray's on_trial_add: a softmax over rung counts. Or, budget_brackets,
     * Hyperband's own sizes (Li et al. 2018, Algorithm 1: the bracket of
     * s + 1 rungs out of s_max + 1 starts ceil((s_max + 1) / (s + 1) *
     * rf^s) trials), as Optuna's HyperbandPruner draws its brackets: less
     * to the most aggressive bracket than the softmax, more to those that
     * stop late (docs/schedulers.md, "Brackets"). */
    double w[ASHA_MAX_BRACKETS], total = 0;
    int max = rung_count(p, 0);
    for (int s = 0; s < nb; s++) {
        int rungs = rung_count(p, s); /* the paper's s + 1 */
        w[s] = p->budget_brackets ? ceil((double)max / rungs * pow(p->rf, rungs - 1))
                                  : exp((double)(rungs - max));
        total += w[s];
    }
    uint64_t h = mix64(mix64(p->seed ^ 0x617368612d627261ULL) + (uint64_t)trial);
    double u = (double)(h >> 11) * 0x1.0p-53 * total;
    for (int s = 0; s < nb; s++) {
        if (u < w[s])
            return s;
        u -= w[s];
    }
    return nb - 1;
}

/* ---- lifecycle ---- */

Asha *asha_new(const AshaParams *params)
{
    Asha *a = calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    a->p = *params;
    if (a->p.type == ASHA_ASHA || a->p.type == ASHA_HYPERBAND) {
        a->p.brackets = bracket_count(&a->p);
        a->brackets = calloc((size_t)a->p.brackets, sizeof *a->brackets);
        if (a->brackets == NULL) {
            free(a);
            return NULL;
        }
        for (int b = 0; b < a->p.brackets; b++) {
            double m[ASHA_MAX_RUNGS];
            a->brackets[b].n_rungs = asha_rungs(&a->p, b, m);
            for (int k = 0; k < a->brackets[b].n_rungs; k++)
                a->brackets[b].rungs[k].milestone = m[k];
        }
    }
    if (a->p.type != ASHA_ASHA)
        a->p.promote = false;
    return a;
}

void asha_free(Asha *a)
{
    if (a == NULL)
        return;
    for (int b = 0; a->brackets && b < a->p.brackets; b++) {
        for (int k = 0; k < a->brackets[b].n_rungs; k++) {
            free(a->brackets[b].rungs[k].recs);
            free(a->brackets[b].rungs[k].pts);
            free(a->brackets[b].rungs[k].sorted);
        }
    }
    free(a->brackets);
    for (int64_t i = 0; i < a->trials.cap; i++) {
        AshaTrial *t = a->trials.slots[i].ptr;
        if (a->trials.slots[i].id != 0) {
            free(t->times);
            free(t->values);
            free(t);
        }
    }
    idmap_free(&a->trials);
    for (int64_t i = 0; i < a->n_ended; i++)
        free(a->ended[i].tv);
    free(a->ended);
    free(a->paused);
    free(a);
}

const AshaParams *asha_params(const Asha *a)
{
    return &a->p;
}

int64_t asha_records(const Asha *a, AshaRecord *out, int64_t cap)
{
    if (a->brackets == NULL || a->p.objectives > 1)
        return 0;
    int64_t n = 0;
    for (int b = 0; b < a->p.brackets; b++)
        for (int k = 0; k < a->brackets[b].n_rungs; k++) {
            const AshaRung *r = &a->brackets[b].rungs[k];
            for (size_t i = 0; i < r->n; i++, n++)
                if (n < cap)
                    /* score is higher-is-better: the value, or its negation
                     * for min; the loss is lower-is-better either way. */
                    out[n] = (AshaRecord){r->recs[i].trial, r->milestone, -r->recs[i].score};
        }
    return n;
}

/* The trial's entry, or NULL when it has none (never seen, or forgotten). */
static AshaTrial *trial_find(const Asha *a, int64_t trial)
{
    return trial >= 0 ? idmap_get(&a->trials, trial + 1) : NULL;
}

static AshaTrial *trial_get(Asha *a, int64_t trial)
{
    AshaTrial *t = trial_find(a, trial);
    if (t == NULL) {
        t = calloc(1, sizeof *t);
        if (t == NULL)
            abort();
        t->bracket = a->brackets ? asha_bracket(&a->p, trial) : 0;
        t->paused = -1;
        idmap_put(&a->trials, trial + 1, t);
    }
    return t;
}

static double score_of(const Asha *a, double value)
{
    return a->p.maximize ? value : -value;
}

/* ---- rung records ---- */

/* numpy.percentile(values, q * 100) with the default linear method, as
 * numpy >= 1.22 computes it (virtual index (n - 1) * q, then its two-sided
 * lerp), so that values equal to the cutoff round as they do in Ray. */
static double numpy_quantile(const double *sorted, size_t n, double q)
{
    double vi = (double)(n - 1) * q;
    if (vi >= (double)(n - 1))
        return sorted[n - 1];
    if (vi < 0)
        return sorted[0];
    double lo = floor(vi);
    size_t i = (size_t)lo;
    double g = vi - lo, x = sorted[i], y = sorted[i + 1];
    double d = y - x;
    return g >= 0.5 ? y - d * (1 - g) : x + d * g;
}

/* Sorts the scores a replay appended. The same multiset sorted gives the
 * array that inserting them one by one did (equal scores are equal doubles;
 * 0 and -0 compare equal and give the same quantile comparisons). */
static void rung_sort(AshaRung *r)
{
    if (r->unsorted)
        qsort(r->sorted, r->n, sizeof *r->sorted, asha_cmp_double);
    r->unsorted = false;
}

/* Ray's cutoff: np.nanpercentile(recorded, (1 - 1/rf) * 100). */
static double cutoff(const Asha *a, AshaRung *r)
{
    double q = (1.0 - 1.0 / a->p.rf) * 100.0 / 100.0;
    rung_sort(r);
    return numpy_quantile(r->sorted, r->n, q);
}

/* Records score for trial; `append` (a replay) leaves the sorted scores for
 * rung_sort, else the score is inserted in place. */
static void rung_add(AshaRung *r, int64_t trial, double score, const AshaPoint *pt, bool append)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->recs = rung_realloc(r->recs, r->cap, sizeof *r->recs);
        r->sorted = rung_realloc(r->sorted, r->cap, sizeof *r->sorted);
        if (r->pts != NULL)
            r->pts = rung_realloc(r->pts, r->cap, sizeof *r->pts);
    }
    if (pt != NULL && r->pts == NULL) { /* the first point: the records before have none */
        r->pts = rung_realloc(NULL, r->cap, sizeof *r->pts);
        for (size_t i = 0; i < r->n; i++)
            r->pts[i] = (AshaPoint){{0}, true};
    }
    r->recs[r->n] = (AshaRec){trial, score};
    if (r->pts != NULL)
        r->pts[r->n] = pt ? *pt : (AshaPoint){{0}, true};
    if (append) {
        r->sorted[r->n++] = score;
        r->unsorted = true;
        return;
    }
    rung_sort(r);
    size_t lo = 0, hi = r->n; /* first index with sorted[i] > score */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->sorted[mid] <= score)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(&r->sorted[lo + 1], &r->sorted[lo], (r->n - lo) * sizeof *r->sorted);
    r->sorted[lo] = score;
    r->n++;
}

static void rung_remove(AshaRung *r, int64_t trial)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->recs[i].trial != trial)
            continue;
        double score = r->recs[i].score;
        memmove(&r->recs[i], &r->recs[i + 1], (r->n - i - 1) * sizeof *r->recs);
        if (r->pts != NULL)
            memmove(&r->pts[i], &r->pts[i + 1], (r->n - i - 1) * sizeof *r->pts);
        for (size_t j = 0; j < r->n; j++) {
            if (r->sorted[j] == score) {
                memmove(&r->sorted[j], &r->sorted[j + 1], (r->n - j - 1) * sizeof *r->sorted);
                break;
            }
        }
        r->n--;
        return;
    }
}

/* Whether rec a ranks above rec b: higher score, then lower trial number. */
static bool ranks_above(const AshaRec *x, const AshaRec *y)
{
    return x->score > y->score || (x->score == y->score && x->trial < y->trial);
}

/* The 0-based rank of trial's record in rung r, or -1 if it has none. */
static int64_t rung_rank(const AshaRung *r, int64_t trial)
{
    const AshaRec *mine = NULL;
    for (size_t i = 0; i < r->n && mine == NULL; i++)
        if (r->recs[i].trial == trial)
            mine = &r->recs[i];
    if (mine == NULL)
        return -1;
    int64_t rank = 0;
    for (size_t i = 0; i < r->n; i++)
        if (ranks_above(&r->recs[i], mine))
            rank++;
    return rank;
}

/* The highest rung of t's bracket at or below time that t has not recorded
 * at, or -1 (Ray's loop over the rungs from the top). */
static int rung_to_score(const Asha *a, const AshaTrial *t, double time)
{
    const AshaBracket *b = &a->brackets[t->bracket];
    for (int k = b->n_rungs - 1; k >= 0; k--)
        if (time >= b->rungs[k].milestone && !(t->recorded >> k & 1))
            return k;
    return -1;
}

static void paused_add(Asha *a, AshaTrial *t, int64_t trial, int k)
{
    t->paused = k;
    rung_grow((void **)&a->paused, &a->cap_paused, a->n_paused, sizeof *a->paused);
    a->paused[a->n_paused++] = trial;
}

static void paused_remove(Asha *a, AshaTrial *t, int64_t trial)
{
    t->paused = -1;
    for (int64_t i = 0; i < a->n_paused; i++) {
        if (a->paused[i] == trial) {
            a->paused[i] = a->paused[--a->n_paused];
            return;
        }
    }
}

/* ---- reports ---- */

/* A report; with several objectives pt is its point (value unused), else NULL. */
static AshaDecision report(Asha *a, int64_t trial, double time, bool has_value, double value,
                           const AshaPoint *pt, int *rung)
{
    *rung = -1;
    if (a->p.type == ASHA_FIFO || !has_value)
        return ASHA_CONTINUE;
    if (a->p.type == ASHA_MEDIAN)
        return asha_median_report(a, trial_get(a, trial), trial, time, value);
    if (time >= a->p.max_t && !a->p.open_end)
        return ASHA_COMPLETE;
    AshaTrial *t = trial_get(a, trial);
    if (t->paused >= 0)
        paused_remove(a, t, trial);
    int k = rung_to_score(a, t, time);
    if (k < 0)
        return ASHA_CONTINUE;
    AshaRung *r = &a->brackets[t->bracket].rungs[k];
    double score = score_of(a, value);
    AshaDecision d = ASHA_CONTINUE;
    if (!a->p.promote && pt == NULL && r->n > 0 && score < cutoff(a, r))
        d = ASHA_STOP;
    rung_add(r, trial, score, pt, false);
    if (pt != NULL && !asha_points_continue(a, r, r->n - 1))
        d = ASHA_STOP;
    t->recorded |= (uint64_t)1 << k;
    *rung = k;
    if (a->p.promote) {
        /* The paper's rule: go on only from the top floor(n/rf) of the rung. */
        int64_t top = (int64_t)floor((double)r->n / a->p.rf);
        if (rung_rank(r, trial) >= top) {
            paused_add(a, t, trial, k);
            d = ASHA_PAUSE;
        }
    }
    return d;
}

AshaDecision asha_report(Asha *a, int64_t trial, double time, bool has_value, double value,
                         int *rung)
{
    return report(a, trial, time, has_value, value, NULL, rung);
}

/* With objectives < 2, or under median, a point stands for its first
 * objective's value; NULL stays NULL. */
static const AshaPoint *point_use(const Asha *a, const AshaPoint *pt, double *value)
{
    *value = pt == NULL ? 0 : a->p.maximize ? -pt->loss[0] : pt->loss[0];
    return a->p.objectives >= 2 && a->p.type != ASHA_MEDIAN ? pt : NULL;
}

AshaDecision asha_report_point(Asha *a, int64_t trial, double time, const AshaPoint *pt, int *rung)
{
    double value;
    const AshaPoint *use = point_use(a, pt, &value);
    return report(a, trial, time, pt != NULL, value, use, rung);
}

static void replay(Asha *a, int64_t trial, double time, bool has_value, double value,
                   const AshaPoint *pt)
{
    if (a->p.type == ASHA_FIFO || !has_value)
        return;
    AshaTrial *t = trial_get(a, trial);
    if (a->p.type == ASHA_MEDIAN) {
        asha_result_add(t, time, value);
        return;
    }
    int k = time >= a->p.max_t && !a->p.open_end ? -1 : rung_to_score(a, t, time);
    if (k < 0)
        return;
    rung_add(&a->brackets[t->bracket].rungs[k], trial, score_of(a, value), pt, true);
    t->recorded |= (uint64_t)1 << k;
}

void asha_replay(Asha *a, int64_t trial, double time, bool has_value, double value)
{
    replay(a, trial, time, has_value, value, NULL);
}

void asha_replay_point(Asha *a, int64_t trial, double time, const AshaPoint *pt)
{
    double value;
    const AshaPoint *use = point_use(a, pt, &value);
    replay(a, trial, time, pt != NULL, value, use);
}

static void trial_end(Asha *a, int64_t trial, double time, bool has_value, double value,
                      const AshaPoint *pt)
{
    if (a->p.type == ASHA_FIFO || !has_value)
        return;
    AshaTrial *t = trial_get(a, trial);
    if (a->p.type == ASHA_MEDIAN) {
        asha_result_add(t, time, value);
        return;
    }
    if (t->paused >= 0)
        paused_remove(a, t, trial);
    int k = rung_to_score(a, t, time);
    if (k < 0)
        return;
    rung_add(&a->brackets[t->bracket].rungs[k], trial, score_of(a, value), pt, false);
    t->recorded |= (uint64_t)1 << k;
}

void asha_trial_end(Asha *a, int64_t trial, double time, bool has_value, double value)
{
    trial_end(a, trial, time, has_value, value, NULL);
}

void asha_trial_end_point(Asha *a, int64_t trial, double time, const AshaPoint *pt)
{
    double value;
    const AshaPoint *use = point_use(a, pt, &value);
    trial_end(a, trial, time, pt != NULL, value, use);
}

void asha_trial_reset(Asha *a, int64_t trial)
{
    if (a->p.type == ASHA_FIFO)
        return;
    AshaTrial *t = trial_find(a, trial);
    if (t == NULL) { /* forgotten (or never seen): drop what it left */
        for (int64_t i = 0; i < a->n_ended; i++) {
            if (a->ended[i].trial == trial) {
                free(a->ended[i].tv);
                memmove(&a->ended[i], &a->ended[i + 1],
                        (size_t)(a->n_ended - i - 1) * sizeof *a->ended);
                a->n_ended--;
                break;
            }
        }
        if (a->brackets != NULL && trial >= 0) {
            AshaBracket *b = &a->brackets[asha_bracket(&a->p, trial)];
            for (int k = 0; k < b->n_rungs; k++)
                rung_remove(&b->rungs[k], trial);
        }
        return;
    }
    t->n = 0;
    if (t->paused >= 0)
        paused_remove(a, t, trial);
    for (int k = 0; a->brackets && k < a->brackets[t->bracket].n_rungs; k++)
        if (t->recorded >> k & 1)
            rung_remove(&a->brackets[t->bracket].rungs[k], trial);
    t->recorded = 0;
}

/* ---- promotion ---- */

void asha_trial_paused(Asha *a, int64_t trial, int rung)
{
    if (!a->p.promote)
        return;
    AshaTrial *t = trial_get(a, trial);
    if (t->paused >= 0 || t->recorded == 0)
        return;
    int k = rung;
    if (k < 0 || k >= ASHA_MAX_RUNGS || !(t->recorded >> k & 1)) {
        k = 63;
        while (!(t->recorded >> k & 1))
            k--;
    }
    paused_add(a, t, trial, k);
}

int asha_rung_index(const Asha *a, int64_t trial, double milestone)
{
    if (a->brackets == NULL)
        return -1;
    const AshaBracket *b = &a->brackets[asha_bracket(&a->p, trial)];
    for (int k = 0; k < b->n_rungs; k++)
        if (b->rungs[k].milestone == milestone)
            return k;
    return -1;
}

int asha_paused_rung(const Asha *a, int64_t trial)
{
    const AshaTrial *t = trial_find(a, trial);
    return t != NULL ? t->paused : -1;
}

int64_t asha_trials_held(const Asha *a)
{
    return a->trials.len;
}

void asha_trial_forget(Asha *a, int64_t trial)
{
    AshaTrial *t = trial_find(a, trial);
    if (t == NULL)
        return;
    if (t->paused >= 0)
        paused_remove(a, t, trial);
    /* median: keep the results a later running mean can read. */
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->times[i] >= a->p.grace_period;
    if (a->p.type == ASHA_MEDIAN && n > 0) {
        AshaEnded e = {trial, t->times[t->n - 1], malloc(2 * n * sizeof(double)), n};
        if (e.tv == NULL)
            abort();
        size_t k = 0;
        for (size_t i = 0; i < t->n; i++) {
            if (t->times[i] >= a->p.grace_period) {
                e.tv[k] = t->times[i];
                e.tv[n + k] = t->values[i];
                k++;
            }
        }
        rung_grow((void **)&a->ended, &a->cap_ended, a->n_ended, sizeof *a->ended);
        a->ended[a->n_ended++] = e;
    }
    idmap_remove(&a->trials, trial + 1);
    free(t->times);
    free(t->values);
    free(t);
}

typedef struct AshaCand {
    int64_t trial;
    double milestone;
    double score;
} AshaCand;

/* Promotion order: highest rung first, then best score, then lowest number. */
static int cmp_cand(const void *x, const void *y)
{
    const AshaCand *a = x, *b = y;
    if (a->milestone != b->milestone)
        return a->milestone > b->milestone ? -1 : 1;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->trial > b->trial) - (a->trial < b->trial);
}

/* The paused trials whose rank at their rung is below limit(n), sorted. */
static int64_t candidates(const Asha *a, bool ceil_rule, AshaCand **out)
{
    AshaCand *c = malloc((size_t)(a->n_paused ? a->n_paused : 1) * sizeof *c);
    if (c == NULL)
        abort();
    int64_t n = 0;
    for (int64_t i = 0; i < a->n_paused; i++) {
        int64_t trial = a->paused[i];
        const AshaTrial *t = trial_find(a, trial);
        const AshaRung *r = &a->brackets[t->bracket].rungs[t->paused];
        double share = (double)r->n / a->p.rf;
        int64_t top = (int64_t)(ceil_rule ? ceil(share) : floor(share));
        int64_t rank = rung_rank(r, trial);
        if (rank >= 0 && rank < top) {
            double score = 0;
            for (size_t j = 0; j < r->n; j++)
                if (r->recs[j].trial == trial)
                    score = r->recs[j].score;
            c[n++] = (AshaCand){trial, r->milestone, score};
        }
    }
    qsort(c, (size_t)n, sizeof *c, cmp_cand);
    *out = c;
    return n;
}

int64_t asha_promotions(Asha *a, int64_t *trials, int64_t cap)
{
    if (!a->p.promote || a->n_paused == 0)
        return 0;
    AshaCand *c;
    int64_t n = candidates(a, false, &c);
    if (n > cap)
        n = cap;
    for (int64_t i = 0; i < n; i++) {
        trials[i] = c[i].trial;
        paused_remove(a, trial_find(a, c[i].trial), c[i].trial);
    }
    free(c);
    return n;
}

int64_t asha_endgame(Asha *a)
{
    if (!a->p.promote || a->n_paused == 0)
        return -1;
    AshaCand *c;
    int64_t n = candidates(a, true, &c);
    int64_t trial = -1;
    if (n > 0) {
        trial = c[0].trial;
        paused_remove(a, trial_find(a, trial), trial);
    }
    free(c);
    return trial;
}
