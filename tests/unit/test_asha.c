/* Unit tests of server/asha.c, the early-stopping rules of asha.h (docs/api.md,
 * "scheduler").
 *
 * The main check runs 1,000 random report sequences through asha.c and
 * through a brute-force model written here from the rules alone (ref_*: a
 * flat array of rung records, a sort and numpy's percentile formula for each
 * cutoff, linear scans for ranks and running means; no code shared with
 * asha.c), and wants every decision, rung index, promotion list, endgame pick
 * and paused rung to agree. The rules are easy to get subtly wrong (Ray's
 * skipped-rung quirk, ties at the cutoff, numpy's rounding, promotion order),
 * and the model is short enough to check by reading. The hand-worked cases
 * pin the numbers themselves, so that the model is checked too.
 *
 * To trace one random sequence: TEST_ASHA_SEQ=<index> test_asha */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asha.h"

/* One report with a value; checks the decision and the rung that judged it,
 * at the caller's line. */
#define EXPECT_REPORT(a, trial, time, value, decision, rung_index)                                 \
    do {                                                                                           \
        int rung_ = -2;                                                                            \
        assert_int_equal(asha_report((a), (trial), (time), true, (value), &rung_), (decision));    \
        assert_int_equal(rung_, (rung_index));                                                     \
    } while (0)

/* The parameters of most hand-worked cases: rungs at 1, 3, 9, 27, 81. */
static AshaParams hw_params(AshaType type, bool maximize, double rf)
{
    AshaParams p;
    memset(&p, 0, sizeof p);
    p.type = type;
    p.maximize = maximize;
    p.max_t = 81;
    p.grace_period = 1;
    p.rf = rf;
    p.brackets = 1;
    p.min_samples = 3;
    p.seed = 1;
    return p;
}

static Asha *hw_new(const AshaParams *p)
{
    Asha *a = asha_new(p);
    assert_non_null(a);
    return a;
}

/* ---- hand-worked cases: ASHA ---- */

static void test_first_trial_at_rung_continues(void **state)
{
    (void)state;
    AshaParams p = hw_params(ASHA_ASHA, false, 3);
    Asha *a = hw_new(&p);
    /* Nothing is recorded at rung 0 (milestone 1) yet: however bad, it goes on. */
    EXPECT_REPORT(a, 0, 1, 1e9, ASHA_CONTINUE, 0);
    /* Time 2: rung 0 is scored, rung 1 (milestone 3) not reached. */
    EXPECT_REPORT(a, 0, 2, 1e9, ASHA_CONTINUE, -1);
    /* Time 3: the first at rung 1 too. */
    EXPECT_REPORT(a, 0, 3, 1e9, ASHA_CONTINUE, 1);
    asha_free(a);
}

static void test_cutoff_by_hand(void **state)
{
    (void)state;
    /* max mode, rf = 3: the cutoff is numpy.percentile(recorded, 200/3),
     * q = 2/3, virtual index (n - 1) q between sorted neighbours. */
    AshaParams p = hw_params(ASHA_ASHA, true, 3);
    Asha *a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 0.3, ASHA_CONTINUE, 0);
    /* {0.3}: index 0 -> 0.3; 0.5 >= 0.3. */
    EXPECT_REPORT(a, 1, 1, 0.5, ASHA_CONTINUE, 0);
    /* {0.3, 0.5}: index 2/3 -> 0.5 - 0.2/3 = 0.4333...; 0.4 is below. */
    EXPECT_REPORT(a, 2, 1, 0.4, ASHA_STOP, 0);
    /* The stopped value counts: {0.3, 0.4, 0.5}: index 4/3 -> 0.4 + 0.1/3 =
     * 0.4333...; 0.45 is above. */
    EXPECT_REPORT(a, 3, 1, 0.45, ASHA_CONTINUE, 0);
    /* {0.3, 0.4, 0.45, 0.5}: index 2 -> 0.45; 0.44 is below. */
    EXPECT_REPORT(a, 4, 1, 0.44, ASHA_STOP, 0);
    /* {0.3, 0.4, 0.44, 0.45, 0.5}: index 8/3 -> 0.45 - 0.01/3 = 0.44666...;
     * 0.45 is above. (numpy 1.24 gives these same four cutoffs.) */
    EXPECT_REPORT(a, 5, 1, 0.45, ASHA_CONTINUE, 0);
    asha_free(a);

    /* rf = 4, q = 3/4: {0.1, 0.2, 0.3}: index 1.5 -> 0.3 - 0.1 * 0.5 = 0.25. */
    p = hw_params(ASHA_ASHA, true, 4);
    a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 0.1, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 1, 1, 0.3, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 2, 1, 0.2, ASHA_STOP, 0);      /* {0.1, 0.3}: index 0.75 -> 0.25 */
    EXPECT_REPORT(a, 3, 1, 0.26, ASHA_CONTINUE, 0); /* {0.1, 0.2, 0.3} -> 0.25 */
    asha_free(a);
}

static void test_cutoff_rounding_as_numpy(void **state)
{
    (void)state;
    /* numpy's "linear" method takes the virtual index as (n - 1) * q. With
     * n = 13 and q = 2/3 that is exactly 8.0, so the cutoff of nine 0.5 and
     * four 1.0 is sorted[8] = 0.5 (numpy 1.24: np.percentile(..., 200/3) ==
     * 0.5) and a value of 0.5 ties and continues. The algebraically equal
     * n*q + (1 - q) - 1 rounds to 8.000000000000002 and would give a cutoff
     * of 0.5000000000000009, stopping it. */
    AshaParams p = hw_params(ASHA_ASHA, true, 3);
    Asha *a = hw_new(&p);
    for (int64_t t = 0; t < 13; t++)
        asha_replay(a, t, 1, true, t < 9 ? 0.5 : 1.0);
    EXPECT_REPORT(a, 13, 1, 0.5, ASHA_CONTINUE, 0);
    asha_free(a);

    /* The other way round, in min mode: scores -0.875, -0.625, -0.25, index
     * 2 * q = 1.3333333333333335, cutoff -0.625 + 0.375 * 0.33333333333333348
     * = -0.49999999999999994 (numpy 1.24 agrees), so a value of 0.5 (score
     * -0.5, a tie in exact arithmetic) is below it and stops, as in Ray.
     * n*q + (1 - q) - 1 = 1.333333333333333 would give -0.50000000000000011. */
    p = hw_params(ASHA_ASHA, false, 3);
    a = hw_new(&p);
    asha_replay(a, 0, 1, true, 0.875);
    asha_replay(a, 1, 1, true, 0.25);
    asha_replay(a, 2, 1, true, 0.625);
    EXPECT_REPORT(a, 3, 1, 0.5, ASHA_STOP, 0);
    asha_free(a);
}

static void test_skipped_rungs_judged_at_highest(void **state)
{
    (void)state;
    AshaParams p = hw_params(ASHA_ASHA, true, 3);
    Asha *a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 0.9, ASHA_CONTINUE, 0);
    /* Time 10 skips rung 1 (3): judged at the highest reached, rung 2 (9). */
    EXPECT_REPORT(a, 0, 10, 0.9, ASHA_CONTINUE, 2);
    /* Ray's quirk: rung 1 was reached and never scored, so the next report
     * is scored there. */
    EXPECT_REPORT(a, 0, 11, 0.9, ASHA_CONTINUE, 1);
    EXPECT_REPORT(a, 0, 12, 0.9, ASHA_CONTINUE, -1);
    EXPECT_REPORT(a, 0, 30, 0.9, ASHA_CONTINUE, 3);
    /* Another trial that jumps to 10 meets trial 0's 0.9 at rung 2 ... */
    EXPECT_REPORT(a, 1, 10, 0.5, ASHA_STOP, 2);
    /* ... and one at 3 meets the 0.9 recorded by the quirk at rung 1. */
    EXPECT_REPORT(a, 2, 3, 0.1, ASHA_STOP, 1);
    asha_free(a);
}

static void test_ties_at_cutoff_continue(void **state)
{
    (void)state;
    AshaParams p = hw_params(ASHA_ASHA, true, 2); /* q = 1/2 */
    Asha *a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 0.5, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 1, 1, 0.5, ASHA_CONTINUE, 0); /* {0.5} -> 0.5: not strictly below */
    EXPECT_REPORT(a, 2, 1, 0.5, ASHA_CONTINUE, 0); /* {0.5, 0.5} -> 0.5 */
    asha_free(a);

    a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 0.25, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 1, 1, 0.75, ASHA_CONTINUE, 0);
    /* {0.25, 0.75}: index 0.5 -> 0.75 - 0.5 * 0.5 = 0.5: an interpolated tie. */
    EXPECT_REPORT(a, 2, 1, 0.5, ASHA_CONTINUE, 0);
    /* {0.25, 0.5, 0.75}: index 1 -> 0.5; 0.49 is below. */
    EXPECT_REPORT(a, 3, 1, 0.49, ASHA_STOP, 0);
    asha_free(a);
}

static void test_min_and_max_mode(void **state)
{
    (void)state;
    /* The same values, rf = 2. max: scores 1.0, 2.0, 1.2. */
    AshaParams p = hw_params(ASHA_ASHA, true, 2);
    Asha *a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 1.0, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 1, 1, 2.0, ASHA_CONTINUE, 0); /* {1} -> 1 */
    EXPECT_REPORT(a, 2, 1, 1.2, ASHA_STOP, 0);     /* {1, 2} -> 1.5 */
    asha_free(a);
    /* min: scores -1.0, -2.0, -1.2. */
    p = hw_params(ASHA_ASHA, false, 2);
    a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 1.0, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 1, 1, 2.0, ASHA_STOP, 0);     /* {-1} -> -1; -2 is below */
    EXPECT_REPORT(a, 2, 1, 1.2, ASHA_CONTINUE, 0); /* {-2, -1} -> -1.5; -1.2 is above */
    asha_free(a);
}

static void test_max_t_completes(void **state)
{
    (void)state;
    /* max_t 100: rungs 1, 3, 9, 27, 81 (log(100)/log(3) = 4.19). */
    AshaParams p = hw_params(ASHA_ASHA, true, 3);
    p.max_t = 100;
    Asha *a = hw_new(&p);
    EXPECT_REPORT(a, 0, 100, 0.9, ASHA_COMPLETE, -1);
    EXPECT_REPORT(a, 1, 250, -1e9, ASHA_COMPLETE, -1);
    /* Completing recorded nothing: trial 2 is the first at rung 4 (81). */
    EXPECT_REPORT(a, 2, 81, 0.1, ASHA_CONTINUE, 4);
    /* Having jumped to 81, its next report is scored at rung 3 (27). */
    EXPECT_REPORT(a, 2, 99.5, 0.1, ASHA_CONTINUE, 3);
    EXPECT_REPORT(a, 2, 100, 0.1, ASHA_COMPLETE, -1);
    asha_free(a);
}

/* "end_at_max_t": false (open_end), as a W&B sweep's early_terminate
 * becomes (python/rung/convert.py): max_t is the top rung and no report
 * completes the trial, so a trial runs past max_t as far as its program goes. */
static void test_open_end_runs_past_max_t(void **state)
{
    (void)state;
    /* W&B's max_iter 27, s 2, eta 3: bands 3 and 9, asha max_t 9. */
    AshaParams p = hw_params(ASHA_ASHA, false, 3);
    p.grace_period = 3;
    p.max_t = 9;
    p.open_end = true;
    Asha *a = hw_new(&p);
    EXPECT_REPORT(a, 0, 3, 0.5, ASHA_CONTINUE, 0);
    /* The top rung, max_t, is judged rather than completing the trial. */
    EXPECT_REPORT(a, 0, 9, 0.4, ASHA_CONTINUE, 1);
    for (int step = 10; step <= 20; step++)
        EXPECT_REPORT(a, 0, step, 0.3, ASHA_CONTINUE, -1);
    /* Trial 1 is worse at the top rung than trial 0 there: stopped at 9. */
    EXPECT_REPORT(a, 1, 3, 0.5, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 1, 9, 0.9, ASHA_STOP, 1);
    /* Trial 2 reports first past max_t: judged at the top rung it passed. */
    EXPECT_REPORT(a, 2, 12, 0.1, ASHA_CONTINUE, 1);
    EXPECT_REPORT(a, 2, 30, 0.1, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 2, 31, 0.1, ASHA_CONTINUE, -1);
    asha_free(a);
}

static void test_trial_end_records(void **state)
{
    (void)state;
    AshaParams p = hw_params(ASHA_ASHA, true, 3);
    Asha *a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 0.9, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 0, 3, 0.9, ASHA_CONTINUE, 1);
    /* Ends at 9: its last result is recorded at rung 2 (9). */
    asha_trial_end(a, 0, 9, true, 0.8);
    EXPECT_REPORT(a, 1, 9, 0.7, ASHA_STOP, 2); /* {0.8} -> 0.8 */
    asha_free(a);

    /* on_trial_complete has no max_t test: an end at 100 with max_t 100
     * records at rung 4 (81), which a report at 81 then meets. */
    p.max_t = 100;
    a = hw_new(&p);
    asha_trial_end(a, 0, 100, true, 0.9);
    EXPECT_REPORT(a, 1, 81, 0.1, ASHA_STOP, 4);
    /* Without the metric nothing is recorded. */
    asha_trial_end(a, 2, 100, false, 0);
    EXPECT_REPORT(a, 3, 1, 0.1, ASHA_CONTINUE, 0);
    asha_free(a);

    /* With max_t 81 the top rung is max_t itself: only an end reaches it. */
    p = hw_params(ASHA_ASHA, true, 3);
    p.promote = true;
    a = hw_new(&p);
    asha_trial_end(a, 0, 81, true, 0.9);
    asha_trial_paused(a, 0, -1); /* at its highest recorded rung */
    assert_int_equal(asha_paused_rung(a, 0), 4);
    asha_free(a);
}

static void test_no_value_never_judged(void **state)
{
    (void)state;
    AshaParams p = hw_params(ASHA_ASHA, true, 3);
    Asha *a = hw_new(&p);
    int rung = -2;
    assert_int_equal(asha_report(a, 0, 1, false, 0, &rung), ASHA_CONTINUE);
    assert_int_equal(rung, -1);
    /* Not even at max_t: a report without the metric is Ray's early return. */
    assert_int_equal(asha_report(a, 0, 81, false, 0, &rung), ASHA_CONTINUE);
    assert_int_equal(rung, -1);
    /* Nothing was recorded: trial 1 is the first at rung 0, trial 0 is
     * still to be scored there. */
    EXPECT_REPORT(a, 1, 1, 0.1, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 0, 1, 0.9, ASHA_CONTINUE, 0);
    asha_free(a);
}

/* ---- brackets ---- */

static void hw_expect_rungs(const AshaParams *p, int b, const double *want, int n)
{
    double m[ASHA_MAX_RUNGS];
    assert_int_equal(asha_rungs(p, b, m), n);
    for (int k = 0; k < n; k++)
        assert_true(m[k] == want[k]);
}

static void test_bracket_milestones(void **state)
{
    (void)state;
    AshaParams p = hw_params(ASHA_ASHA, true, 3);
    p.brackets = 3;
    p.seed = 7;
    assert_int_equal(asha_max_brackets(&p), 5); /* log(81)/log(3) = 4 */
    hw_expect_rungs(&p, 0, (const double[]){1, 3, 9, 27, 81}, 5);
    hw_expect_rungs(&p, 1, (const double[]){3, 9, 27, 81}, 4);
    hw_expect_rungs(&p, 2, (const double[]){9, 27, 81}, 3);

    /* A non-integer factor: rf 2.5, grace 2, max_t 100: log(50)/log(2.5) =
     * 4.27, so 5 rungs at 2 * 2.5^k. */
    AshaParams q = p;
    q.rf = 2.5;
    q.grace_period = 2;
    q.max_t = 100;
    assert_int_equal(asha_max_brackets(&q), 5);
    hw_expect_rungs(&q, 0, (const double[]){2, 5, 12.5, 31.25, 78.125}, 5);
    hw_expect_rungs(&q, 1, (const double[]){5, 12.5, 31.25, 78.125}, 4);

    /* A trial of each bracket is judged only from its bracket's first rung. */
    Asha *a = hw_new(&p);
    int64_t first[3] = {-1, -1, -1};
    for (int64_t t = 0; t < 1000; t++) {
        int b = asha_bracket(asha_params(a), t);
        assert_true(b >= 0 && b < 3);
        if (first[b] < 0)
            first[b] = t;
    }
    for (int b = 0; b < 3; b++)
        assert_true(first[b] >= 0);
    EXPECT_REPORT(a, first[0], 1, 0.5, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, first[1], 1, 0.5, ASHA_CONTINUE, -1); /* its rungs: 3, 9, 27, 81 */
    EXPECT_REPORT(a, first[1], 3, 0.5, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, first[2], 3, 0.5, ASHA_CONTINUE, -1); /* its rungs: 9, 27, 81 */
    EXPECT_REPORT(a, first[2], 9, 0.5, ASHA_CONTINUE, 0);
    /* Brackets keep their own records: bracket 0's rung 2 (9) is empty. */
    EXPECT_REPORT(a, first[0], 9, 0.1, ASHA_CONTINUE, 2);
    asha_free(a);
}

static void test_hyperband_bracket_count(void **state)
{
    (void)state;
    static const struct {
        double rf, grace, max_t;
        int brackets;
    } cases[] = {
        {3, 1, 81, 5},  /* log_3(81) = 4 */
        {3, 1, 80, 4},  /* 3.99 */
        {2, 1, 100, 7}, /* 6.64 */
        {4, 3, 9, 1},   /* 0.79: one bracket of one rung */
        {2.5, 2, 100, 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        AshaParams p = hw_params(ASHA_HYPERBAND, true, cases[i].rf);
        p.grace_period = cases[i].grace;
        p.max_t = cases[i].max_t;
        p.brackets = 1; /* hyperband ignores it */
        assert_int_equal(asha_max_brackets(&p), cases[i].brackets);
        Asha *a = hw_new(&p);
        assert_int_equal(asha_params(a)->brackets, cases[i].brackets);
        /* Every bracket gets trials (the smallest weight, e^-6 of 7, is 0.16%). */
        int seen[ASHA_MAX_BRACKETS] = {0};
        for (int64_t t = 0; t < 20000; t++) {
            int b = asha_bracket(asha_params(a), t);
            assert_true(b >= 0 && b < cases[i].brackets);
            seen[b]++;
        }
        for (int b = 0; b < cases[i].brackets; b++)
            assert_true(seen[b] > 0);
        asha_free(a);
    }
}

static void test_bracket_draws(void **state)
{
    (void)state;
    /* Three brackets of 5, 4 and 3 rungs: weights softmax(5, 4, 3), i.e.
     * e^0, e^-1, e^-2 over their sum = 0.665, 0.245, 0.090. */
    static const uint64_t seeds[] = {1, 2, 12345};
    const int n = 30000;
    double total = exp(0) + exp(-1) + exp(-2);
    for (size_t si = 0; si < sizeof seeds / sizeof seeds[0]; si++) {
        AshaParams p = hw_params(ASHA_ASHA, true, 3);
        p.brackets = 3;
        p.seed = seeds[si];
        int count[3] = {0};
        for (int64_t t = 0; t < n; t++) {
            int b = asha_bracket(&p, t);
            assert_true(b >= 0 && b < 3);
            assert_int_equal(asha_bracket(&p, t), b); /* pure */
            count[b]++;
        }
        for (int b = 0; b < 3; b++) {
            double pb = exp(-b) / total;
            double sigma = sqrt(n * pb * (1 - pb));
            if (fabs(count[b] - n * pb) > 4 * sigma)
                fail_msg("seed %llu bracket %d: %d of %d, expected %.0f +- %.0f",
                         (unsigned long long)seeds[si], b, count[b], n, n * pb, sigma);
        }
    }

    /* "allocation": "budget": Hyperband's bracket sizes, ceil(5 / r * 3^(r - 1))
     * for a bracket of r rungs out of 5: 81, 34, 15, 8, 5 under hyperband
     * (Optuna's HyperbandPruner draws in these proportions), and the first
     * three of them when asha keeps 3 brackets. */
    static const struct {
        AshaType type;
        int brackets;
        double w[5];
    } budget[] = {
        {ASHA_HYPERBAND, 5, {81, 34, 15, 8, 5}},
        {ASHA_ASHA, 3, {81, 34, 15}},
    };
    for (size_t c = 0; c < sizeof budget / sizeof budget[0]; c++) {
        AshaParams p = hw_params(budget[c].type, true, 3);
        p.brackets = budget[c].brackets;
        p.budget_brackets = true;
        p.seed = 11;
        int nb = budget[c].brackets, count[5] = {0};
        double sum = 0;
        for (int b = 0; b < nb; b++)
            sum += budget[c].w[b];
        for (int64_t t = 0; t < n; t++) {
            int b = asha_bracket(&p, t);
            assert_true(b >= 0 && b < nb);
            count[b]++;
        }
        for (int b = 0; b < nb; b++) {
            double pb = budget[c].w[b] / sum;
            double sigma = sqrt(n * pb * (1 - pb));
            if (fabs(count[b] - n * pb) > 4 * sigma)
                fail_msg("budget case %zu bracket %d: %d of %d, expected %.0f +- %.0f", c, b,
                         count[b], n, n * pb, sigma);
        }
    }

    /* Another seed, other draws (about half the trials move). */
    AshaParams p1 = hw_params(ASHA_ASHA, true, 3), p2;
    p1.brackets = 3;
    p2 = p1;
    p2.seed = 2;
    int differ = 0;
    for (int64_t t = 0; t < 1000; t++)
        differ += asha_bracket(&p1, t) != asha_bracket(&p2, t);
    assert_true(differ > 200);

    /* asha_report agrees with asha_bracket and asha_rungs: just before a
     * trial's first milestone nothing judges it, at each milestone that
     * rung does. */
    Asha *a = hw_new(&p1);
    for (int64_t t = 0; t < 300; t++) {
        int b = asha_bracket(&p1, t);
        double m[ASHA_MAX_RUNGS];
        int n_rungs = asha_rungs(&p1, b, m);
        assert_int_equal(n_rungs, 5 - b);
        int rung = -2;
        asha_report(a, t, m[0] - 0.5, true, 0.5, &rung);
        assert_int_equal(rung, -1);
        for (int k = 0; k < n_rungs && m[k] < p1.max_t; k++) {
            asha_report(a, t, m[k], true, 0.5, &rung);
            assert_int_equal(rung, k);
        }
    }
    asha_free(a);
}

/* ---- promote ---- */

static void hw_expect_promotions(Asha *a, int64_t cap, const int64_t *want, int64_t n)
{
    int64_t got[16];
    assert_true(cap <= 16);
    assert_int_equal(asha_promotions(a, got, cap), n);
    for (int64_t i = 0; i < n; i++) {
        assert_int_equal(got[i], want[i]);
        assert_int_equal(asha_paused_rung(a, got[i]), -1);
    }
}

static void test_promote_pauses_and_endgame(void **state)
{
    (void)state;
    /* rf 3, max mode, rungs 1, 3, 9, 27, 81. A trial goes on from rung k
     * only from the top floor(n/3) of the n values there. */
    AshaParams p = hw_params(ASHA_ASHA, true, 3);
    p.promote = true;
    Asha *a = hw_new(&p);
    /* n = 1, top 0: pauses. */
    EXPECT_REPORT(a, 0, 1, 0.5, ASHA_PAUSE, 0);
    assert_int_equal(asha_paused_rung(a, 0), 0);
    hw_expect_promotions(a, 16, NULL, 0);
    /* n = 2, top 0: pauses, best or not. */
    EXPECT_REPORT(a, 1, 1, 0.9, ASHA_PAUSE, 0);
    hw_expect_promotions(a, 16, NULL, 0);
    /* n = 3, top 1: 0.1 ranks third and pauses (never a stop: without
     * promote its cutoff {0.5, 0.9} -> 0.7667 would stop it). Trial 1 (0.9)
     * now ranks first and is promoted. */
    EXPECT_REPORT(a, 2, 1, 0.1, ASHA_PAUSE, 0);
    hw_expect_promotions(a, 16, (const int64_t[]){1}, 1);
    /* Resumed, trial 1 is the first at rung 1 and pauses there. */
    EXPECT_REPORT(a, 1, 3, 0.9, ASHA_PAUSE, 1);
    hw_expect_promotions(a, 16, NULL, 0);
    /* n = 4, top 1: ranks 0.9 (1), 0.5 (0), 0.3 (3), 0.1 (2). */
    EXPECT_REPORT(a, 3, 1, 0.3, ASHA_PAUSE, 0);
    hw_expect_promotions(a, 16, NULL, 0);

    /* Nothing runs. The endgame takes the top ceil(n/3): at rung 1 (n = 1)
     * trial 1, at rung 0 (n = 4, top 2) trial 0; highest rung first. */
    assert_int_equal(asha_endgame(a), 1);
    assert_int_equal(asha_paused_rung(a, 1), -1);
    assert_int_equal(asha_endgame(a), 0);
    assert_int_equal(asha_endgame(a), -1); /* trials 3 and 2 rank 3rd and 4th */
    assert_int_equal(asha_paused_rung(a, 3), 0);
    assert_int_equal(asha_paused_rung(a, 2), 0);

    /* n = 5, top 1: the best goes on. */
    EXPECT_REPORT(a, 4, 1, 0.95, ASHA_CONTINUE, 0);
    hw_expect_promotions(a, 16, NULL, 0);
    /* Ending a paused trial takes it off the paused list. */
    asha_trial_end(a, 3, 1, true, 0.3);
    assert_int_equal(asha_paused_rung(a, 3), -1);
    asha_free(a);
}

static void test_promotion_order(void **state)
{
    (void)state;
    /* rf 2, max_t 16: rungs 1, 2, 4, 8, 16. Built as a reload would:
     * replayed reports, then the paused trials marked. */
    AshaParams p = hw_params(ASHA_ASHA, true, 2);
    p.max_t = 16;
    p.promote = true;
    Asha *a = hw_new(&p);
    static const double rung0[10] = {0.9, 0.8, 0.7, 0.1, 0.2, 0.3, 0.85, 0.6, 0.85, 0.05};
    for (int64_t t = 0; t < 10; t++)
        asha_replay(a, t, 1, true, rung0[t]);
    asha_replay(a, 0, 2, true, 0.4);
    asha_replay(a, 1, 2, true, 0.95);
    /* Rung 0, n = 10, top 5: 0.9 (0), 0.85 (6), 0.85 (8), 0.8 (1), 0.7 (2) |
     * 0.6 (7), ... Rung 1, n = 2, top 1: 0.95 (1) | 0.4 (0). */
    static const int64_t paused[] = {0, 1, 2, 6, 7, 8};
    static const int at[] = {1, 1, 0, 0, 0, 0};
    for (int i = 0; i < 6; i++) {
        asha_trial_paused(a, paused[i], -1);
        assert_int_equal(asha_paused_rung(a, paused[i]), at[i]);
    }
    assert_int_equal(asha_paused_rung(a, 3), -1);
    /* Promotable: 1 at rung 1; 6, 8, 2 at rung 0 (not 0: second of 2 at
     * rung 1; not 7: sixth of 10). Highest rung first, then the best score
     * (6 before 2), then the lower number (6 before 8). At most cap of them. */
    hw_expect_promotions(a, 2, (const int64_t[]){1, 6}, 2);
    assert_int_equal(asha_paused_rung(a, 8), 0);
    hw_expect_promotions(a, 16, (const int64_t[]){8, 2}, 2);
    hw_expect_promotions(a, 16, NULL, 0);
    assert_int_equal(asha_paused_rung(a, 0), 1);
    assert_int_equal(asha_paused_rung(a, 7), 0);
    /* rf 2 and even n: ceil = floor, so the endgame has nothing either. */
    assert_int_equal(asha_endgame(a), -1);
    /* Marking twice changes nothing; a trial with no record is not marked. */
    asha_trial_paused(a, 0, -1);
    assert_int_equal(asha_paused_rung(a, 0), 1);
    asha_trial_paused(a, 20, -1);
    assert_int_equal(asha_paused_rung(a, 20), -1);
    asha_free(a);
}

/* ---- the median rule ---- */

static void test_median_by_hand(void **state)
{
    (void)state;
    /* min mode, grace 1, min_samples 3. Values are binary fractions, so
     * every mean below is exact. */
    AshaParams p = hw_params(ASHA_MEDIAN, false, 3);
    Asha *a = hw_new(&p);
    static const double v[3][3] = {{1.0, 0.75, 0.5}, {2.0, 1.0, 0.75}, {0.5, 0.5, 0.5}};
    for (int64_t t = 0; t < 3; t++)
        for (int s = 0; s < 3; s++)
            EXPECT_REPORT(a, t, s + 1, v[t][s], ASHA_CONTINUE, -1); /* < 3 others */
    /* Time 1: running means over [1, 1]: 1.0, 2.0, 0.5 -> median 1.0; best 0.875. */
    EXPECT_REPORT(a, 3, 1, 0.875, ASHA_CONTINUE, -1);
    /* Time 2: means over [1, 2]: 0.875, 1.5, 0.5 -> 0.875; best 0.875: a tie
     * is not worse. */
    EXPECT_REPORT(a, 3, 2, 1.25, ASHA_CONTINUE, -1);
    /* Time 3: means over [1, 3]: 0.75, 1.25, 0.5 -> 0.75; best 0.875 is worse. */
    EXPECT_REPORT(a, 3, 3, 1.0, ASHA_STOP, -1);
    /* Time 1 with four others (trial 3 too): 1.0, 2.0, 0.5, 0.875 -> the
     * mean of the middle two, (0.875 + 1.0)/2 = 0.9375; 1.0 is worse. */
    EXPECT_REPORT(a, 4, 1, 1.0, ASHA_STOP, -1);
    /* Time 4: no other trial has reported that far. */
    EXPECT_REPORT(a, 5, 4, 9.0, ASHA_CONTINUE, -1);
    asha_free(a);

    /* The same others in max mode, where the best is the highest value. */
    p.maximize = true;
    a = hw_new(&p);
    for (int64_t t = 0; t < 3; t++)
        for (int s = 0; s < 3; s++)
            asha_replay(a, t, s + 1, true, v[t][s]);
    /* Time 1: median of 1.0, 2.0, 0.5 is 1.0; best 0.5 is worse. */
    EXPECT_REPORT(a, 3, 1, 0.5, ASHA_STOP, -1);
    /* Time 1, four others: 1.0, 2.0, 0.5, 0.5 -> (0.5 + 1.0)/2 = 0.75; 1.0 is better. */
    EXPECT_REPORT(a, 4, 1, 1.0, ASHA_CONTINUE, -1);
    asha_free(a);
}

static void test_median_grace_and_trial_end(void **state)
{
    (void)state;
    /* min mode, grace 2, min_samples 1. */
    AshaParams p = hw_params(ASHA_MEDIAN, false, 3);
    p.grace_period = 2;
    p.min_samples = 1;
    Asha *a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 0.125, ASHA_CONTINUE, -1);
    EXPECT_REPORT(a, 0, 2, 0.25, ASHA_CONTINUE, -1); /* no other trial */
    EXPECT_REPORT(a, 0, 3, 0.5, ASHA_CONTINUE, -1);
    /* Before the grace period nothing stops. */
    EXPECT_REPORT(a, 1, 1, 9.0, ASHA_CONTINUE, -1);
    /* Time 3: trial 0's mean over [2, 3] is 0.375 (its 0.125 at time 1 is
     * before grace); trial 1's best is 0.75. */
    EXPECT_REPORT(a, 1, 3, 0.75, ASHA_STOP, -1);
    /* The best counts values from before grace too: trial 2's 0.125 at time
     * 1 beats the median at time 3 of 0.375 (trial 0) and 0.75 (trial 1),
     * 0.5625, though its 5.0 there does not. */
    EXPECT_REPORT(a, 2, 1, 0.125, ASHA_CONTINUE, -1);
    EXPECT_REPORT(a, 2, 3, 5.0, ASHA_CONTINUE, -1);
    asha_free(a);

    /* On its end a trial's last result is appended once more. */
    p.grace_period = 1;
    a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 1.0, ASHA_CONTINUE, -1);
    EXPECT_REPORT(a, 0, 2, 0.5, ASHA_CONTINUE, -1);
    /* mean over [1, 2] = 0.75; 0.7 is better. */
    EXPECT_REPORT(a, 1, 2, 0.7, ASHA_CONTINUE, -1);
    asha_trial_end(a, 0, 2, true, 0.5);
    /* now 1.0, 0.5, 0.5: mean 2/3; trial 1's mean over [1, 2] is 0.7; the
     * median of {2/3, 0.7} is 0.6833; 0.6875 is worse. */
    EXPECT_REPORT(a, 2, 2, 0.6875, ASHA_STOP, -1);
    asha_free(a);
}

/* ---- reset, fifo, odd inputs ---- */

static void test_reset_forgets(void **state)
{
    (void)state;
    AshaParams p = hw_params(ASHA_ASHA, true, 3);
    Asha *a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 0.9, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 1, 1, 0.5, ASHA_STOP, 0); /* {0.9} -> 0.9 */
    asha_free(a);

    a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 0.9, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 0, 3, 0.9, ASHA_CONTINUE, 1);
    asha_trial_reset(a, 0);
    EXPECT_REPORT(a, 1, 1, 0.5, ASHA_CONTINUE, 0); /* the 0.9 is gone */
    /* The retry is scored at rung 0 again, against {0.5}. */
    EXPECT_REPORT(a, 0, 1, 0.9, ASHA_CONTINUE, 0);
    EXPECT_REPORT(a, 2, 3, 0.1, ASHA_CONTINUE, 1); /* rung 1 is empty too */
    asha_free(a);

    /* promote: a reset trial is not paused any more. */
    p.promote = true;
    a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 0.5, ASHA_PAUSE, 0);
    asha_trial_reset(a, 0);
    assert_int_equal(asha_paused_rung(a, 0), -1);
    hw_expect_promotions(a, 16, NULL, 0);
    assert_int_equal(asha_endgame(a), -1);
    EXPECT_REPORT(a, 1, 1, 0.4, ASHA_PAUSE, 0); /* n = 1 again */
    asha_free(a);

    /* median, min_samples 1: a reset trial has no results to compare with. */
    p = hw_params(ASHA_MEDIAN, false, 3);
    p.min_samples = 1;
    a = hw_new(&p);
    EXPECT_REPORT(a, 0, 1, 0.25, ASHA_CONTINUE, -1);
    EXPECT_REPORT(a, 0, 2, 0.25, ASHA_CONTINUE, -1);
    asha_trial_reset(a, 0);
    EXPECT_REPORT(a, 1, 2, 1.0, ASHA_CONTINUE, -1); /* would stop against 0.25 */
    asha_free(a);
}

static void test_fifo_always_continues(void **state)
{
    (void)state;
    AshaParams p = hw_params(ASHA_FIFO, false, 3);
    Asha *a = hw_new(&p);
    for (int64_t t = 0; t < 20; t++)
        for (double time = 0; time < 200; time += 7)
            EXPECT_REPORT(a, t, time, (double)t * 1e3, ASHA_CONTINUE, -1);
    asha_trial_end(a, 3, 200, true, 1);
    asha_trial_reset(a, 3);
    asha_trial_paused(a, 4, -1);
    assert_int_equal(asha_paused_rung(a, 4), -1);
    int64_t out[4];
    assert_int_equal(asha_promotions(a, out, 4), 0);
    assert_int_equal(asha_endgame(a), -1);
    asha_free(a);
}

static void test_sparse_numbers_and_odd_calls(void **state)
{
    (void)state;
    static const int64_t numbers[] = {100000, 0, 99999, 50000, 7, 65536};
    const int n = (int)(sizeof numbers / sizeof numbers[0]);
    static const AshaType types[] = {ASHA_ASHA, ASHA_HYPERBAND, ASHA_MEDIAN, ASHA_FIFO};
    for (int ti = 0; ti < 4; ti++) {
        for (int promote = 0; promote < 2; promote++) {
            AshaParams p = hw_params(types[ti], promote, 3);
            p.promote = promote;
            p.brackets = 2;
            p.min_samples = 1;
            Asha *a = hw_new(&p);
            /* Calls about trials never seen. */
            assert_int_equal(asha_paused_rung(a, 12345), -1);
            asha_trial_reset(a, 77777);
            asha_trial_paused(a, 88888, -1);
            asha_trial_end(a, 99998, 5, false, 0);
            assert_int_equal(asha_paused_rung(a, 88888), -1);
            int rung;
            /* No value anywhere: nothing is ever judged. */
            for (int i = 0; i < 1000; i++) {
                int64_t t = numbers[i % n] - (i / n) % 3;
                assert_int_equal(asha_report(a, t, (double)(i / n), false, 0, &rung),
                                 ASHA_CONTINUE);
                assert_int_equal(rung, -1);
            }
            /* Values, ends, resets and promotions, as the daemon would call
             * them: a trial told anything but continue reports no more
             * until it is promoted or reset. */
            bool active[6] = {true, true, true, true, true, true};
            for (double time = 1; time <= 90; time += 1) {
                for (int i = 0; i < n; i++) {
                    if (!active[i])
                        continue;
                    AshaDecision d = asha_report(a, numbers[i], time, true, 0.125 * (i + time),
                                                 &rung);
                    assert_true(rung >= -1 && rung < ASHA_MAX_RUNGS);
                    active[i] = d == ASHA_CONTINUE;
                }
                int64_t out[8];
                int64_t np = asha_promotions(a, out, 8);
                assert_true(np >= 0 && np <= n);
                for (int64_t k = 0; k < np; k++)
                    for (int i = 0; i < n; i++)
                        active[i] = active[i] || numbers[i] == out[k];
                int i = (int)time % n;
                if ((int)time % 10 == 0) {
                    asha_trial_reset(a, numbers[i]);
                    active[i] = true;
                } else if ((int)time % 13 == 0 && active[i]) {
                    asha_trial_end(a, numbers[i], time, true, 0.5);
                    active[i] = false;
                }
            }
            while (asha_endgame(a) >= 0)
                ;
            asha_free(a);
        }
    }
    asha_free(NULL);
}

/* ---- the model: a brute-force reading of asha.h ---- */

typedef struct RefRec {
    int64_t trial;
    int bracket;
    int rung;     /* index within the bracket */
    double score; /* the value, negated for min: higher is better */
} RefRec;

typedef struct RefTrial {
    int64_t number;
    int bracket;            /* from asha_bracket() */
    int paused;             /* rung index it waits at, or -1 */
    double *times, *values; /* median: every result, in order */
    int n_results, cap_results;
} RefTrial;

typedef struct Ref {
    AshaParams p;
    int n_brackets; /* 0 for fifo and median */
    bool promote;
    RefRec *recs;
    int n_recs, cap_recs;
    RefTrial *trials; /* indexed as the driver's trials */
    int n_trials;
    long empty_windows; /* median: others left out for having no result in the window */
} Ref;

/* floor(log(max_t/grace)/log(rf)): the top k of bracket 0. */
static int ref_top_k(const AshaParams *p)
{
    return (int)floor(log(p->max_t / p->grace_period) / log(p->rf));
}

static int ref_n_rungs(const AshaParams *p, int s)
{
    int n = ref_top_k(p) - s + 1;
    return n > 0 ? n : 0;
}

static double ref_milestone(const AshaParams *p, int s, int k)
{
    return p->grace_period * pow(p->rf, k + s);
}

static void ref_init(Ref *r, const AshaParams *p, int n_trials)
{
    memset(r, 0, sizeof *r);
    r->p = *p;
    int max = ref_top_k(p) + 1;
    if (p->type == ASHA_HYPERBAND)
        r->n_brackets = max;
    else if (p->type == ASHA_ASHA)
        r->n_brackets = p->brackets < 1 ? 1 : (p->brackets > max ? max : p->brackets);
    r->promote = p->type == ASHA_ASHA && p->promote;
    r->n_trials = n_trials;
    r->trials = calloc((size_t)n_trials, sizeof *r->trials);
    assert_non_null(r->trials);
    for (int i = 0; i < n_trials; i++)
        r->trials[i].paused = -1;
}

static void ref_close(Ref *r)
{
    for (int i = 0; i < r->n_trials; i++) {
        free(r->trials[i].times);
        free(r->trials[i].values);
    }
    free(r->trials);
    free(r->recs);
}

static double ref_score(const Ref *r, double value)
{
    return r->p.maximize ? value : -value;
}

/* The index of trial's record at (bracket, rung), or -1. */
static int ref_find(const Ref *r, int64_t trial, int bracket, int rung)
{
    for (int j = 0; j < r->n_recs; j++)
        if (r->recs[j].trial == trial && r->recs[j].bracket == bracket && r->recs[j].rung == rung)
            return j;
    return -1;
}

static void ref_record(Ref *r, int i, int rung, double score)
{
    if (r->n_recs == r->cap_recs) {
        r->cap_recs = r->cap_recs ? 2 * r->cap_recs : 64;
        r->recs = realloc(r->recs, (size_t)r->cap_recs * sizeof *r->recs);
        assert_non_null(r->recs);
    }
    r->recs[r->n_recs++] = (RefRec){r->trials[i].number, r->trials[i].bracket, rung, score};
}

/* The highest rung of the trial's bracket at or below time where it has no
 * record, or -1. */
static int ref_rung_to_judge(const Ref *r, int i, double time)
{
    const RefTrial *t = &r->trials[i];
    for (int k = ref_n_rungs(&r->p, t->bracket) - 1; k >= 0; k--)
        if (ref_milestone(&r->p, t->bracket, k) <= time &&
            ref_find(r, t->number, t->bracket, k) < 0)
            return k;
    return -1;
}

/* The scores recorded at (bracket, rung) into out (room for n_recs). */
static int ref_scores(const Ref *r, int bracket, int rung, double *out)
{
    int n = 0;
    for (int j = 0; j < r->n_recs; j++)
        if (r->recs[j].bracket == bracket && r->recs[j].rung == rung)
            out[n++] = r->recs[j].score;
    return n;
}

/* numpy.percentile(v, pct), method "linear", as numpy's function_base.py
 * computes it: q = pct / 100, virtual index (n - 1) * q clipped to the
 * ends, and the lerp between the two neighbours taken from the upper one
 * when the fraction is >= 0.5. Sorts v. */
static double ref_percentile(double *v, int n, double pct)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    double q = pct / 100;
    double vi = (double)(n - 1) * q;
    if (vi >= n - 1)
        return v[n - 1];
    if (vi < 0)
        return v[0];
    int lo = (int)floor(vi);
    double g = vi - lo, a = v[lo], b = v[lo + 1], d = b - a;
    return g >= 0.5 ? b - d * (1 - g) : a + d * g;
}

/* The 0-based rank of a score at (bracket, rung): records better, or equal
 * and of a lower trial number, rank above it. */
static int ref_rank(const Ref *r, int bracket, int rung, int64_t trial, double score)
{
    int rank = 0;
    for (int j = 0; j < r->n_recs; j++) {
        const RefRec *x = &r->recs[j];
        if (x->bracket == bracket && x->rung == rung &&
            (x->score > score || (x->score == score && x->trial < trial)))
            rank++;
    }
    return rank;
}

static int ref_count(const Ref *r, int bracket, int rung)
{
    int n = 0;
    for (int j = 0; j < r->n_recs; j++)
        n += r->recs[j].bracket == bracket && r->recs[j].rung == rung;
    return n;
}

static void ref_append(RefTrial *t, double time, double value)
{
    if (t->n_results == t->cap_results) {
        t->cap_results = t->cap_results ? 2 * t->cap_results : 32;
        t->times = realloc(t->times, (size_t)t->cap_results * sizeof *t->times);
        t->values = realloc(t->values, (size_t)t->cap_results * sizeof *t->values);
        assert_true(t->times != NULL && t->values != NULL);
    }
    t->times[t->n_results] = time;
    t->values[t->n_results] = value;
    t->n_results++;
}

/* Ray's MedianStoppingRule.on_result with hard_stop. */
static AshaDecision ref_median(Ref *r, int i, double time, double value)
{
    RefTrial *me = &r->trials[i];
    ref_append(me, time, value);
    if (time < r->p.grace_period)
        return ASHA_CONTINUE;
    double means[64];
    int n = 0;
    for (int j = 0; j < r->n_trials; j++) {
        const RefTrial *o = &r->trials[j];
        if (j == i || o->n_results == 0 || o->times[o->n_results - 1] < time)
            continue;
        double sum = 0;
        int cnt = 0;
        for (int k = 0; k < o->n_results; k++)
            if (o->times[k] >= r->p.grace_period && o->times[k] <= time) {
                sum += o->values[k];
                cnt++;
            }
        /* No result in [grace, time]: Ray's mean would be NaN; asha.c
         * leaves the trial out (see the note at test_random_sequences). */
        if (cnt == 0) {
            r->empty_windows++;
            continue;
        }
        means[n++] = sum / cnt;
    }
    if (n == 0 || n < r->p.min_samples)
        return ASHA_CONTINUE;
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && means[b - 1] > means[b]; b--) {
            double x = means[b];
            means[b] = means[b - 1];
            means[b - 1] = x;
        }
    double median = n % 2 ? means[n / 2] : (means[n / 2 - 1] + means[n / 2]) / 2;
    double best = me->values[0];
    for (int k = 1; k < me->n_results; k++)
        if (r->p.maximize ? me->values[k] > best : me->values[k] < best)
            best = me->values[k];
    bool worse = r->p.maximize ? best < median : best > median;
    return worse ? ASHA_STOP : ASHA_CONTINUE;
}

static AshaDecision ref_report(Ref *r, int i, double time, bool has_value, double value, int *rung)
{
    *rung = -1;
    if (r->p.type == ASHA_FIFO || !has_value)
        return ASHA_CONTINUE;
    if (r->p.type == ASHA_MEDIAN)
        return ref_median(r, i, time, value);
    if (time >= r->p.max_t)
        return ASHA_COMPLETE;
    int k = ref_rung_to_judge(r, i, time);
    if (k < 0)
        return ASHA_CONTINUE;
    RefTrial *t = &r->trials[i];
    double score = ref_score(r, value);
    AshaDecision d = ASHA_CONTINUE;
    double *before = malloc((size_t)(r->n_recs + 1) * sizeof *before);
    assert_non_null(before);
    int n = ref_scores(r, t->bracket, k, before);
    if (!r->promote && n > 0 && score < ref_percentile(before, n, (1 - 1 / r->p.rf) * 100))
        d = ASHA_STOP;
    free(before);
    ref_record(r, i, k, score);
    *rung = k;
    if (r->promote) {
        int rank = ref_rank(r, t->bracket, k, t->number, score);
        if (rank >= (int)floor(ref_count(r, t->bracket, k) / r->p.rf)) {
            t->paused = k;
            d = ASHA_PAUSE;
        }
    }
    return d;
}

/* Ray's on_trial_complete: the bracket's on_result without the max_t test. */
static void ref_trial_end(Ref *r, int i, double time, bool has_value, double value)
{
    RefTrial *t = &r->trials[i];
    t->paused = -1;
    if (r->p.type == ASHA_FIFO || !has_value)
        return;
    if (r->p.type == ASHA_MEDIAN) {
        ref_append(t, time, value);
        return;
    }
    int k = ref_rung_to_judge(r, i, time);
    if (k >= 0)
        ref_record(r, i, k, ref_score(r, value));
}

static void ref_reset(Ref *r, int i)
{
    RefTrial *t = &r->trials[i];
    int kept = 0;
    for (int j = 0; j < r->n_recs; j++)
        if (r->recs[j].trial != t->number)
            r->recs[kept++] = r->recs[j];
    r->n_recs = kept;
    t->n_results = 0;
    t->paused = -1;
}

typedef struct RefCand {
    int64_t trial;
    int index;
    double milestone, score;
} RefCand;

static bool ref_cand_before(const RefCand *x, const RefCand *y)
{
    if (x->milestone != y->milestone)
        return x->milestone > y->milestone;
    if (x->score != y->score)
        return x->score > y->score;
    return x->trial < y->trial;
}

/* Paused trials ranking in the top floor(n/rf) (ceil for the endgame) of
 * their rung, in promotion order: highest milestone, best score, lowest
 * number. */
static int ref_candidates(const Ref *r, bool endgame, RefCand *out)
{
    int n = 0;
    for (int i = 0; i < r->n_trials; i++) {
        const RefTrial *t = &r->trials[i];
        if (t->paused < 0)
            continue;
        int j = ref_find(r, t->number, t->bracket, t->paused);
        assert_true(j >= 0);
        double share = ref_count(r, t->bracket, t->paused) / r->p.rf;
        int top = (int)(endgame ? ceil(share) : floor(share));
        if (ref_rank(r, t->bracket, t->paused, t->number, r->recs[j].score) < top)
            out[n++] = (RefCand){t->number, i, ref_milestone(&r->p, t->bracket, t->paused),
                                 r->recs[j].score};
    }
    for (int a = 0; a < n; a++) /* selection sort */
        for (int b = a + 1; b < n; b++)
            if (ref_cand_before(&out[b], &out[a])) {
                RefCand x = out[a];
                out[a] = out[b];
                out[b] = x;
            }
    return n;
}

static int ref_promotions(Ref *r, int64_t *trials)
{
    RefCand c[64];
    int n = ref_candidates(r, false, c);
    for (int k = 0; k < n; k++) {
        trials[k] = c[k].trial;
        r->trials[c[k].index].paused = -1;
    }
    return n;
}

static int64_t ref_endgame(Ref *r)
{
    RefCand c[64];
    if (ref_candidates(r, true, c) == 0)
        return -1;
    r->trials[c[0].index].paused = -1;
    return c[0].trial;
}

/* ---- the random sequences ---- */

#define FUZZ_SEQUENCES 1000
#define FUZZ_MAX_TRIALS 40
#define FUZZ_MAX_STEPS 20000 /* a safety net; sequences end long before */
#define FUZZ_MAX_REPORTED 10 /* failing sequences described in full */

static const char *const fuzz_type_names[] = {"fifo", "asha", "hyperband", "median"};
static const char *const fuzz_decision_names[] = {"continue", "stop", "complete", "pause"};

/* splitmix64: the inputs of sequence i come from seed i alone. */
typedef struct FuzzRng {
    uint64_t s;
} FuzzRng;

static uint64_t fuzz_next(FuzzRng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double fuzz_unif(FuzzRng *r)
{
    return (double)(fuzz_next(r) >> 11) * 0x1.0p-53;
}

static int fuzz_int(FuzzRng *r, int lo, int hi)
{
    return lo + (int)(fuzz_next(r) % (uint64_t)(hi - lo + 1));
}

static bool fuzz_chance(FuzzRng *r, double p)
{
    return fuzz_unif(r) < p;
}

typedef enum { FZ_PENDING, FZ_RUNNING, FZ_PAUSED, FZ_DONE } FuzzState;

typedef struct FuzzEvent {
    bool end; /* asha_trial_end, else a report */
    double time;
    bool has_value;
    double value;
} FuzzEvent;

typedef struct FuzzTrial {
    int64_t number;
    FuzzState state;
    double time;   /* of the last report, 0 before the first */
    bool reported; /* since its (re)start */
    bool last_has_value;
    double last_value;
    bool forgotten; /* asha_trial_forget since its end */
    FuzzEvent *log; /* since its last reset: what a reload replays */
    int n_log, cap_log;
} FuzzTrial;

typedef struct FuzzStats {
    long sequences, by_type[4], promote, failed;
    long reports, stops, completes, pauses, promotions, endgames, ends, resets;
    long reloads, empty_windows, steps_capped, forgets;
} FuzzStats;

typedef struct FuzzSeq {
    int index, step;
    bool trace, failed;
    FuzzRng rng;
    AshaParams p;
    int n_trials, concurrency, next_pending, resets_left;
    bool discrete, half_steps;
    bool forget; /* ended trials are forgotten, as rungd's core_release does */
    double reload_rate;
    FuzzTrial trials[FUZZ_MAX_TRIALS];
    Asha *a;
    Ref ref;
    FuzzStats *stats;
} FuzzSeq;

static void fuzz_params_text(const AshaParams *p, char *buf, size_t size)
{
    snprintf(buf, size,
             "type=%s rf=%g grace=%g max_t=%g brackets=%d maximize=%d promote=%d "
             "min_samples=%lld seed=%llu",
             fuzz_type_names[p->type], p->rf, p->grace_period, p->max_t, p->brackets, p->maximize,
             p->promote, (long long)p->min_samples, (unsigned long long)p->seed);
}

static void fuzz_fail(FuzzSeq *s, const char *fmt, ...)
{
    if (s->failed)
        return;
    s->failed = true;
    s->stats->failed++;
    if (s->stats->failed > FUZZ_MAX_REPORTED)
        return;
    char what[512], params[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fuzz_params_text(&s->p, params, sizeof params);
    print_error("asha: sequence %d, step %d: %s\n  params: %s\n"
                "  trace it with TEST_ASHA_SEQ=%d\n",
                s->index, s->step, what, params, s->index);
}

static void fuzz_log(FuzzTrial *t, bool end, double time, bool has_value, double value)
{
    if (t->n_log == t->cap_log) {
        t->cap_log = t->cap_log ? 2 * t->cap_log : 32;
        t->log = realloc(t->log, (size_t)t->cap_log * sizeof *t->log);
        assert_non_null(t->log);
    }
    t->log[t->n_log++] = (FuzzEvent){end, time, has_value, value};
}

static double fuzz_value(FuzzSeq *s)
{
    /* Binary fractions make ties (and exact sums); the rest is continuous. */
    return s->discrete ? 0.125 * fuzz_int(&s->rng, 1, 8) : fuzz_unif(&s->rng);
}

static double fuzz_time_step(FuzzSeq *s, bool first)
{
    double u = fuzz_unif(&s->rng);
    int k;
    if (first && u < 0.1)
        k = 0;
    else if (u < 0.7)
        k = 1;
    else if (u < 0.9)
        k = fuzz_int(&s->rng, 2, 4);
    else
        k = fuzz_int(&s->rng, 1, (int)(s->p.max_t / 2)); /* skips rungs */
    return s->half_steps ? 0.5 * k : k;
}

/* A random trial in the given state (any started one for FZ_DONE), or -1. */
static int fuzz_pick(FuzzSeq *s, FuzzState want)
{
    int idx[FUZZ_MAX_TRIALS], n = 0;
    for (int i = 0; i < s->n_trials; i++) {
        FuzzState st = s->trials[i].state;
        if (want == FZ_DONE ? st != FZ_PENDING : st == want)
            idx[n++] = i;
    }
    return n ? idx[fuzz_int(&s->rng, 0, n - 1)] : -1;
}

static void fuzz_end(FuzzSeq *s, int i)
{
    FuzzTrial *t = &s->trials[i];
    bool has = t->reported && t->last_has_value;
    double time = t->reported ? t->time : 0, value = has ? t->last_value : 0;
    if (s->trace)
        print_message("  [%d] trial %lld ends at %g%s value %.17g\n", s->step, (long long)t->number,
                      time, has ? "" : " without", value);
    ref_trial_end(&s->ref, i, time, has, value);
    asha_trial_end(s->a, t->number, time, has, value);
    fuzz_log(t, true, time, has, value);
    t->state = FZ_DONE;
    s->stats->ends++;
    if (s->forget) { /* the model keeps everything: decisions must not change */
        asha_trial_forget(s->a, t->number);
        t->forgotten = true;
        s->stats->forgets++;
    }
}

static void fuzz_report(FuzzSeq *s, int i)
{
    FuzzTrial *t = &s->trials[i];
    double time = t->time + fuzz_time_step(s, !t->reported);
    bool has = fuzz_chance(&s->rng, 0.95);
    double value = fuzz_value(s);
    int want_rung, got_rung = -2;
    AshaDecision want = ref_report(&s->ref, i, time, has, value, &want_rung);
    AshaDecision got = asha_report(s->a, t->number, time, has, value, &got_rung);
    if (s->trace)
        print_message("  [%d] trial %lld (bracket %d) reports %g%s value %.17g: %s at rung %d\n",
                      s->step, (long long)t->number, s->ref.trials[i].bracket, time,
                      has ? "" : " without", value, fuzz_decision_names[got], got_rung);
    if (want != got || want_rung != got_rung) {
        /* What the model judged by: the other records at that rung. */
        double cut = NAN;
        int n = 0;
        if (want_rung >= 0) {
            double *v = malloc((size_t)s->ref.n_recs * sizeof *v);
            assert_non_null(v);
            for (int j = 0; j < s->ref.n_recs; j++) {
                const RefRec *x = &s->ref.recs[j];
                if (x->bracket == s->ref.trials[i].bracket && x->rung == want_rung &&
                    x->trial != t->number)
                    v[n++] = x->score;
            }
            if (n > 0)
                cut = ref_percentile(v, n, (1 - 1 / s->p.rf) * 100);
            free(v);
        }
        fuzz_fail(s,
                  "trial %lld (bracket %d) reports time %g value %.17g%s: expected %s at rung "
                  "%d, got %s at rung %d (the model's cutoff of the %d scores there: %.17g)",
                  (long long)t->number, s->ref.trials[i].bracket, time, value,
                  has ? "" : " (no value)", fuzz_decision_names[want], want_rung,
                  fuzz_decision_names[got], got_rung, n, cut);
        return;
    }
    fuzz_log(t, false, time, has, value);
    t->time = time;
    t->reported = true;
    t->last_has_value = has;
    t->last_value = value;
    s->stats->reports++;
    bool no_max_t = s->p.type == ASHA_MEDIAN || s->p.type == ASHA_FIFO;
    switch (want) {
    case ASHA_STOP:
    case ASHA_COMPLETE:
        s->stats->stops += want == ASHA_STOP;
        s->stats->completes += want == ASHA_COMPLETE;
        t->state = FZ_DONE;
        if (fuzz_chance(&s->rng, 0.8))
            fuzz_end(s, i);
        break;
    case ASHA_PAUSE:
        s->stats->pauses++;
        t->state = FZ_PAUSED;
        break;
    case ASHA_CONTINUE:
        if (no_max_t && time >= s->p.max_t) /* the trainable's own last epoch */
            fuzz_end(s, i);
        break;
    }
}

static void fuzz_reset(FuzzSeq *s, int i)
{
    FuzzTrial *t = &s->trials[i];
    if (s->trace)
        print_message("  [%d] trial %lld is reset\n", s->step, (long long)t->number);
    ref_reset(&s->ref, i);
    asha_trial_reset(s->a, t->number);
    t->n_log = 0;
    t->time = 0;
    t->reported = false;
    t->last_has_value = false;
    t->forgotten = false;
    t->state = FZ_RUNNING;
    s->resets_left--;
    s->stats->resets++;
}

/* The daemon restarts: a new Asha rebuilt from each trial's stored reports
 * and ends, one trial after the other, and the paused trials marked. */
static void fuzz_reload(FuzzSeq *s)
{
    if (s->trace)
        print_message("  [%d] reload\n", s->step);
    Asha *b = asha_new(&s->p);
    assert_non_null(b);
    for (int i = 0; i < s->n_trials; i++) {
        const FuzzTrial *t = &s->trials[i];
        for (int e = 0; e < t->n_log; e++) {
            const FuzzEvent *ev = &t->log[e];
            if (ev->end)
                asha_trial_end(b, t->number, ev->time, ev->has_value, ev->value);
            else
                asha_replay(b, t->number, ev->time, ev->has_value, ev->value);
        }
        if (t->forgotten) /* as rungd's load of an ended trial */
            asha_trial_forget(b, t->number);
    }
    for (int i = 0; i < s->n_trials; i++) {
        RefTrial *rt = &s->ref.trials[i];
        if (rt->paused < 0)
            continue;
        /* rungd stores the rung a trial paused at and marks it there. */
        asha_trial_paused(b, rt->number, rt->paused);
    }
    asha_free(s->a);
    s->a = b;
    s->stats->reloads++;
}

static void fuzz_promotions(FuzzSeq *s)
{
    int64_t want[FUZZ_MAX_TRIALS], got[FUZZ_MAX_TRIALS];
    int nw = ref_promotions(&s->ref, want);
    int64_t ng = asha_promotions(s->a, got, FUZZ_MAX_TRIALS);
    bool same = ng == nw;
    for (int k = 0; same && k < nw; k++)
        same = want[k] == got[k];
    if (!same) {
        char ws[512] = "", gs[512] = "";
        for (int k = 0; k < nw; k++)
            snprintf(ws + strlen(ws), sizeof ws - strlen(ws), " %lld", (long long)want[k]);
        for (int64_t k = 0; k < ng && k < FUZZ_MAX_TRIALS; k++)
            snprintf(gs + strlen(gs), sizeof gs - strlen(gs), " %lld", (long long)got[k]);
        fuzz_fail(s, "promotions: expected [%s ], got [%s ]", ws, gs);
        return;
    }
    for (int k = 0; k < nw; k++) {
        for (int i = 0; i < s->n_trials; i++) {
            if (s->trials[i].number != want[k])
                continue;
            if (s->trace)
                print_message("  [%d] trial %lld is promoted\n", s->step, (long long)want[k]);
            assert_int_equal(s->trials[i].state, FZ_PAUSED);
            s->trials[i].state = FZ_RUNNING;
        }
    }
    s->stats->promotions += nw;
}

static void fuzz_check_paused(FuzzSeq *s)
{
    for (int i = 0; i < s->n_trials && !s->failed; i++) {
        int want = s->ref.trials[i].paused;
        int got = asha_paused_rung(s->a, s->trials[i].number);
        if (want != got)
            fuzz_fail(s, "trial %lld: expected paused at rung %d, got %d",
                      (long long)s->trials[i].number, want, got);
    }
}

/* Nothing runs and nothing is left to start. Returns whether a trial resumed. */
static bool fuzz_endgame(FuzzSeq *s)
{
    int64_t want = ref_endgame(&s->ref);
    int64_t got = asha_endgame(s->a);
    if (s->trace)
        print_message("  [%d] endgame: %lld\n", s->step, (long long)got);
    if (want != got) {
        fuzz_fail(s, "endgame: expected %lld, got %lld", (long long)want, (long long)got);
        return false;
    }
    if (want >= 0) {
        for (int i = 0; i < s->n_trials; i++)
            if (s->trials[i].number == want)
                s->trials[i].state = FZ_RUNNING;
        s->stats->endgames++;
        return true;
    }
    /* The rest end as stopped. */
    for (int i = 0; i < s->n_trials; i++)
        if (s->trials[i].state == FZ_PAUSED)
            fuzz_end(s, i);
    fuzz_check_paused(s);
    return false;
}

static void fuzz_setup(FuzzSeq *s, int index, FuzzStats *stats, bool trace)
{
    memset(s, 0, sizeof *s);
    s->index = index;
    s->trace = trace;
    s->stats = stats;
    s->rng.s = 0x5eed0000ULL + (uint64_t)index;
    FuzzRng *r = &s->rng;
    AshaParams *p = &s->p;
    double u = fuzz_unif(r);
    p->type = u < 0.65 ? ASHA_ASHA : u < 0.80 ? ASHA_HYPERBAND : u < 0.96 ? ASHA_MEDIAN : ASHA_FIFO;
    static const double rfs[] = {2, 3, 4};
    p->rf = fuzz_chance(r, 0.15) ? 2.5 : rfs[fuzz_int(r, 0, 2)];
    p->grace_period = fuzz_int(r, 1, 3);
    p->max_t = fuzz_int(r, 9, 100);
    p->maximize = fuzz_chance(r, 0.5);
    p->promote = fuzz_chance(r, 0.5); /* asha only; the others must ignore it */
    p->min_samples = fuzz_int(r, 1, 4);
    p->seed = fuzz_next(r);
    p->brackets = fuzz_int(r, 1, ref_top_k(p) + 1);
    s->n_trials = fuzz_int(r, 5, FUZZ_MAX_TRIALS);
    s->concurrency = fuzz_chance(r, 0.2) ? s->n_trials : fuzz_int(r, 1, 8);
    s->resets_left = fuzz_int(r, 0, 4);
    s->discrete = fuzz_chance(r, 0.5);
    s->half_steps = fuzz_chance(r, 0.15);
    s->reload_rate = fuzz_chance(r, 0.25) ? 0.01 : 0;
    s->forget = index % 2 == 1; /* not drawn: the other draws stay as they were */
    bool sparse = fuzz_chance(r, 0.1);
    for (int i = 0; i < s->n_trials; i++) {
        int64_t number = i;
        if (sparse) { /* distinct numbers up to 100,000 */
            bool dup;
            do {
                number = fuzz_int(r, 0, 100000);
                dup = false;
                for (int j = 0; j < i; j++)
                    dup = dup || s->trials[j].number == number;
            } while (dup);
        }
        s->trials[i].number = number;
    }

    s->a = asha_new(p);
    assert_non_null(s->a);
    ref_init(&s->ref, p, s->n_trials);
    const AshaParams *ap = asha_params(s->a);
    for (int i = 0; i < s->n_trials; i++) {
        s->ref.trials[i].number = s->trials[i].number;
        int b = s->ref.n_brackets ? asha_bracket(ap, s->trials[i].number) : 0;
        if (s->ref.n_brackets && (b < 0 || b >= s->ref.n_brackets))
            fuzz_fail(s, "trial %lld drew bracket %d of %d", (long long)s->trials[i].number, b,
                      s->ref.n_brackets);
        s->ref.trials[i].bracket = b;
    }
    /* The model's brackets and milestones are asha.c's. */
    if (asha_max_brackets(p) != ref_top_k(p) + 1)
        fuzz_fail(s, "asha_max_brackets %d, expected %d", asha_max_brackets(p), ref_top_k(p) + 1);
    if (s->ref.n_brackets && ap->brackets != s->ref.n_brackets)
        fuzz_fail(s, "brackets %d, expected %d", ap->brackets, s->ref.n_brackets);
    for (int b = 0; b < s->ref.n_brackets; b++) {
        double m[ASHA_MAX_RUNGS];
        int n = asha_rungs(p, b, m);
        if (n != ref_n_rungs(p, b))
            fuzz_fail(s, "bracket %d has %d rungs, expected %d", b, n, ref_n_rungs(p, b));
        for (int k = 0; k < n && k < ref_n_rungs(p, b); k++)
            if (m[k] != ref_milestone(p, b, k))
                fuzz_fail(s, "bracket %d rung %d at %.17g, expected %.17g", b, k, m[k],
                          ref_milestone(p, b, k));
    }
    stats->sequences++;
    stats->by_type[p->type]++;
    stats->promote += s->ref.promote;
    if (trace) {
        char text[256];
        fuzz_params_text(p, text, sizeof text);
        print_message("sequence %d: %s; %d trials, concurrency %d%s%s\n", index, text, s->n_trials,
                      s->concurrency, s->discrete ? ", discrete values" : "",
                      sparse ? ", sparse numbers" : "");
    }
}

static void fuzz_run(FuzzSeq *s)
{
    for (s->step = 0; !s->failed; s->step++) {
        if (s->step == FUZZ_MAX_STEPS) {
            s->stats->steps_capped++;
            break;
        }
        int running = 0;
        for (int i = 0; i < s->n_trials; i++)
            running += s->trials[i].state == FZ_RUNNING;
        bool pending = s->next_pending < s->n_trials;
        if (pending && running < s->concurrency && (running == 0 || fuzz_chance(&s->rng, 0.3))) {
            s->trials[s->next_pending++].state = FZ_RUNNING;
            continue;
        }
        if (running == 0) {
            if (fuzz_endgame(s))
                continue;
            break;
        }
        double u = fuzz_unif(&s->rng);
        if (u < 0.01 && s->resets_left > 0)
            fuzz_reset(s, fuzz_pick(s, FZ_DONE));
        else if (u < 0.04)
            fuzz_end(s, fuzz_pick(s, FZ_RUNNING));
        else if (u < 0.04 + s->reload_rate)
            fuzz_reload(s);
        else
            fuzz_report(s, fuzz_pick(s, FZ_RUNNING));
        if (!s->failed)
            fuzz_promotions(s);
        fuzz_check_paused(s);
    }
}

static void fuzz_close(FuzzSeq *s)
{
    s->stats->empty_windows += s->ref.empty_windows;
    for (int i = 0; i < s->n_trials; i++)
        free(s->trials[i].log);
    ref_close(&s->ref);
    asha_free(s->a);
}

/* Notes on the model where asha.h leaves a choice:
 * - median: an "other" trial with no result in [grace_period, time] has no
 *   running mean; it is left out, and min_samples counts the means left
 *   (Ray would take NaN and then stop the trial).
 * - promotion order "highest rung first" compares milestones, so across
 *   brackets a rung of a later bracket may come first.
 * - after a reload a paused trial is marked at the rung it paused at (rungd
 *   stores it), not the highest it recorded at (they differ after the
 *   skipped-rung quirk). */
static void test_random_sequences(void **state)
{
    (void)state;
    FuzzStats stats;
    memset(&stats, 0, sizeof stats);
    const char *only = getenv("TEST_ASHA_SEQ");
    int first = 0, last = FUZZ_SEQUENCES - 1;
    if (only != NULL && *only != '\0')
        first = last = atoi(only);
    for (int index = first; index <= last; index++) {
        FuzzSeq *s = malloc(sizeof *s);
        assert_non_null(s);
        fuzz_setup(s, index, &stats, first == last);
        fuzz_run(s);
        fuzz_close(s);
        free(s);
    }
    print_message("asha: %ld sequences (%ld asha, %ld of them promote; %ld hyperband, "
                  "%ld median, %ld fifo): %ld reports, %ld stops, %ld completes, %ld pauses, "
                  "%ld promotions, %ld endgame picks, %ld ends, %ld resets, %ld reloads, "
                  "%ld median means left out, %ld capped, %ld ended trials forgotten; "
                  "%ld disagree\n",
                  stats.sequences, stats.by_type[ASHA_ASHA], stats.promote,
                  stats.by_type[ASHA_HYPERBAND], stats.by_type[ASHA_MEDIAN],
                  stats.by_type[ASHA_FIFO], stats.reports, stats.stops, stats.completes,
                  stats.pauses, stats.promotions, stats.endgames, stats.ends, stats.resets,
                  stats.reloads, stats.empty_windows, stats.steps_capped, stats.forgets,
                  stats.failed);
    assert_int_equal(stats.failed, 0);
}

/* ---- several objectives (asha.h): by hand, and a brute-force replay ---- */

static AshaPoint mo_pt2(double x, double y, bool feasible)
{
    AshaPoint pt;
    memset(&pt, 0, sizeof pt);
    pt.loss[0] = x;
    pt.loss[1] = y;
    pt.feasible = feasible;
    return pt;
}

#define EXPECT_POINT(a, trial, time, x, y, feasible, decision, rung_index)                         \
    do {                                                                                           \
        int rung_ = -2;                                                                            \
        AshaPoint pt_ = mo_pt2((x), (y), (feasible));                                              \
        assert_int_equal(asha_report_point((a), (trial), (time), &pt_, &rung_), (decision));       \
        assert_int_equal(rung_, (rung_index));                                                     \
    } while (0)

/* rf = 3 at the first rung: a trial goes on when fewer than ceil(n/3) of
 * the n records rank above it (feasible first, then front, then crowding). */
static void test_points_by_hand(void **state)
{
    (void)state;
    AshaParams p = hw_params(ASHA_ASHA, false, 3);
    p.objectives = 2;
    Asha *a = hw_new(&p);
    EXPECT_POINT(a, 0, 1, 1, 1, true, ASHA_CONTINUE, 0);  /* first at the rung */
    EXPECT_POINT(a, 1, 1, 2, 2, true, ASHA_STOP, 0);      /* 0 dominates it; top 1 of 2 */
    EXPECT_POINT(a, 2, 1, 0, 3, true, ASHA_CONTINUE, 0);  /* on 0's front, both extremes */
    EXPECT_POINT(a, 3, 1, 0.5, 0.5, false, ASHA_STOP, 0); /* infeasible: after 3 feasible */
    EXPECT_POINT(a, 4, 1, 0.5, 0.5, true, ASHA_CONTINUE, 0);
    /* Front {2, 4, 5}: 5 is an extreme (infinite crowding), 4 in between. */
    EXPECT_POINT(a, 5, 1, 3, 0, true, ASHA_CONTINUE, 0);
    EXPECT_POINT(a, 6, 1, 1, 1, true, ASHA_STOP, 0); /* second front: 3 above, top 3 of 7 */
    /* The next rung starts afresh; no point is never judged; max_t completes. */
    EXPECT_POINT(a, 0, 3, 9, 9, false, ASHA_CONTINUE, 1);
    int rung = -2;
    assert_int_equal(asha_report_point(a, 2, 3, NULL, &rung), ASHA_CONTINUE);
    assert_int_equal(rung, -1);
    EXPECT_POINT(a, 2, 81, 0, 0, true, ASHA_COMPLETE, -1);
    asha_free(a);

    /* One objective through the point calls is the value's rule. */
    p.objectives = 1;
    a = hw_new(&p);
    EXPECT_POINT(a, 0, 1, 1, 0, true, ASHA_CONTINUE, 0);
    EXPECT_POINT(a, 1, 1, 2, 0, true, ASHA_STOP, 0);
    asha_free(a);
}

#define MO_SEQUENCES 600
#define MO_MAX_TRIALS 30
#define MO_MAX_RECS (MO_MAX_TRIALS * ASHA_MAX_RUNGS)

/* The model: every record in one flat array, ranked from scratch. */
typedef struct MoRec {
    int64_t trial;
    int bracket, rung;
    AshaPoint pt;
} MoRec;

typedef struct MoEvent {
    bool end;
    double time;
    bool has;
    AshaPoint pt;
} MoEvent;

typedef struct MoTrial {
    int state; /* 0 pending, 1 running, 2 done */
    int bracket;
    double time;
    bool has_last;
    AshaPoint last;
    MoEvent log[256];
    int n_log;
} MoTrial;

typedef struct MoSeq {
    AshaParams p;
    FuzzRng rng;
    int n_trials;
    MoTrial trials[MO_MAX_TRIALS];
    MoRec recs[MO_MAX_RECS];
    int n_recs;
    Asha *a;
    bool forget; /* ended trials are forgotten (asha_trial_forget) */
    long stops, goes, reloads, failed;
} MoSeq;

static bool mo_dominates(const double *x, const double *y, int m)
{
    bool less = false;
    for (int j = 0; j < m; j++) {
        if (x[j] > y[j])
            return false;
        less = less || x[j] < y[j];
    }
    return less;
}

static int mo_find(const MoSeq *s, int64_t trial, int bracket, int rung)
{
    for (int j = 0; j < s->n_recs; j++)
        if (s->recs[j].trial == trial && s->recs[j].bracket == bracket && s->recs[j].rung == rung)
            return j;
    return -1;
}

/* Ranks (peeling fronts) and crowding distances of records at[0..n) of one
 * feasibility: sorting each objective by value, then trial number. */
static void mo_rank_crowd(const MoSeq *s, const int *at, int n, int *rank, double *crowd)
{
    int m = s->p.objectives;
    for (int i = 0; i < n; i++) {
        rank[i] = -1;
        crowd[i] = 0;
    }
    for (int r = 0, left = n; left > 0; r++) {
        int front[MO_MAX_RECS], nf = 0;
        for (int i = 0; i < n; i++) {
            if (rank[i] >= 0)
                continue;
            bool dominated = false;
            for (int j = 0; j < n && !dominated; j++)
                dominated = rank[j] < 0 && j != i &&
                            mo_dominates(s->recs[at[j]].pt.loss, s->recs[at[i]].pt.loss, m);
            if (!dominated)
                front[nf++] = i;
        }
        for (int k = 0; k < nf; k++)
            rank[front[k]] = r;
        left -= nf;
        for (int j = 0; j < m; j++) {
            int ord[MO_MAX_RECS];
            for (int k = 0; k < nf; k++) { /* insertion sort by (value, trial) */
                int x = front[k], q = k;
                double vx = s->recs[at[x]].pt.loss[j];
                while (q > 0) {
                    int y = ord[q - 1];
                    double vy = s->recs[at[y]].pt.loss[j];
                    if (vy < vx || (vy == vx && s->recs[at[y]].trial < s->recs[at[x]].trial))
                        break;
                    ord[q] = y;
                    q--;
                }
                ord[q] = x;
            }
            crowd[ord[0]] = INFINITY;
            crowd[ord[nf - 1]] = INFINITY;
            double lo = s->recs[at[ord[0]]].pt.loss[j], hi = s->recs[at[ord[nf - 1]]].pt.loss[j];
            if (hi > lo)
                for (int k = 1; k + 1 < nf; k++)
                    crowd[ord[k]] +=
                        (s->recs[at[ord[k + 1]]].pt.loss[j] - s->recs[at[ord[k - 1]]].pt.loss[j]) /
                        (hi - lo);
        }
    }
}

/* The model's answer to a report (asha.h, "Several objectives"). */
static AshaDecision mo_ref_report(MoSeq *s, int i, double time, const AshaPoint *pt, bool judge,
                                  int *rung)
{
    MoTrial *t = &s->trials[i];
    *rung = -1;
    if (pt == NULL || (judge && time >= s->p.max_t))
        return judge && pt != NULL ? ASHA_COMPLETE : ASHA_CONTINUE;
    int k = -1;
    for (int q = ref_n_rungs(&s->p, t->bracket) - 1; q >= 0 && k < 0; q--)
        if (ref_milestone(&s->p, t->bracket, q) <= time && mo_find(s, i, t->bracket, q) < 0)
            k = q;
    if (k < 0)
        return ASHA_CONTINUE;
    s->recs[s->n_recs++] = (MoRec){i, t->bracket, k, *pt};
    *rung = k;
    if (!judge)
        return ASHA_CONTINUE;
    int at[2][MO_MAX_RECS], n[2] = {0, 0}, mine_c = 0, mine_k = 0, total = 0;
    for (int j = 0; j < s->n_recs; j++) {
        if (s->recs[j].bracket != t->bracket || s->recs[j].rung != k)
            continue;
        int c = s->recs[j].pt.feasible ? 0 : 1;
        if (s->recs[j].trial == i) {
            mine_c = c;
            mine_k = n[c];
        }
        at[c][n[c]++] = j;
        total++;
    }
    int rank[2][MO_MAX_RECS];
    double crowd[2][MO_MAX_RECS];
    for (int c = 0; c < 2; c++)
        if (n[c] > 0)
            mo_rank_crowd(s, at[c], n[c], rank[c], crowd[c]);
    int above = mine_c == 1 ? n[0] : 0;
    for (int q = 0; q < n[mine_c]; q++)
        above += rank[mine_c][q] < rank[mine_c][mine_k] ||
                 (rank[mine_c][q] == rank[mine_c][mine_k] &&
                  crowd[mine_c][q] > crowd[mine_c][mine_k]);
    return above < ceil((double)total / s->p.rf) ? ASHA_CONTINUE : ASHA_STOP;
}

static AshaPoint mo_draw(MoSeq *s, bool discrete, double p_feasible)
{
    AshaPoint pt;
    memset(&pt, 0, sizeof pt);
    for (int j = 0; j < s->p.objectives; j++)
        pt.loss[j] = discrete ? fuzz_int(&s->rng, 0, 3) : fuzz_unif(&s->rng) - 0.5;
    pt.feasible = fuzz_chance(&s->rng, p_feasible);
    return pt;
}

static void mo_log(MoTrial *t, bool end, double time, const AshaPoint *pt)
{
    assert_true(t->n_log < 256);
    t->log[t->n_log++] = (MoEvent){end, time, pt != NULL, pt ? *pt : (AshaPoint){{0}, false}};
}

static void mo_end(MoSeq *s, int i)
{
    MoTrial *t = &s->trials[i];
    const AshaPoint *pt = t->has_last ? &t->last : NULL;
    int rung;
    mo_ref_report(s, i, t->time, pt, false, &rung);
    asha_trial_end_point(s->a, i, t->time, pt);
    mo_log(t, true, t->time, pt);
    t->state = 2;
    if (s->forget)
        asha_trial_forget(s->a, i);
}

static void mo_reload(MoSeq *s)
{
    Asha *b = asha_new(&s->p);
    assert_non_null(b);
    for (int i = 0; i < s->n_trials; i++)
        for (int e = 0; e < s->trials[i].n_log; e++) {
            const MoEvent *ev = &s->trials[i].log[e];
            if (ev->end)
                asha_trial_end_point(b, i, ev->time, ev->has ? &ev->pt : NULL);
            else
                asha_replay_point(b, i, ev->time, ev->has ? &ev->pt : NULL);
            if (ev->end && s->forget)
                asha_trial_forget(b, i);
        }
    asha_free(s->a);
    s->a = b;
    s->reloads++;
}

static void mo_run(MoSeq *s, int index)
{
    FuzzRng *r = &s->rng;
    r->s = 0x6d6f0000ULL + (uint64_t)index;
    AshaParams *p = &s->p;
    memset(p, 0, sizeof *p);
    p->type = fuzz_chance(r, 0.7) ? ASHA_ASHA : ASHA_HYPERBAND;
    static const double rfs[] = {2, 3, 4, 2.5};
    p->rf = rfs[fuzz_int(r, 0, 3)];
    p->grace_period = fuzz_int(r, 1, 3);
    p->max_t = fuzz_int(r, 9, 60);
    p->maximize = fuzz_chance(r, 0.5); /* points are losses: it must not matter */
    p->seed = fuzz_next(r);
    p->brackets = fuzz_int(r, 1, ref_top_k(p) + 1);
    p->objectives = fuzz_int(r, 2, ASHA_MAX_OBJECTIVES);
    s->n_trials = fuzz_int(r, 4, MO_MAX_TRIALS);
    bool discrete = fuzz_chance(r, 0.5), reloads = fuzz_chance(r, 0.3);
    double p_feasible = fuzz_chance(r, 0.3) ? 1.0 : 0.75;
    int concurrency = fuzz_int(r, 1, 6), resets = fuzz_int(r, 0, 3);
    s->a = asha_new(p);
    assert_non_null(s->a);
    s->forget = index % 2 == 1; /* not drawn: the other draws stay as they were */
    s->n_recs = 0;
    for (int i = 0; i < s->n_trials; i++) {
        memset(&s->trials[i], 0, sizeof s->trials[i]);
        s->trials[i].bracket = asha_bracket(asha_params(s->a), i);
    }
    for (int step = 0, next = 0; step < 5000; step++) {
        int running[MO_MAX_TRIALS], nr = 0, done[MO_MAX_TRIALS], nd = 0;
        for (int i = 0; i < s->n_trials; i++) {
            if (s->trials[i].state == 1)
                running[nr++] = i;
            if (s->trials[i].state == 2)
                done[nd++] = i;
        }
        if (next < s->n_trials && nr < concurrency) {
            s->trials[next++].state = 1;
            continue;
        }
        if (nr == 0)
            break;
        double u = fuzz_unif(r);
        int i = running[fuzz_int(r, 0, nr - 1)];
        MoTrial *t = &s->trials[i];
        if (u < 0.01 && resets > 0 && nd > 0) {
            int d = done[fuzz_int(r, 0, nd - 1)];
            int keep = 0;
            for (int j = 0; j < s->n_recs; j++)
                if (s->recs[j].trial != d)
                    s->recs[keep++] = s->recs[j];
            s->n_recs = keep;
            asha_trial_reset(s->a, d);
            memset(s->trials[d].log, 0, sizeof s->trials[d].log);
            s->trials[d].n_log = 0;
            s->trials[d].time = 0;
            s->trials[d].has_last = false;
            s->trials[d].state = 1;
            resets--;
        } else if (u < 0.03) {
            mo_end(s, i);
        } else if (u < 0.05 && reloads) {
            mo_reload(s);
        } else {
            double time = t->time + (fuzz_chance(r, 0.85) ? 1 : fuzz_int(r, 2, (int)p->max_t / 2));
            AshaPoint pt = mo_draw(s, discrete, p_feasible);
            bool has = fuzz_chance(r, 0.95);
            int want_rung, got_rung = -2;
            AshaDecision want = mo_ref_report(s, i, time, has ? &pt : NULL, true, &want_rung);
            AshaDecision got = asha_report_point(s->a, i, time, has ? &pt : NULL, &got_rung);
            if (want != got || want_rung != got_rung) {
                if (s->failed++ < 5)
                    print_message("points sequence %d step %d: trial %d at %g: expected %d at "
                                  "rung %d, got %d at rung %d\n",
                                  index, step, i, time, want, want_rung, got, got_rung);
                break;
            }
            mo_log(t, false, time, has ? &pt : NULL);
            t->time = time;
            t->has_last = has;
            t->last = pt;
            if (want_rung >= 0) {
                s->stops += want == ASHA_STOP;
                s->goes += want == ASHA_CONTINUE;
            }
            if (want == ASHA_STOP || want == ASHA_COMPLETE) {
                t->state = 2;
                if (fuzz_chance(r, 0.8))
                    mo_end(s, i);
            }
        }
    }
    asha_free(s->a);
}

static void test_points_random_sequences(void **state)
{
    (void)state;
    MoSeq *s = malloc(sizeof *s);
    assert_non_null(s);
    long stops = 0, goes = 0, reloads = 0, failed = 0;
    for (int index = 0; index < MO_SEQUENCES; index++) {
        s->stops = s->goes = s->reloads = s->failed = 0;
        mo_run(s, index);
        stops += s->stops;
        goes += s->goes;
        reloads += s->reloads;
        failed += s->failed;
    }
    free(s);
    print_message("asha, several objectives: %d sequences, %ld judged at a rung (%ld stopped), "
                  "%ld reloads; %ld disagree\n",
                  MO_SEQUENCES, stops + goes, stops, reloads, failed);
    assert_int_equal(failed, 0);
    assert_true(stops > 100 && goes > 100);
}

/* A paused trial that reports again was resumed: it leaves the paused list
 * (once; a second entry would outlive the trial's end). */
static void test_paused_trial_reporting_again(void **state)
{
    (void)state;
    AshaParams p = hw_params(ASHA_ASHA, false, 3);
    p.promote = true;
    p.max_t = 27;
    Asha *a = hw_new(&p);
    int rung;
    assert_int_equal(asha_report(a, 0, 1, true, 0.5, &rung), ASHA_PAUSE);
    assert_int_equal(asha_paused_rung(a, 0), 0);
    assert_int_equal(asha_report(a, 0, 3, true, 0.4, &rung), ASHA_PAUSE);
    assert_int_equal(rung, 1);
    assert_int_equal(asha_paused_rung(a, 0), 1);
    asha_trial_end(a, 0, 3, true, 0.4);
    assert_int_equal(asha_paused_rung(a, 0), -1);
    int64_t out[4];
    assert_int_equal(asha_promotions(a, out, 4), 0);
    assert_int_equal(asha_endgame(a), -1);
    asha_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_trial_at_rung_continues),
        cmocka_unit_test(test_cutoff_by_hand),
        cmocka_unit_test(test_cutoff_rounding_as_numpy),
        cmocka_unit_test(test_skipped_rungs_judged_at_highest),
        cmocka_unit_test(test_ties_at_cutoff_continue),
        cmocka_unit_test(test_min_and_max_mode),
        cmocka_unit_test(test_max_t_completes),
        cmocka_unit_test(test_open_end_runs_past_max_t),
        cmocka_unit_test(test_trial_end_records),
        cmocka_unit_test(test_no_value_never_judged),
        cmocka_unit_test(test_bracket_milestones),
        cmocka_unit_test(test_hyperband_bracket_count),
        cmocka_unit_test(test_bracket_draws),
        cmocka_unit_test(test_promote_pauses_and_endgame),
        cmocka_unit_test(test_promotion_order),
        cmocka_unit_test(test_median_by_hand),
        cmocka_unit_test(test_median_grace_and_trial_end),
        cmocka_unit_test(test_reset_forgets),
        cmocka_unit_test(test_fifo_always_continues),
        cmocka_unit_test(test_sparse_numbers_and_odd_calls),
        cmocka_unit_test(test_paused_trial_reporting_again),
        cmocka_unit_test(test_random_sequences),
        cmocka_unit_test(test_points_by_hand),
        cmocka_unit_test(test_points_random_sequences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
