/* Unit tests of pbt's two halves (docs/schedulers.md, "pbt"): the exploit
 * rule (server/pbt.c) in hand-worked cases and against a brute-force model
 * over random report sequences, and the explore step (space_mutate,
 * sampler/mutate.c): each domain's moves, the bounds, the odds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pb2.h"
#include "pbt.h"
#include "sampler.h"

static PbtParams params(int64_t interval, double quantile, bool maximize)
{
    return (
        PbtParams){.interval = interval, .quantile = quantile, .maximize = maximize, .seed = 11};
}

static PbtMember member(int64_t number, int64_t step, json_t *config)
{
    return (PbtMember){
        .number = number, .id = 100 + number, .worker = 7, .step = step, .config = config};
}

static PbtDecision report(Pbt *p, int64_t number, int64_t step, double value, PbtMember *donor,
                          int64_t *milestone)
{
    json_t *c = json_pack("{s:I}", "n", (json_int_t)number);
    PbtMember self = member(number, step, c);
    PbtDecision d = pbt_report(p, &self, true, value, donor, milestone);
    json_decref(c); /* a record keeps its own reference */
    return d;
}

static void test_async_hand_cases(void **state)
{
    (void)state;
    PbtParams pp = params(4, 0.25, false);
    pp.burn_in = 8;
    Pbt *p = pbt_new(&pp);
    PbtMember donor;
    int64_t ms = 0;
    /* Before the first milestone, and before burn_in: nothing. */
    assert_int_equal(report(p, 0, 3, 5.0, &donor, &ms), PBT_CONTINUE);
    assert_int_equal(report(p, 1, 4, 9.0, &donor, &ms), PBT_CONTINUE);
    assert_int_equal(report(p, 1, 5, 9.0, &donor, &ms), PBT_CONTINUE);
    /* Milestone 8: the first to arrive is judged against nobody. */
    assert_int_equal(report(p, 0, 8, 1.0, &donor, &ms), PBT_CONTINUE);
    /* The second, worse (a loss): n = 2, q = min(ceil(0.5), 1) = 1. */
    assert_int_equal(report(p, 1, 8, 2.0, &donor, &ms), PBT_EXPLOIT);
    assert_int_equal(ms, 8);
    assert_int_equal(donor.number, 0);
    assert_int_equal(donor.id, 100);
    assert_int_equal(donor.step, 8);
    assert_int_equal(json_integer_value(json_object_get(donor.config, "n")), 0);
    /* Judged once per milestone: another report past 8 in the same one. */
    assert_int_equal(report(p, 1, 9, 50.0, &donor, &ms), PBT_CONTINUE);
    /* A third member, better than both: n = 3, q = 1, it continues. */
    assert_int_equal(report(p, 2, 10, 0.5, &donor, &ms), PBT_CONTINUE);
    /* A fourth in the middle: n = 4, q = 1: rank 2 of 4, continues; a
     * fifth, worst: n = 5, q = 2 (ceil 1.25), exploits the top 2. */
    assert_int_equal(report(p, 3, 8, 1.5, &donor, &ms), PBT_CONTINUE);
    assert_int_equal(report(p, 4, 8, 3.0, &donor, &ms), PBT_EXPLOIT);
    assert_true(donor.number == 2 || donor.number == 0);
    /* Ties go by trial number: the higher number ranks lower. */
    assert_int_equal(report(p, 5, 12, 7.0, &donor, &ms), PBT_CONTINUE);
    assert_int_equal(report(p, 6, 12, 7.0, &donor, &ms), PBT_EXPLOIT);
    assert_int_equal(donor.number, 5);
    assert_int_equal(ms, 12);
    /* A report without the metric records nothing. */
    PbtMember self = member(7, 12, NULL);
    assert_int_equal(pbt_report(p, &self, false, 0, &donor, &ms), PBT_CONTINUE);
    assert_false(pbt_reached(p, 7, 12));
    pbt_free(p);
}

static void test_max_t_and_maximize(void **state)
{
    (void)state;
    PbtParams pp = params(2, 0.5, true);
    pp.max_t = 6;
    Pbt *p = pbt_new(&pp);
    PbtMember donor;
    int64_t ms = 0;
    assert_int_equal(report(p, 0, 2, 0.9, &donor, &ms), PBT_CONTINUE);
    assert_int_equal(report(p, 1, 2, 0.1, &donor, &ms), PBT_EXPLOIT); /* max: 0.1 is worse */
    assert_int_equal(donor.number, 0);
    assert_int_equal(report(p, 1, 4, 0.95, &donor, &ms), PBT_CONTINUE);
    assert_int_equal(report(p, 0, 4, 0.2, &donor, &ms), PBT_EXPLOIT);
    assert_int_equal(donor.number, 1);
    assert_int_equal(report(p, 0, 6, 0.2, &donor, &ms), PBT_COMPLETE);
    pbt_free(p);
}

static void test_forget_and_load(void **state)
{
    (void)state;
    PbtParams pp = params(4, 0.25, false);
    Pbt *a = pbt_new(&pp), *b = pbt_new(&pp);
    PbtMember donor;
    int64_t ms = 0;
    /* b replays what a decided on: the same records, so the same answer. */
    json_t *c = json_object();
    for (int64_t n = 0; n < 3; n++) {
        PbtMember m = member(n, 4, c);
        (void)pbt_report(a, &m, true, (double)n, &donor, &ms);
        pbt_load(b, &m, true, (double)n);
    }
    PbtMember da, db;
    assert_int_equal(report(a, 3, 4, 9.0, &da, &ms), PBT_EXPLOIT);
    assert_int_equal(report(b, 3, 4, 9.0, &db, &ms), PBT_EXPLOIT);
    assert_int_equal(da.number, db.number);
    /* A retried trial's records go: trial 3 is judged at 4 again. */
    pbt_forget(a, 3);
    assert_false(pbt_reached(a, 3, 4));
    assert_int_equal(report(a, 3, 4, -1.0, &da, &ms), PBT_CONTINUE);
    json_decref(c);
    pbt_free(a);
    pbt_free(b);
}

static void test_synch(void **state)
{
    (void)state;
    PbtParams pp = params(4, 0.25, false);
    pp.synch = true;
    Pbt *p = pbt_new(&pp);
    PbtMember donor, donors[8];
    int64_t ms = 0, recv[8];
    double loss[8] = {5, 1, 7, 3, 2, 8, 4, 6};
    for (int64_t n = 0; n < 8; n++) {
        assert_int_equal(report(p, n, 4, loss[n], &donor, &ms), PBT_SYNC);
        assert_int_equal(ms, 4);
        assert_true(pbt_reached(p, n, 4));
        assert_false(pbt_reached(p, n, 8));
    }
    /* q = ceil(8 * 0.25) = 2: trials 5 (8) and 2 (7) take 1 (1) or 4 (2). */
    int64_t k = pbt_exploits(p, 4, recv, donors, 8);
    assert_int_equal(k, 2);
    for (int64_t i = 0; i < k; i++) {
        assert_true(recv[i] == 5 || recv[i] == 2);
        assert_true(donors[i].number == 1 || donors[i].number == 4);
    }
    assert_true(recv[0] != recv[1]);
    /* A member whose reports skip a milestone has passed it. */
    assert_int_equal(report(p, 0, 13, 1.0, &donor, &ms), PBT_SYNC);
    assert_int_equal(ms, 12);
    assert_true(pbt_reached(p, 0, 8));
    assert_int_equal(pbt_exploits(p, 8, recv, donors, 8), 0);
    pbt_free(p);
}

/* A diverged member (NaN, or an infinity either way) ranks last; only
 * finite members give; with none in the top q nobody exploits; a change
 * through a non-finite value is no observation for pb2. */
static void test_diverged_members(void **state)
{
    (void)state;
    PbtParams pp = params(4, 0.25, false);
    Pbt *p = pbt_new(&pp);
    PbtMember donor;
    int64_t ms = 0;
    assert_int_equal(report(p, 0, 4, 1.0, &donor, &ms), PBT_CONTINUE);
    assert_int_equal(report(p, 1, 4, NAN, &donor, &ms), PBT_EXPLOIT);
    assert_int_equal(donor.number, 0);
    /* -inf is the best a loss can be, but a diverged one: last. n = 3, q =
     * 1, and trial 2 ties with trial 1 at the bottom, ranked below it. */
    assert_int_equal(report(p, 2, 4, -INFINITY, &donor, &ms), PBT_EXPLOIT);
    assert_int_equal(donor.number, 0);
    /* All diverged at 8: the top is not finite, so nobody exploits. */
    assert_int_equal(report(p, 0, 8, NAN, &donor, &ms), PBT_CONTINUE);
    assert_int_equal(report(p, 1, 8, NAN, &donor, &ms), PBT_CONTINUE);
    PbtChange ch[4];
    assert_int_equal(pbt_changes(p, ch, 4), 0); /* 1.0 to NaN: nothing learnt */
    pbt_free(p);

    /* maximize: +inf is not the best either. */
    pp = params(4, 0.5, true);
    p = pbt_new(&pp);
    assert_int_equal(report(p, 0, 4, INFINITY, &donor, &ms), PBT_CONTINUE);
    assert_int_equal(report(p, 1, 4, 0.3, &donor, &ms), PBT_CONTINUE);
    pbt_free(p);

    /* synch: q = ceil(4 * 0.25) = 1; three diverged, one finite (trial 1):
     * the bottom one (trial 3, the highest number among the ties) takes
     * trial 1. At 8 every member diverged: no exploits. */
    pp = params(4, 0.25, false);
    pp.synch = true;
    p = pbt_new(&pp);
    PbtMember donors[4];
    int64_t recv[4];
    double loss[4] = {NAN, 2.0, NAN, INFINITY};
    for (int64_t n = 0; n < 4; n++)
        assert_int_equal(report(p, n, 4, loss[n], &donor, &ms), PBT_SYNC);
    assert_int_equal(pbt_exploits(p, 4, recv, donors, 4), 1);
    assert_int_equal(recv[0], 3);
    assert_int_equal(donors[0].number, 1);
    for (int64_t n = 0; n < 4; n++)
        assert_int_equal(report(p, n, 8, NAN, &donor, &ms), PBT_SYNC);
    assert_int_equal(pbt_exploits(p, 8, recv, donors, 4), 0);
    pbt_free(p);
}

/* The rule as its text says, for one report: the records at the milestone
 * (scores, numbers), and whether the newest (index n - 1) is in the bottom. */
static bool model_bottom(const double *score, const int64_t *num, int64_t n, double quantile)
{
    int64_t q = (int64_t)ceil((double)n * quantile - 1e-12);
    if (q > n / 2)
        q = n / 2;
    int64_t above = 0; /* records ranked strictly above the newest */
    for (int64_t i = 0; i < n - 1; i++)
        if (score[i] > score[n - 1] || (score[i] == score[n - 1] && num[i] < num[n - 1]))
            above++;
    return q > 0 && above >= n - q;
}

static void test_against_model(void **state)
{
    (void)state;
    srand(5);
    for (int round = 0; round < 300; round++) {
        PbtParams pp = params(1 + rand() % 4, (1 + rand() % 10) / 20.0, rand() % 2);
        Pbt *p = pbt_new(&pp);
        enum { TRIALS = 9, STEPS = 24 };
        int64_t judged[TRIALS] = {0};
        double score[STEPS + 1][TRIALS];
        int64_t num[STEPS + 1][TRIALS], cnt[STEPS + 1] = {0};
        int64_t step[TRIALS] = {0};
        for (int e = 0; e < 120; e++) {
            int64_t n = rand() % TRIALS;
            step[n] += 1 + rand() % 3;
            if (step[n] > STEPS)
                continue;
            double v = (double)(rand() % 7); /* ties on purpose */
            PbtMember donor;
            int64_t ms = 0;
            PbtDecision d = report(p, n, step[n], v, &donor, &ms);
            int64_t k = step[n] / pp.interval;
            bool rec = k >= 1 && k > judged[n];
            if (!rec) {
                assert_int_equal(d, PBT_CONTINUE);
                continue;
            }
            judged[n] = k;
            score[k][cnt[k]] = pp.maximize ? v : -v;
            num[k][cnt[k]] = n;
            cnt[k]++;
            bool bottom = model_bottom(score[k], num[k], cnt[k], pp.quantile);
            assert_int_equal(d, bottom ? PBT_EXPLOIT : PBT_CONTINUE);
            if (bottom) {
                /* The donor is in the top q. */
                int64_t q = (int64_t)ceil((double)cnt[k] * pp.quantile - 1e-12);
                q = q > cnt[k] / 2 ? cnt[k] / 2 : q;
                int64_t above = 0, di = -1;
                for (int64_t i = 0; i < cnt[k]; i++)
                    if (num[k][i] == donor.number)
                        di = i;
                assert_true(di >= 0);
                for (int64_t i = 0; i < cnt[k]; i++)
                    if (score[k][i] > score[k][di] ||
                        (score[k][i] == score[k][di] && num[k][i] < num[k][di]))
                        above++;
                assert_true(above < q);
                assert_int_equal(ms, k * pp.interval);
            }
        }
        pbt_free(p);
    }
}

static Space *space_of(const char *text)
{
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    Space *s = NULL;
    RungError err;
    assert_int_equal(space_parse(j, &s, &err), 0);
    json_decref(j);
    return s;
}

static void test_mutate_moves(void **state)
{
    (void)state;
    Space *m = space_of("{\"lr\": {\"type\": \"loguniform\", \"low\": 0.001, \"high\": 0.1},"
                        " \"mom\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
                        " \"bs\": {\"type\": \"randint\", \"low\": 8, \"high\": 512},"
                        " \"opt\": {\"type\": \"choice\", \"values\": [\"a\", \"b\", \"c\"]}}");
    json_t *c = json_pack("{s:f, s:f, s:i, s:s, s:i}", "lr", 0.01, "mom", 0.95, "bs", 64, "opt",
                          "a", "other", 3);
    int up = 0, resampled = 0, n = 4000;
    for (int i = 0; i < n; i++) {
        json_t *x = space_mutate(m, c, 0.25, 3, 1, (uint64_t)i);
        assert_non_null(x);
        assert_int_equal(json_integer_value(json_object_get(x, "other")), 3); /* not mutated */
        double lr = json_real_value(json_object_get(x, "lr"));
        assert_true(lr >= 0.001 && lr <= 0.1);
        if (fabs(lr - 0.012) < 1e-15)
            up++;
        else if (fabs(lr - 0.008) > 1e-15)
            resampled++;
        double mom = json_real_value(json_object_get(x, "mom"));
        /* 0.95 * 1.2 is clamped to the bound. */
        assert_true(mom == 1.0 || fabs(mom - 0.76) < 1e-15 || (mom >= 0 && mom <= 1));
        json_int_t bs = json_integer_value(json_object_get(x, "bs"));
        assert_true(bs >= 8 && bs < 512);
        const char *opt = json_string_value(json_object_get(x, "opt"));
        assert_non_null(opt);
        json_decref(x);
    }
    /* Resampled with probability 0.25; else up or down at even odds
     * (bounds: 5 standard deviations of the binomial). */
    assert_true(abs(resampled - n / 4) < 5 * (int)sqrt(n * 0.25 * 0.75));
    int moved = n - resampled;
    assert_true(abs(up - moved / 2) < 5 * (int)sqrt(moved * 0.25));
    /* Without resampling: exact scalings, integer rounding, neighbours. */
    int seen_b = 0;
    for (int i = 0; i < 200; i++) {
        json_t *x = space_mutate(m, c, 0.0, 3, 2, (uint64_t)i);
        double lr = json_real_value(json_object_get(x, "lr"));
        assert_true(fabs(lr - 0.012) < 1e-15 || fabs(lr - 0.008) < 1e-15);
        double mom = json_real_value(json_object_get(x, "mom"));
        assert_true(mom == 1.0 || fabs(mom - 0.76) < 1e-12);
        json_int_t bs = json_integer_value(json_object_get(x, "bs"));
        assert_true(bs == 77 || bs == 51); /* round(76.8), round(51.2) */
        const char *opt = json_string_value(json_object_get(x, "opt"));
        /* "a" is first: down stays, up goes to "b". */
        assert_true(strcmp(opt, "a") == 0 || strcmp(opt, "b") == 0);
        seen_b += strcmp(opt, "b") == 0;
        json_decref(x);
    }
    assert_true(seen_b > 50 && seen_b < 150);
    /* The same arguments, the same config. */
    json_t *x1 = space_mutate(m, c, 0.25, 9, 4, 40), *x2 = space_mutate(m, c, 0.25, 9, 4, 40);
    assert_true(json_equal(x1, x2));
    json_decref(x1);
    json_decref(x2);
    /* A value the domain cannot take is drawn anew. */
    json_t *bad = json_pack("{s:f, s:f, s:i, s:s}", "lr", 5.0, "mom", 0.5, "bs", 64, "opt", "z");
    for (int i = 0; i < 50; i++) {
        json_t *x = space_mutate(m, bad, 0.0, 3, 5, (uint64_t)i);
        double lr = json_real_value(json_object_get(x, "lr"));
        assert_true(lr >= 0.001 && lr <= 0.1);
        const char *opt = json_string_value(json_object_get(x, "opt"));
        assert_true(strcmp(opt, "z") != 0);
        json_decref(x);
    }
    json_decref(bad);
    json_decref(c);
    space_free(m);
}

/* The explore step keeps normal, qnormal and qlograndint values in their
 * domains: a normal scaled exactly, the others rounded to their multiples. */
static void test_mutate_new_domains(void **state)
{
    (void)state;
    Space *m = space_of("{\"w\": {\"type\": \"normal\", \"mean\": 0, \"sd\": 1},"
                        " \"k\": {\"type\": \"qnormal\", \"mean\": 0, \"sd\": 1, \"q\": 0.25},"
                        " \"x\": {\"type\": \"qlograndint\", \"low\": 3, \"high\": 100,"
                        " \"q\": 10}}");
    json_t *c = json_pack("{s:f, s:f, s:i}", "w", 0.5, "k", 1.0, "x", 90);
    int top = 0;
    for (int i = 0; i < 400; i++) {
        json_t *x = space_mutate(m, c, i < 200 ? 0.0 : 0.5, 3, 1, (uint64_t)i);
        assert_non_null(x);
        double w = json_real_value(json_object_get(x, "w"));
        double k = json_real_value(json_object_get(x, "k"));
        json_int_t q = json_integer_value(json_object_get(x, "x"));
        assert_true(isfinite(w));
        assert_true(fabs(k / 0.25 - round(k / 0.25)) < 1e-9);
        assert_true(json_is_integer(json_object_get(x, "x")));
        assert_true(q >= 10 && q <= 100 && q % 10 == 0);
        if (i < 200) {
            /* 0.6 or 0.4; 1.25 or 0.75; 90 * 1.2 = 108 clamps to 100, 72 rounds to 70. */
            assert_true(fabs(w - 0.6) < 1e-15 || fabs(w - 0.4) < 1e-15);
            assert_true(k == 1.25 || k == 0.75);
            assert_true(q == 100 || q == 70);
            top += q == 100;
        }
        json_decref(x);
    }
    assert_true(top > 50 && top < 150);
    /* Values outside the domain are drawn anew, inside it. */
    json_t *bad = json_pack("{s:s, s:f, s:i}", "w", "a", "k", 0.3, "x", 95);
    for (int i = 0; i < 50; i++) {
        json_t *x = space_mutate(m, bad, 0.0, 3, 5, (uint64_t)i);
        assert_true(json_is_real(json_object_get(x, "w")));
        double k = json_real_value(json_object_get(x, "k"));
        assert_true(fabs(k / 0.25 - round(k / 0.25)) < 1e-9);
        json_int_t q = json_integer_value(json_object_get(x, "x"));
        assert_true(q >= 10 && q <= 100 && q % 10 == 0);
        json_decref(x);
    }
    json_decref(bad);
    json_decref(c);
    space_free(m);
}

/* PB2 follows the data: with the best x drifting from 0.2 to 0.8 over
 * time, its proposal at the newest time is near 0.8 (not near 0.5, the
 * best over all times); too little data gives a draw in the domain. */
static void test_pb2_follows_the_optimum(void **state)
{
    (void)state;
    Space *m = space_of("{\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}");
    json_t *base = json_pack("{s:f, s:i}", "x", 0.5, "keep", 7);
    enum { N = 80 };
    Pb2Obs obs[N];
    json_t *cfg[N];
    srand(3);
    for (int i = 0; i < N; i++) {
        double x = (double)rand() / RAND_MAX, t = 4.0 * (i + 1), best = 0.2 + 0.6 * t / (4.0 * N);
        cfg[i] = json_pack("{s:f}", "x", x);
        obs[N - 1 - i] = (Pb2Obs){.config = cfg[i], .time = t, .change = -(x - best) * (x - best)};
    }
    int near = 0;
    for (uint64_t k = 0; k < 10; k++) {
        json_t *c = pb2_propose(m, base, obs, N, 4.0 * N, 5, k, 4 * N);
        assert_non_null(c);
        assert_int_equal(json_integer_value(json_object_get(c, "keep")), 7);
        double x = json_real_value(json_object_get(c, "x"));
        near += fabs(x - 0.8) < 0.12;
        json_decref(c);
    }
    assert_true(near >= 8);
    /* One observation: a draw, the same for the same arguments. */
    json_t *a = pb2_propose(m, base, obs, 1, 8, 5, 1, 8),
           *b = pb2_propose(m, base, obs, 1, 8, 5, 1, 8);
    assert_true(json_equal(a, b));
    double x = json_real_value(json_object_get(a, "x"));
    assert_true(x >= 0 && x <= 1);
    json_decref(a);
    json_decref(b);
    for (int i = 0; i < N; i++)
        json_decref(cfg[i]);
    json_decref(base);
    space_free(m);
}

/* PB2's data: the change of each trial's score between consecutive
 * milestones with one config; an exploit (a new config) cuts it. */
static void test_pbt_changes(void **state)
{
    (void)state;
    PbtParams pp = params(4, 0.25, false); /* losses: the change is the drop */
    Pbt *p = pbt_new(&pp);
    json_t *c1 = json_pack("{s:f}", "x", 0.1), *c2 = json_pack("{s:f}", "x", 0.9);
    PbtMember donor;
    int64_t ms;
    PbtMember m = member(0, 4, c1);
    (void)pbt_report(p, &m, true, 5.0, &donor, &ms);
    m = member(0, 8, c1);
    (void)pbt_report(p, &m, true, 3.0, &donor, &ms);
    m = member(0, 12, c2); /* exploited at 8: a new config */
    (void)pbt_report(p, &m, true, 1.0, &donor, &ms);
    m = member(0, 16, c2);
    (void)pbt_report(p, &m, true, 0.5, &donor, &ms);
    PbtChange ch[8];
    int64_t n = pbt_changes(p, ch, 8);
    assert_int_equal(n, 2);
    assert_int_equal(ch[0].milestone, 16); /* the latest first */
    assert_true(fabs(ch[0].change - 0.5) < 1e-12);
    assert_true(json_equal(ch[0].config, c2));
    assert_int_equal(ch[1].milestone, 8);
    assert_true(fabs(ch[1].change - 2.0) < 1e-12);
    json_decref(c1);
    json_decref(c2);
    pbt_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_async_hand_cases),   cmocka_unit_test(test_max_t_and_maximize),
        cmocka_unit_test(test_forget_and_load),    cmocka_unit_test(test_synch),
        cmocka_unit_test(test_against_model),      cmocka_unit_test(test_mutate_moves),
        cmocka_unit_test(test_mutate_new_domains), cmocka_unit_test(test_pb2_follows_the_optimum),
        cmocka_unit_test(test_pbt_changes),        cmocka_unit_test(test_diverged_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
