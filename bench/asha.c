/* asha_bench: early stopping on the lc4 learning-curve benchmark
 * (bench/README.md, section 3).
 *
 * lc4: a config x in [0, 1]^4 has the final loss
 *   f(x) = 0.05 + 0.5(x0 - 0.7)^2 + 0.3(x1 - 0.3)^2 + 0.2(x2 - 0.5)^2 + 0.1(x3 - 0.6)^2,
 * the amplitude a(x) = 0.3 + 0.7 x3 and the time constant b(x) = 1 + 20 x0, and
 * reports loss_t = f(x) + a(x) exp(-t / b(x)) + 0.01 eps_t at t = 1 .. 81.
 * Good x0 converges slowly, so early rungs favour fast, worse configs.
 *
 * Trial n of seed s draws everything from its own splitmix64 stream, which
 * starts at mix(mix(s + LC4_SALT) + n) (mix = the splitmix64 finalizer): the
 * four coordinates of x first (uniform = top 53 bits / 2^53), then eps_1 ..
 * eps_81 by Box-Muller from pairs (u1, u2): sqrt(-2 ln(1 - u1)) times
 * cos(2 pi u2), then sin(2 pi u2). A trial's curve thus depends on (seed,
 * number) only and is the same in every arm; --dump-curves writes them all
 * so that bench/optuna_asha.py replays the very same numbers.
 *
 * g* = min over x of the noise-free final loss f(x) + a(x) exp(-81 / b(x)),
 * found numerically: x1 and x2 enter only through their own squares (zero at
 * 0.3 and 0.5), so a grid over (x0, x3) and repeated zooms around its best
 * point give it to machine precision.
 *
 * Each arm drives server/asha.h as rungd's sched_asha.c does, in a discrete-event
 * simulation with W workers. Every step of trial n takes d_n time units,
 * d_n uniform on {1 .. J} (--jitter J, default 4), drawn from the trial's
 * stream after its noise: trials run at different speeds and overtake each
 * other, as they do on real workers. (With J = 1, trials reach each time in
 * number order whatever W is, so that fifo, asha, hyperband and median give
 * the same figures at any W; on lc4 asha-promote did too, at W = 1 and 8.)
 * At time 0 and after each event, idle workers, in worker order, take the
 * front of the queue of promoted trials, else the next new trial (numbers
 * 0 .. N-1 in order). At each time T, each worker, in worker order, whose
 * step ends at T reports its trial's next step t; asha_report(trial, t,
 * loss_t) decides:
 *   CONTINUE  the worker goes on (at t = 81 under fifo and median, whose
 *             rules never complete a trial, the trainer ends: completed);
 *   STOP      ends stopped, asha_trial_end;
 *   COMPLETE  ends completed, asha_trial_end;
 *   PAUSE     the run ends; the trial waits to be promoted and then resumes
 *             at t + 1 from its checkpoint on whichever worker takes it.
 * After every report asha_promotions' trials go to the front of the queue in
 * their order (sched_asha.c's promote_ready). When no trial runs, none is queued,
 * no new one is left and some are paused, asha_endgame promotes one, or,
 * answering -1, the paused trials end as stopped (sched_asha.c's endgame).
 *
 * Figures per (arm, W, seed): budget = steps reported; the trial a user
 * would pick = the lowest reported loss at t = 81 among the trials that
 * reported t = 81 ("completed", even where a rule stopped one at 81); true
 * regret = its noise-free final loss - g*; and the no-stopping arm's regret
 * at the same budget: the same pick among the first floor(budget / 81)
 * trials. The table gives the mean budget, the median and quartiles of the
 * regret over seeds (linear interpolation between order statistics, as
 * numpy's default); --json adds one JSON object per (arm, W) with the
 * per-seed figures, which bench/asha.sh sets beside Optuna's.
 *
 * Equal budget. The arms above all run the same --trials trials per seed
 * (100), which does not give them the same budget: Ray's rule (asha) stops
 * a trial only below the (1 - 1/rf) quantile of its rung, so more trials
 * pass the early rungs than under Optuna's SuccessiveHalvingPruner, which
 * keeps the top floor(n/rf), and asha spends more steps than optuna-sh
 * (about 700 against 520 on lc4), while asha-promote spends fewer than asha
 * (about 490). Nor is a count of trials what the paper's ASHA is for: it
 * runs for a budget, sampling new configs as long as the budget lasts. So
 * two more arms run, per (W, seed), on the first N of --max-trials curves
 * (400; trial n's curve does not depend on the count, so the first --trials
 * are the very curves above), N the largest whose budget is at most a cap:
 *   rung-asha@sh-budget            asha; the cap is optuna-sh's budget on
 *                                  that seed and W as Optuna measured it
 *                                  (--budget-file: "W seed budget" lines,
 *                                  from bench/optuna_asha.py --sh-budgets);
 *   rung-asha-promote@asha-budget  asha-promote; the cap is asha's budget
 *                                  on the first --trials trials.
 * Budgets are not monotone in N, so N comes from a search that a lower
 * bound keeps short (equal_budget); --full-scan checks it against runs of
 * every N. These rows add N and the cap (mean over seeds) and, in JSON,
 * both per seed.
 *
 * The simulation checks what asha.c answers against asha.h's contract (a
 * pause only with promote, promotions only of paused trials, every trial
 * ended at the end); a breach is printed and makes the exit status 1. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "asha.h"
#include "lc4.h"

/* The benchmark: 100 trials x 10 seeds, 81 steps, W = 1 and 8. */
/* Caps on the command line: they only keep a typo from asking for hours or
 * gigabytes (a curve is 700 bytes; the median rule is O(reports) per report). */
#define AB_MAX_SEEDS 1000
#define AB_MAX_TRIALS 10000
/* Curves per seed for the equal-budget arms: enough that rung-asha-promote
 * can spend rung-asha's budget on 100 trials (it needs about 140). */
#define AB_DEFAULT_MAX_TRIALS 400
#define AB_MAX_WORKERS 256
#define AB_MAX_WORKER_COUNTS 8 /* entries in --workers */
/* Largest step duration of --jitter: 1 .. J time units per step. */
#define AB_MAX_JITTER 100
/* Random points for the "nothing below g*" self-check. */
#define AB_CHECK_POINTS 200000

/* One trial's curve. */
typedef struct Curve {
    double x[LC4_DIMS];         /* the config, each in [0, 1) */
    double final;               /* noise-free loss at t = 81 */
    double loss[LC4_STEPS + 1]; /* loss[t], t = 1 .. 81, with noise; loss[0] unused */
    int dur;                    /* time units per step, 1 .. jitter */
} Curve;

/* ---- lc4 (bench/lc4.c) ---- */

static void lc4_curve(int seed, int trial, int jitter, Curve *c)
{
    double eps[LC4_STEPS + 1];
    c->dur = lc4_draw(seed, trial, jitter, c->x, eps);
    c->final = lc4_clean(c->x, LC4_STEPS);
    c->loss[0] = NAN;
    for (int t = 1; t <= LC4_STEPS; t++)
        c->loss[t] = lc4_clean(c->x, t) + LC4_NOISE * eps[t];
}

/* g* near bench/README.md's 0.0530, nothing below it at random points, and a
 * curve that is the formula plus noise of the right size. A wrong lc4 would
 * make every figure meaningless. */
static bool self_check(double gstar)
{
    bool ok = true;
    if (!(fabs(gstar - 0.0530) < 5e-4)) {
        fprintf(stderr, "asha_bench: g* = %.6f, not about 0.0530\n", gstar);
        ok = false;
    }
    uint64_t state = 12345;
    for (int i = 0; i < AB_CHECK_POINTS; i++) {
        double x[LC4_DIMS];
        for (int d = 0; d < LC4_DIMS; d++)
            x[d] = lc4_uniform(&state);
        if (lc4_clean(x, LC4_STEPS) < gstar - 1e-12) {
            fprintf(stderr, "asha_bench: a point below g* = %.9f\n", gstar);
            ok = false;
            break;
        }
    }
    /* At x = (0.7, 0.3, 0.5, 0.6): f = 0.05, a = 0.72, b = 15. */
    const double x[LC4_DIMS] = {0.7, 0.3, 0.5, 0.6};
    if (fabs(lc4_clean(x, 15) - (0.05 + 0.72 * exp(-1.0))) > 1e-15) {
        fprintf(stderr, "asha_bench: lc4 at the hand-computed point is wrong\n");
        ok = false;
    }
    Curve c;
    double sum = 0, sq = 0;
    for (int n = 0; n < 100; n++) {
        lc4_curve(0, n, 1, &c);
        for (int t = 1; t <= LC4_STEPS; t++) {
            double e = (c.loss[t] - lc4_clean(c.x, t)) / LC4_NOISE;
            sum += e;
            sq += e * e;
        }
    }
    double m = sum / 8100.0, sd = sqrt(sq / 8100.0 - m * m);
    if (fabs(m) > 0.05 || fabs(sd - 1.0) > 0.05) {
        fprintf(stderr, "asha_bench: noise mean %.3f sd %.3f, not about N(0, 1)\n", m, sd);
        ok = false;
    }
    return ok;
}

/* ---- arms ---- */

typedef struct Arm {
    const char *name;
    AshaParams params; /* seed set per run */
} Arm;

static const Arm ARMS[] = {
    {"fifo", {.type = ASHA_FIFO, .max_t = LC4_STEPS}},
    {"asha", {.type = ASHA_ASHA, .max_t = LC4_STEPS, .grace_period = 1, .rf = 3, .brackets = 1}},
    {"asha-promote",
     {.type = ASHA_ASHA,
      .max_t = LC4_STEPS,
      .grace_period = 1,
      .rf = 3,
      .brackets = 1,
      .promote = true}},
    {"hyperband", {.type = ASHA_HYPERBAND, .max_t = LC4_STEPS, .grace_period = 1, .rf = 3}},
    {"median", {.type = ASHA_MEDIAN, .max_t = LC4_STEPS, .grace_period = 1, .min_samples = 3}},
};
#define AB_NARMS ((int)(sizeof ARMS / sizeof ARMS[0]))

/* ---- the simulation ---- */

typedef enum { TS_NEW, TS_RUNNING, TS_QUEUED, TS_PAUSED, TS_ENDED } TrialState;

typedef struct SimTrial {
    TrialState state;
    int t; /* last step reported, 0 .. LC4_STEPS */
} SimTrial;

/* What one (arm, W, seed) run gives. */
typedef struct SimResult {
    int64_t steps;  /* budget: steps reported */
    int completed;  /* trials that reported t = 81 */
    int stopped;    /* trials that ended before t = 81 */
    int promotions; /* asha_promotions' trials */
    int endgame;    /* asha_endgame's trials */
    int pick;       /* the trial a user picks, or -1 */
    double regret;  /* its true regret, NAN without a completed trial */
    double nostop;  /* no stopping, same budget */
    int breaches;   /* answers outside asha.h's contract */
    bool aborted;   /* steps passed the run's step cap: only steps is meaningful */
} SimResult;

typedef struct Sim {
    Asha *asha;
    bool promote;
    const Curve *curves; /* borrowed: n of them */
    int n;
    SimTrial *trials;
    int64_t *queue; /* promoted trials, a ring of n */
    int q_head, q_len;
    int next_new;
    int workers;
    int64_t running[AB_MAX_WORKERS]; /* trial, or -1 when idle */
    int64_t due[AB_MAX_WORKERS];     /* time its current step ends */
    int busy;
    int n_paused;
    int64_t *buf;         /* asha_promotions' answer, n */
    int64_t *first_steps; /* borrowed, n or NULL: steps reported when trial i started */
    SimResult *r;
} Sim;

static void breach(Sim *s, const char *what, int64_t trial)
{
    if (s->r->breaches++ < 5)
        fprintf(stderr, "asha_bench: asha.c breach: %s (trial %lld)\n", what, (long long)trial);
}

static void queue_push_front(Sim *s, int64_t trial)
{
    s->q_head = (s->q_head + s->n - 1) % s->n;
    s->queue[s->q_head] = trial;
    s->q_len++;
    s->trials[trial].state = TS_QUEUED;
}

static int64_t queue_pop(Sim *s)
{
    int64_t trial = s->queue[s->q_head];
    s->q_head = (s->q_head + 1) % s->n;
    s->q_len--;
    return trial;
}

/* Idle workers, in worker order, take the queue's front, else a new trial. */
static void dispatch(Sim *s, int64_t now)
{
    for (int w = 0; w < s->workers; w++) {
        if (s->running[w] >= 0)
            continue;
        int64_t trial;
        if (s->q_len > 0)
            trial = queue_pop(s);
        else if (s->next_new < s->n)
            trial = s->next_new++;
        else
            return;
        if (s->first_steps != NULL && s->trials[trial].state == TS_NEW)
            s->first_steps[trial] = s->r->steps;
        s->trials[trial].state = TS_RUNNING;
        s->running[w] = trial;
        s->due[w] = now + s->curves[trial].dur;
        s->busy++;
    }
}

static void end_trial(Sim *s, int64_t trial, bool to_scheduler)
{
    SimTrial *st = &s->trials[trial];
    if (to_scheduler)
        asha_trial_end(s->asha, trial, st->t, true, s->curves[trial].loss[st->t]);
    st->state = TS_ENDED;
    if (st->t >= LC4_STEPS)
        s->r->completed++;
    else
        s->r->stopped++;
}

/* Promotions after a report, then the end game when nothing else can run. */
static void after_report(Sim *s)
{
    if (s->promote) {
        int64_t n = asha_promotions(s->asha, s->buf, s->n);
        /* Pushing to the front in reverse keeps their order (sched_asha.c). */
        for (int64_t i = n - 1; i >= 0; i--) {
            int64_t trial = s->buf[i];
            if (trial < 0 || trial >= s->n || s->trials[trial].state != TS_PAUSED) {
                breach(s, "asha_promotions named a trial that is not paused", trial);
                continue;
            }
            s->n_paused--;
            s->r->promotions++;
            queue_push_front(s, trial);
        }
    }
    if (s->busy > 0 || s->q_len > 0 || s->next_new < s->n || s->n_paused == 0)
        return;
    int64_t trial = asha_endgame(s->asha);
    if (trial >= 0) {
        if (trial >= s->n || s->trials[trial].state != TS_PAUSED) {
            breach(s, "asha_endgame named a trial that is not paused", trial);
        } else {
            s->n_paused--;
            s->r->endgame++;
            queue_push_front(s, trial);
            return;
        }
    }
    for (int64_t i = 0; i < s->n; i++) {
        if (s->trials[i].state == TS_PAUSED)
            end_trial(s, i, true);
    }
    s->n_paused = 0;
}

/* Worker w's trial reports its next step at time now. */
static void report(Sim *s, int w, int64_t now)
{
    int64_t trial = s->running[w];
    SimTrial *st = &s->trials[trial];
    int t = ++st->t;
    s->r->steps++;
    int rung;
    AshaDecision d = asha_report(s->asha, trial, t, true, s->curves[trial].loss[t], &rung);
    if (d == ASHA_PAUSE && !s->promote) {
        breach(s, "ASHA_PAUSE without promote", trial);
        d = ASHA_STOP;
    }
    if (d == ASHA_COMPLETE && t < LC4_STEPS)
        breach(s, "ASHA_COMPLETE before max_t", trial);
    if (d == ASHA_CONTINUE && t >= LC4_STEPS)
        d = ASHA_COMPLETE; /* fifo and median: the trainer has no step 82 */
    if (d == ASHA_CONTINUE) {
        s->due[w] = now + s->curves[trial].dur;
    } else {
        s->running[w] = -1;
        s->busy--;
        if (d == ASHA_PAUSE) {
            st->state = TS_PAUSED;
            s->n_paused++;
        } else {
            end_trial(s, trial, true);
        }
    }
    after_report(s);
    dispatch(s, now);
}

/* The trial a user picks among those of first[0 .. n-1] that reached t = 81:
 * the lowest reported loss there, then the lowest number; -1 if none. */
static int pick_best(const Curve *curves, const bool *reached, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++) {
        if (reached != NULL && !reached[i])
            continue;
        if (best < 0 || curves[i].loss[LC4_STEPS] < curves[best].loss[LC4_STEPS])
            best = i;
    }
    return best;
}

/* One run of arm on curves[0 .. n-1]; 0, or -1 when out of memory. With
 * step_cap >= 0 the run stops as soon as more than step_cap steps have been
 * reported, with r->aborted set and only r->steps filled in. first_steps, if
 * not NULL, gets for each trial i the steps reported when it started (the
 * moment a run on the first i trials and this one part ways), INT64_MAX for
 * a trial that never started. */
static int simulate(const Arm *arm, const Curve *curves, int n, int workers, int seed, double gstar,
                    int64_t step_cap, int64_t *first_steps, SimResult *r)
{
    memset(r, 0, sizeof *r);
    AshaParams p = arm->params;
    p.seed = (uint64_t)seed;
    Sim s = {.curves = curves,
             .n = n,
             .workers = workers,
             .r = r,
             .promote = p.promote,
             .first_steps = first_steps};
    if (first_steps != NULL)
        for (int i = 0; i < n; i++)
            first_steps[i] = INT64_MAX;
    s.asha = asha_new(&p);
    s.trials = calloc((size_t)n, sizeof *s.trials);
    s.queue = calloc((size_t)n, sizeof *s.queue);
    s.buf = calloc((size_t)n, sizeof *s.buf);
    bool *reached = calloc((size_t)n, sizeof *reached);
    int rc = -1;
    if (s.asha == NULL || s.trials == NULL || s.queue == NULL || s.buf == NULL || reached == NULL)
        goto out;
    s.promote = asha_params(s.asha)->promote;
    for (int w = 0; w < workers; w++)
        s.running[w] = -1;

    dispatch(&s, 0);
    /* Every report moves a trial one step on, so n * 81 reports end it all;
     * the bound on time only guards against a scheduler that never lets go. */
    int64_t horizon = (int64_t)n * LC4_STEPS * AB_MAX_JITTER + 1;
    for (int64_t now = 1; s.busy > 0 && now <= horizon; now++) {
        for (int w = 0; w < workers; w++) {
            if (s.running[w] >= 0 && s.due[w] == now)
                report(&s, w, now);
        }
        if (step_cap >= 0 && r->steps > step_cap) {
            r->aborted = true;
            rc = 0;
            goto out;
        }
    }
    for (int i = 0; i < n; i++) {
        if (s.trials[i].state != TS_ENDED)
            breach(&s, "trial not ended when the simulation stopped", i);
        reached[i] = s.trials[i].t >= LC4_STEPS;
    }
    r->pick = pick_best(curves, reached, n);
    r->regret = r->pick >= 0 ? curves[r->pick].final - gstar : NAN;
    int64_t first = r->steps / LC4_STEPS;
    int ns = pick_best(curves, NULL, first < n ? (int)first : n);
    r->nostop = ns >= 0 ? curves[ns].final - gstar : NAN;
    rc = 0;
out:
    free(reached);
    free(s.buf);
    free(s.queue);
    free(s.trials);
    asha_free(s.asha);
    return rc;
}

/* ---- equal budget ---- */

/* An arm run on as many trials as fit a cap on the budget. */
typedef struct EqResult {
    SimResult r;  /* the run on the first n trials; regret NaN when n = 0 */
    int n;        /* trials run: the largest N <= max_n that fits, or 0 */
    int runs;     /* simulations it took to find n */
    int breaches; /* in all of them */
} EqResult;

/* The largest N in 1 .. max_n such that arm on curves[0 .. N-1] reports at
 * most cap steps, and that run. A run on the first N trials and one on the
 * first max_n are the same run until trial N starts in the longer one (every
 * draw is keyed by trial number, and before that moment the shorter run has
 * not yet found itself out of new trials), so the steps reported by then,
 * first[N], are a lower bound on N's budget, and first[] grows with N. One
 * run on max_n trials, stopped once past the cap, thus bounds N from above;
 * runs from that bound down find it. Budgets are not monotone in N (with
 * W > 1 or promote one more trial changes who runs when and what the end
 * game does), hence a search down rather than a bisection. With full_scan
 * the answer is checked against runs of every N from max_n down. Returns 0,
 * -1 when out of memory, 1 when the full scan disagrees. */
static int equal_budget(const Arm *arm, const Curve *curves, int max_n, int workers, int seed,
                        double gstar, int64_t cap, bool full_scan, EqResult *out)
{
    memset(out, 0, sizeof *out);
    out->r.pick = -1;
    out->r.regret = out->r.nostop = NAN;
    int64_t *first = malloc((size_t)max_n * sizeof *first);
    if (first == NULL)
        return -1;
    int rc = -1;
    SimResult r;
    if (simulate(arm, curves, max_n, workers, seed, gstar, cap, first, &r) != 0)
        goto out;
    out->runs++;
    out->breaches += r.breaches;
    if (!r.aborted) {
        out->n = max_n;
        out->r = r;
    } else {
        int hi = max_n - 1;
        while (hi >= 1 && first[hi] > cap)
            hi--;
        for (int k = hi; k >= 1 && out->n == 0; k--) {
            if (simulate(arm, curves, k, workers, seed, gstar, cap, NULL, &r) != 0)
                goto out;
            out->runs++;
            out->breaches += r.breaches;
            if (!r.aborted) {
                out->n = k;
                out->r = r;
            }
        }
    }
    rc = 0;
    if (full_scan) {
        int brute = 0;
        for (int k = max_n; k >= 1 && brute == 0; k--) {
            if (simulate(arm, curves, k, workers, seed, gstar, cap, NULL, &r) != 0) {
                rc = -1;
                goto out;
            }
            if (!r.aborted)
                brute = k;
        }
        if (brute != out->n) {
            fprintf(stderr,
                    "asha_bench: %s, W = %d, seed %d, cap %lld: the search found N = %d, "
                    "the full scan N = %d\n",
                    arm->name, workers, seed, (long long)cap, out->n, brute);
            rc = 1;
        }
    }
out:
    free(first);
    return rc;
}

/* ---- statistics and output ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    /* NaN (no completed trial) sorts last: the worst regret. */
    if (isnan(x) || isnan(y))
        return isnan(x) - isnan(y);
    return (x > y) - (x < y);
}

/* Quantile p of v[0..n-1] with linear interpolation between order statistics
 * (numpy's default), as bench/asha.sh computes it; sorts v in place. */
static double quantile(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double pos = p * (n - 1);
    int i = (int)floor(pos);
    if (i >= n - 1)
        return v[n - 1];
    double frac = pos - i;
    return frac == 0 ? v[i] : v[i] + frac * (v[i + 1] - v[i]);
}

typedef struct Options {
    int seeds, trials;
    int max_trials; /* curves per seed, trials .. AB_MAX_TRIALS: the equal-budget arms' pool */
    int jitter;     /* steps take 1 .. jitter time units */
    int workers[AB_MAX_WORKER_COUNTS], n_workers;
    bool arms[AB_NARMS];
    bool json;
    bool dump_only;          /* write the curves and stop */
    bool full_scan;          /* check the equal-budget search against every N */
    const char *dump;        /* --dump-curves FILE, or NULL */
    const char *budget_file; /* --budget-file FILE: optuna-sh's budgets, or NULL */
} Options;

static void print_num(double v)
{
    if (isfinite(v))
        printf("%.10g", v);
    else
        printf("null");
}

static void print_array(const char *key, const SimResult *rs, int n, int field)
{
    printf(",\"%s\":[", key);
    for (int i = 0; i < n; i++) {
        if (i > 0)
            putchar(',');
        switch (field) {
        case 0:
            printf("%lld", (long long)rs[i].steps);
            break;
        case 1:
            print_num(rs[i].regret);
            break;
        case 2:
            print_num(rs[i].nostop);
            break;
        case 3:
            printf("%d", rs[i].completed);
            break;
        case 4:
            printf("%d", rs[i].stopped);
            break;
        default:
            printf("%d", rs[i].pick);
            break;
        }
    }
    putchar(']');
}

/* A line of the table: an arm on the first opt->trials trials of each seed,
 * or, with n_trials, on the most trials that fit each seed's cap. */
typedef struct Row {
    const char *label;
    const Arm *arm;
    int workers;
    const SimResult *rs;  /* per seed */
    const int *n_trials;  /* per seed, or NULL: opt->trials each */
    const int64_t *caps;  /* per seed, with n_trials */
    const char *cap_from; /* whose budget the caps are, with n_trials */
    int runs;             /* simulations over all seeds, with n_trials */
    double wall_s;
} Row;

static void report_row(const Row *row, const Options *opt, double gstar)
{
    int n = opt->seeds;
    const SimResult *rs = row->rs;
    double *v = malloc((size_t)n * sizeof *v);
    if (v == NULL) {
        fprintf(stderr, "asha_bench: out of memory\n");
        exit(1);
    }
    double budget = 0, completed = 0, stopped = 0, promotions = 0, endgame = 0;
    double trials = 0, cap = 0;
    int n_min = INT32_MAX, n_max = 0;
    for (int i = 0; i < n; i++) {
        budget += (double)rs[i].steps / n;
        completed += (double)rs[i].completed / n;
        stopped += (double)rs[i].stopped / n;
        promotions += (double)rs[i].promotions / n;
        endgame += (double)rs[i].endgame / n;
        if (row->n_trials != NULL) {
            trials += (double)row->n_trials[i] / n;
            cap += (double)row->caps[i] / n;
            n_min = row->n_trials[i] < n_min ? row->n_trials[i] : n_min;
            n_max = row->n_trials[i] > n_max ? row->n_trials[i] : n_max;
        }
    }
    for (int i = 0; i < n; i++)
        v[i] = rs[i].regret;
    double md = quantile(v, n, 0.5), q1 = quantile(v, n, 0.25), q3 = quantile(v, n, 0.75);
    for (int i = 0; i < n; i++)
        v[i] = rs[i].nostop;
    double ns = quantile(v, n, 0.5);
    free(v);
    bool promote = row->arm->params.promote;
    if (row->n_trials == NULL) {
        printf("%2d  %-19s %8.1f  %8.4f [%.4f, %.4f]  %8.4f  %6.1f %6.1f", row->workers, row->label,
               budget, md, q1, q3, ns, stopped, completed);
    } else {
        printf("%2d  %-29s %8.1f  %8.4f [%.4f, %.4f]  %8.4f  %6.1f %6.1f  %5.1f [%3d, %3d] %8.1f "
               "%5d",
               row->workers, row->label, budget, md, q1, q3, ns, stopped, completed, trials, n_min,
               n_max, cap, row->runs);
    }
    if (promote)
        printf("  (promoted %.1f, end game %.1f)", promotions, endgame);
    printf("  %.2f s\n", row->wall_s);
    if (opt->json) {
        printf("{\"bench\":\"asha\",\"impl\":\"rung\",\"label\":\"%s\",\"arm\":\"%s\","
               "\"workers\":%d,\"seeds\":%d,",
               row->label, row->arm->name, row->workers, n);
        if (row->n_trials == NULL)
            printf("\"trials\":%d,", opt->trials);
        else
            printf("\"max_trials\":%d,\"n_trials_mean\":%.2f,\"cap_mean\":%.2f,\"cap_from\":\"%s\","
                   "\"runs\":%d,",
                   opt->max_trials, trials, cap, row->cap_from, row->runs);
        printf("\"jitter\":%d,\"gstar\":%.10g,\"budget_mean\":%.4f,\"regret_median\":", opt->jitter,
               gstar, budget);
        print_num(md);
        printf(",\"regret_q1\":");
        print_num(q1);
        printf(",\"regret_q3\":");
        print_num(q3);
        printf(",\"nostop_regret_median\":");
        print_num(ns);
        printf(",\"stopped_mean\":%.2f,\"completed_mean\":%.2f,\"promotions_mean\":%.2f,"
               "\"endgame_mean\":%.2f,\"wall_s\":%.3f",
               stopped, completed, promotions, endgame, row->wall_s);
        print_array("budget", rs, n, 0);
        print_array("regret", rs, n, 1);
        print_array("nostop_regret", rs, n, 2);
        print_array("completed", rs, n, 3);
        print_array("stopped", rs, n, 4);
        print_array("pick", rs, n, 5);
        if (row->n_trials != NULL) {
            printf(",\"n_trials\":[");
            for (int i = 0; i < n; i++)
                printf("%s%d", i > 0 ? "," : "", row->n_trials[i]);
            printf("],\"cap\":[");
            for (int i = 0; i < n; i++)
                printf("%s%lld", i > 0 ? "," : "", (long long)row->caps[i]);
            putchar(']');
        }
        printf("}\n");
    }
    fflush(stdout);
}

/* One line per trial: seed trial dur x0 x1 x2 x3 final loss_1 .. loss_81;
 * the first opt->trials trials of each seed (curves holds opt->max_trials). */
static int dump_curves(const char *path, const Curve *curves, const Options *opt, double gstar)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "# lc4 curves: seeds %d trials %d steps %d jitter %d gstar %.17g\n", opt->seeds,
            opt->trials, LC4_STEPS, opt->jitter, gstar);
    fprintf(f, "# seed trial dur x0 x1 x2 x3 final loss_1 .. loss_%d\n", LC4_STEPS);
    for (int s = 0; s < opt->seeds; s++) {
        for (int i = 0; i < opt->trials; i++) {
            const Curve *c = &curves[(size_t)s * opt->max_trials + i];
            fprintf(f, "%d %d %d", s, i, c->dur);
            for (int d = 0; d < LC4_DIMS; d++)
                fprintf(f, " %.17g", c->x[d]);
            fprintf(f, " %.17g", c->final);
            for (int t = 1; t <= LC4_STEPS; t++)
                fprintf(f, " %.17g", c->loss[t]);
            fputc('\n', f);
        }
    }
    bool bad = ferror(f) != 0;
    return fclose(f) == 0 && !bad ? 0 : -1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reads path's "W seed budget" lines (bench/optuna_asha.py --sh-budgets; a
 * line starting with '#' is a comment) into caps[wi * seeds + seed] for the
 * W of opt->workers[wi]; entries the file lacks stay -1, lines for other W
 * or seeds are skipped. Returns 0, or -1 with a message when the file cannot
 * be read or a line is not three whole numbers. */
static int read_budgets(const char *path, const Options *opt, int64_t *caps)
{
    for (size_t i = 0; i < (size_t)opt->n_workers * (size_t)opt->seeds; i++)
        caps[i] = -1;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "asha_bench: cannot read %s\n", path);
        return -1;
    }
    char line[256];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        lineno++;
        if (line[0] == '#' || strspn(line, " \t\r\n") == strlen(line))
            continue;
        int w, seed;
        long long budget;
        char extra;
        if (sscanf(line, "%d %d %lld %c", &w, &seed, &budget, &extra) != 3 || seed < 0 ||
            budget < 0) {
            fprintf(stderr, "asha_bench: %s:%d: not \"W seed budget\"\n", path, lineno);
            rc = -1;
            break;
        }
        for (int wi = 0; wi < opt->n_workers; wi++)
            if (opt->workers[wi] == w && seed < opt->seeds)
                caps[(size_t)wi * opt->seeds + seed] = budget;
    }
    if (rc == 0 && ferror(f)) {
        fprintf(stderr, "asha_bench: cannot read %s\n", path);
        rc = -1;
    }
    fclose(f);
    return rc;
}

/* Runs arm at W = opt->workers[wi] on each seed's first N trials, N the
 * largest <= opt->max_trials whose budget is at most caps[seed], and prints
 * the row. Adds contract breaches to *breaches and seeds where the full
 * scan disagrees to *scan_fails; returns 0, or -1 when out of memory. */
static int run_equal_arm(const Arm *arm, const char *label, const char *cap_from,
                         const int64_t *caps, const Curve *curves, int wi, const Options *opt,
                         double gstar, int *breaches, int *scan_fails)
{
    SimResult *rs = malloc((size_t)opt->seeds * sizeof *rs);
    int *ns = malloc((size_t)opt->seeds * sizeof *ns);
    int rc = -1, runs = 0;
    if (rs == NULL || ns == NULL)
        goto out;
    double t0 = now_s();
    for (int s = 0; s < opt->seeds; s++) {
        EqResult eq;
        int e = equal_budget(arm, &curves[(size_t)s * opt->max_trials], opt->max_trials,
                             opt->workers[wi], s, gstar, caps[s], opt->full_scan, &eq);
        if (e < 0)
            goto out;
        *breaches += eq.breaches;
        *scan_fails += e > 0;
        rs[s] = eq.r;
        ns[s] = eq.n;
        runs += eq.runs;
    }
    Row row = {.label = label,
               .arm = arm,
               .workers = opt->workers[wi],
               .rs = rs,
               .n_trials = ns,
               .caps = caps,
               .cap_from = cap_from,
               .runs = runs,
               .wall_s = now_s() - t0};
    report_row(&row, opt, gstar);
    rc = 0;
out:
    free(ns);
    free(rs);
    return rc;
}

static int arm_index(const char *name)
{
    for (int a = 0; a < AB_NARMS; a++)
        if (strcmp(ARMS[a].name, name) == 0)
            return a;
    return -1;
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: asha_bench [--seeds N] [--trials N] [--max-trials N] [--workers LIST]\n"
            "                  [--arms LIST] [--jitter J] [--budget-file FILE] [--full-scan]\n"
            "                  [--dump-curves FILE] [--dump-only] [--json]\n"
            "  --seeds N           seeds 0..N-1, at most %d (default 10)\n"
            "  --trials N          trials per seed, at most %d (default 100)\n"
            "  --max-trials N      trials per seed the equal-budget arms may draw on, at\n"
            "                      least --trials (default %d, or --trials if more)\n"
            "  --jitter J          a trial's steps take d time units, d uniform on 1..J\n"
            "                      drawn per trial, J at most %d (default 4; 1: all equal)\n"
            "  --workers LIST      comma-separated simulated worker counts, each at most %d\n"
            "                      (default 1,8)\n"
            "  --arms LIST         comma-separated: fifo,asha,asha-promote,hyperband,median\n"
            "                      (default all)\n"
            "  --budget-file FILE  \"W seed budget\" lines, optuna-sh's budgets\n"
            "                      (bench/optuna_asha.py --sh-budgets): adds the arm\n"
            "                      rung-asha@sh-budget\n"
            "  --full-scan         check each equal-budget N against runs of every N\n"
            "                      from --max-trials down (slow)\n"
            "  --dump-curves FILE  write every curve (the seeds x trials) to FILE first,\n"
            "                      for bench/optuna_asha.py\n"
            "  --dump-only         stop after --dump-curves\n"
            "  --json              also print one JSON object per result line\n",
            AB_MAX_SEEDS, AB_MAX_TRIALS, AB_DEFAULT_MAX_TRIALS, AB_MAX_JITTER, AB_MAX_WORKERS);
}

static bool parse_int(const char *arg, int lo, int hi, int *out)
{
    char *end = NULL;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end != '\0' || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

/* Splits a comma-separated list into buf; returns the tokens' count or -1. */
static int split(const char *arg, char *buf, size_t size, char **tok, int max)
{
    if (strlen(arg) >= size)
        return -1;
    strcpy(buf, arg);
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
        if (n == max)
            return -1;
        tok[n++] = t;
    }
    return n;
}

static bool parse_workers(const char *arg, Options *opt)
{
    char buf[256], *tok[AB_MAX_WORKER_COUNTS];
    int n = split(arg, buf, sizeof buf, tok, AB_MAX_WORKER_COUNTS);
    if (n <= 0)
        return false;
    for (int i = 0; i < n; i++)
        if (!parse_int(tok[i], 1, AB_MAX_WORKERS, &opt->workers[i]))
            return false;
    opt->n_workers = n;
    return true;
}

static bool parse_arms(const char *arg, Options *opt)
{
    char buf[256], *tok[AB_NARMS * 2];
    int n = split(arg, buf, sizeof buf, tok, AB_NARMS * 2);
    if (n <= 0)
        return false;
    for (int a = 0; a < AB_NARMS; a++)
        opt->arms[a] = false;
    for (int i = 0; i < n; i++) {
        int a = 0;
        while (a < AB_NARMS && strcmp(tok[i], ARMS[a].name) != 0)
            a++;
        if (a == AB_NARMS) {
            fprintf(stderr, "asha_bench: unknown arm \"%s\"\n", tok[i]);
            return false;
        }
        opt->arms[a] = true;
    }
    return true;
}

int main(int argc, char **argv)
{
    Options opt = {.seeds = 10, .trials = 100, .jitter = 4, .workers = {1, 8}, .n_workers = 2};
    bool max_given = false;
    for (int a = 0; a < AB_NARMS; a++)
        opt.arms[a] = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = true;
        if (strcmp(a, "--json") == 0) {
            opt.json = true;
            continue;
        } else if (strcmp(a, "--dump-only") == 0) {
            opt.dump_only = true;
            continue;
        } else if (strcmp(a, "--full-scan") == 0) {
            opt.full_scan = true;
            continue;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (v == NULL) {
            ok = false;
        } else if (strcmp(a, "--seeds") == 0) {
            ok = parse_int(v, 1, AB_MAX_SEEDS, &opt.seeds);
        } else if (strcmp(a, "--trials") == 0) {
            ok = parse_int(v, 1, AB_MAX_TRIALS, &opt.trials);
        } else if (strcmp(a, "--max-trials") == 0) {
            ok = parse_int(v, 1, AB_MAX_TRIALS, &opt.max_trials);
            max_given = true;
        } else if (strcmp(a, "--jitter") == 0) {
            ok = parse_int(v, 1, AB_MAX_JITTER, &opt.jitter);
        } else if (strcmp(a, "--workers") == 0) {
            ok = parse_workers(v, &opt);
        } else if (strcmp(a, "--arms") == 0) {
            ok = parse_arms(v, &opt);
        } else if (strcmp(a, "--budget-file") == 0) {
            opt.budget_file = v;
        } else if (strcmp(a, "--dump-curves") == 0) {
            opt.dump = v;
        } else {
            ok = false;
        }
        if (!ok) {
            fprintf(stderr, "asha_bench: bad argument %s%s%s\n", a, v ? " " : "", v ? v : "");
            usage(stderr);
            return 2;
        }
        i++;
    }
    if (!max_given)
        opt.max_trials = opt.trials > AB_DEFAULT_MAX_TRIALS ? opt.trials : AB_DEFAULT_MAX_TRIALS;
    if (opt.max_trials < opt.trials) {
        fprintf(stderr, "asha_bench: bad argument --max-trials %d: less than --trials %d\n",
                opt.max_trials, opt.trials);
        return 2;
    }

    double xstar[LC4_DIMS];
    double gstar = lc4_gstar(xstar);
    if (!self_check(gstar)) {
        fprintf(stderr, "asha_bench: lc4 is wrong; nothing measured\n");
        return 1;
    }
    printf("# lc4: g* = %.6f at x = (%.4f, %.1f, %.1f, %.4f); self-check ok (nothing below g* "
           "at %d random points, noise N(0, 1))\n",
           gstar, xstar[0], xstar[1], xstar[2], xstar[3], AB_CHECK_POINTS);

    /* Seed s's trial i is curves[s * max_trials + i]; the arms on a fixed
     * count use i < trials, the same curves whatever max_trials is. */
    size_t n_curves = (size_t)opt.seeds * (size_t)opt.max_trials;
    Curve *curves = malloc(n_curves * sizeof *curves);
    SimResult *rs = malloc((size_t)opt.seeds * sizeof *rs);
    int64_t *caps = malloc((size_t)opt.seeds * sizeof *caps);
    int64_t *sh_caps = malloc((size_t)opt.n_workers * (size_t)opt.seeds * sizeof *sh_caps);
    int rc = 1;
    if (curves == NULL || rs == NULL || caps == NULL || sh_caps == NULL)
        goto oom;
    for (int s = 0; s < opt.seeds; s++)
        for (int i = 0; i < opt.max_trials; i++)
            lc4_curve(s, i, opt.jitter, &curves[(size_t)s * opt.max_trials + i]);
    if (opt.dump != NULL) {
        if (dump_curves(opt.dump, curves, &opt, gstar) != 0) {
            fprintf(stderr, "asha_bench: cannot write %s\n", opt.dump);
            goto done;
        }
        printf("# curves written to %s\n", opt.dump);
    }
    if (opt.dump_only) {
        rc = 0;
        goto done;
    }
    int a_asha = arm_index("asha"), a_promote = arm_index("asha-promote");
    bool eq_sh = opt.arms[a_asha] && opt.budget_file != NULL, eq_promote = opt.arms[a_promote];
    if (eq_sh && read_budgets(opt.budget_file, &opt, sh_caps) != 0)
        goto done;

    double m[ASHA_MAX_RUNGS];
    AshaParams asha_p = ARMS[1].params;
    int nr = asha_rungs(&asha_p, 0, m);
    printf("# asha rungs (bracket 0):");
    for (int k = 0; k < nr; k++)
        printf(" %g", m[k]);
    printf("; hyperband brackets: %d; a report at t >= %d completes\n",
           asha_max_brackets(&ARMS[3].params), LC4_STEPS);
    printf("# seeds 0..%d, %d trials; a trial's steps take 1..%d time units (drawn per trial); "
           "regret = true regret of the picked trial, median [q1, q3] over seeds; nostop = no "
           "stopping at the same budget\n",
           opt.seeds - 1, opt.trials, opt.jitter);
    printf(" W  %-19s %8s  %-25s  %8s  %6s %6s\n", "arm", "budget", "regret median [q1, q3]",
           "nostop", "stopd", "compl");

    int breaches = 0, scan_fails = 0;
    for (int wi = 0; wi < opt.n_workers; wi++) {
        for (int a = 0; a < AB_NARMS; a++) {
            if (!opt.arms[a])
                continue;
            double t0 = now_s();
            for (int s = 0; s < opt.seeds; s++) {
                if (simulate(&ARMS[a], &curves[(size_t)s * opt.max_trials], opt.trials,
                             opt.workers[wi], s, gstar, -1, NULL, &rs[s]) != 0)
                    goto oom;
                breaches += rs[s].breaches;
            }
            char label[32];
            snprintf(label, sizeof label, "rung-%s", ARMS[a].name);
            Row row = {.label = label,
                       .arm = &ARMS[a],
                       .workers = opt.workers[wi],
                       .rs = rs,
                       .wall_s = now_s() - t0};
            report_row(&row, &opt, gstar);
        }
    }

    /* The equal-budget arms: a cap per (W, seed), the most trials under it. */
    if (eq_sh || eq_promote) {
        printf("# equal budget: each seed runs the arm on its first N trials, N the largest <= "
               "%d whose budget is at most the seed's cap: rung-asha@sh-budget's cap is "
               "optuna-sh's budget measured on that seed and W (%s), "
               "rung-asha-promote@asha-budget's is rung-asha's on the first %d trials; N = "
               "mean [min, max] over seeds, runs = simulations to find N%s\n",
               opt.max_trials, eq_sh ? opt.budget_file : "no --budget-file: not run", opt.trials,
               opt.full_scan ? ", each checked against a full scan" : "");
        printf(" W  %-29s %8s  %-25s  %8s  %6s %6s  %-16s %8s %5s\n", "arm", "budget",
               "regret median [q1, q3]", "nostop", "stopd", "compl", "N mean [min,max]", "cap",
               "runs");
    }
    for (int wi = 0; wi < opt.n_workers && (eq_sh || eq_promote); wi++) {
        if (eq_sh) {
            int missing = -1;
            for (int s = 0; s < opt.seeds; s++) {
                caps[s] = sh_caps[(size_t)wi * opt.seeds + s];
                if (caps[s] < 0 && missing < 0)
                    missing = s;
            }
            if (missing >= 0)
                printf("%2d  %-29s not run: no optuna-sh budget for seed %d in %s\n",
                       opt.workers[wi], "rung-asha@sh-budget", missing, opt.budget_file);
            else if (run_equal_arm(&ARMS[a_asha], "rung-asha@sh-budget", "optuna-sh", caps, curves,
                                   wi, &opt, gstar, &breaches, &scan_fails) != 0)
                goto oom;
        }
        if (eq_promote) {
            for (int s = 0; s < opt.seeds; s++) {
                SimResult r;
                if (simulate(&ARMS[a_asha], &curves[(size_t)s * opt.max_trials], opt.trials,
                             opt.workers[wi], s, gstar, -1, NULL, &r) != 0)
                    goto oom;
                caps[s] = r.steps;
            }
            if (run_equal_arm(&ARMS[a_promote], "rung-asha-promote@asha-budget", "rung-asha", caps,
                              curves, wi, &opt, gstar, &breaches, &scan_fails) != 0)
                goto oom;
        }
    }
    if (opt.full_scan && (eq_sh || eq_promote))
        printf("# full scan: %s\n", scan_fails == 0
                                        ? "the search's N is the full scan's on every seed"
                                        : "the search and the full scan disagree (see above)");
    if (breaches > 0)
        fprintf(stderr, "asha_bench: FAILED: %d answers of asha.c outside asha.h's contract\n",
                breaches);
    rc = breaches > 0 || scan_fails > 0 ? 1 : 0;
    goto done;
oom:
    fprintf(stderr, "asha_bench: out of memory\n");
done:
    free(sh_caps);
    free(caps);
    free(rs);
    free(curves);
    return rc;
}
