/* Unit tests of multi-fidelity bayes (sampler/bayes_mf.c, docs/searchers.md
 * "Multi-fidelity"): the fidelity rule (the highest rung level with enough
 * finite records), proposals that follow the chosen level's records rather
 * than another level's or the final results, running trials with a record
 * at that level left out of the believers, and the argument checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "bayes.h"
#include "sampler.h"
#include "space_testing.h"

static void test_level_rule(void **state)
{
    (void)state;
    json_t *c = json_object();
    BayesRungRecord r[10];
    /* 4 at level 1, 3 at level 3 (one NaN), 1 at level 9. */
    double levels[10] = {1, 1, 1, 1, 3, 3, 3, 9};
    for (int i = 0; i < 8; i++)
        r[i] = (BayesRungRecord){c, levels[i], i == 6 ? NAN : 0.5, i};
    assert_true(bayes_mf_level(r, 8, 1) == 9);
    assert_true(bayes_mf_level(r, 8, 2) == 3);
    assert_true(bayes_mf_level(r, 8, 3) == 1); /* level 3 has 2 finite */
    assert_true(bayes_mf_level(r, 8, 4) == 1);
    assert_true(bayes_mf_level(r, 8, 5) == 0);
    assert_true(bayes_mf_level(r, 0, 1) == 0);
    /* The order of records does not matter. */
    BayesRungRecord rev[8];
    for (int i = 0; i < 8; i++)
        rev[i] = r[7 - i];
    assert_true(bayes_mf_level(rev, 8, 2) == 3);
    json_decref(c);
}

static const char *SPACE1 = "{\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}}";

typedef struct Recs {
    BayesRungRecord r[64];
    json_t *owned[64];
    int n;
} Recs;

/* Records at level (n of them, x evenly spread) of the loss (x - centre)^2. */
static void add_level(Recs *R, double level, int n, double centre)
{
    for (int i = 0; i < n; i++) {
        double x = (i + 0.5) / n;
        json_t *c = json_pack("{s:f}", "x", x);
        R->owned[R->n] = c;
        R->r[R->n] = (BayesRungRecord){c, level, (x - centre) * (x - centre), R->n};
        R->n++;
    }
}

static double propose_x(const Recs *R, const BayesObservation *obs, int n_obs, double *level)
{
    Space *space = parse_space(SPACE1);
    SearcherSpec s = {.type = SEARCHER_BAYES, .seed = 3, .n_initial = 4};
    BayesHistory h = {.obs = obs, .n_obs = n_obs, .rungs = R->r, .n_rungs = R->n};
    json_t *c = NULL;
    RungError err;
    assert_int_equal(bayes_mf_propose(space, &s, 20, 1, &h, &c, level, &err), 0);
    double x = json_real_value(json_object_get(c, "x"));
    json_decref(c);
    space_free(space);
    return x;
}

/* Level 1 puts the optimum at 0.2, level 3 at 0.8 (a slow learner wins
 * later, as in lc4): with enough level-3 records the proposal follows
 * them; with too few it follows level 1; the final results (obs, at 0.5)
 * are not used once a level qualifies. */
static void test_follows_level(void **state)
{
    (void)state;
    Recs R = {0};
    add_level(&R, 1, 12, 0.2);
    add_level(&R, 3, 5, 0.8); /* min records: max(4, 1 + 2) = 4 */
    BayesObservation obs[8];
    json_t *oc[8];
    for (int i = 0; i < 8; i++) {
        double x = (i + 0.5) / 8;
        oc[i] = json_pack("{s:f}", "x", x);
        obs[i] = (BayesObservation){.config = oc[i], .loss = (x - 0.5) * (x - 0.5)};
    }
    double level = -1;
    double x = propose_x(&R, obs, 8, &level);
    assert_true(level == 3);
    if (!(fabs(x - 0.8) < 0.15))
        fail_msg("from level 3 (optimum 0.8) the proposal is %g", x);

    Recs few = {0};
    add_level(&few, 1, 12, 0.2);
    add_level(&few, 3, 3, 0.8);
    x = propose_x(&few, obs, 8, &level);
    assert_true(level == 1);
    if (!(fabs(x - 0.2) < 0.15))
        fail_msg("from level 1 (optimum 0.2) the proposal is %g", x);

    /* No level qualifies: the final results decide (optimum 0.5). */
    Recs none = {0};
    add_level(&none, 1, 3, 0.2);
    x = propose_x(&none, obs, 8, &level);
    assert_true(level == 0);
    if (!(fabs(x - 0.5) < 0.15))
        fail_msg("from the final results (optimum 0.5) the proposal is %g", x);

    /* Same records, same proposal (asynchronous proposals repeat). */
    double again_level;
    assert_true(propose_x(&R, obs, 8, &again_level) == propose_x(&R, obs, 8, &level));
    for (int i = 0; i < 8; i++)
        json_decref(oc[i]);
    for (int i = 0; i < R.n; i++)
        json_decref(R.owned[i]);
    for (int i = 0; i < few.n; i++)
        json_decref(few.owned[i]);
    for (int i = 0; i < none.n; i++)
        json_decref(none.owned[i]);
}

/* A running trial is a believer unless it already has a record at the
 * level: pending = the level's best config (a record) changes nothing,
 * pending = a new config near the optimum moves the proposal. */
static void test_believers(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE1);
    SearcherSpec s = {.type = SEARCHER_BAYES, .seed = 3, .n_initial = 4};
    Recs R = {0};
    add_level(&R, 1, 5, 0.37);
    RungError err;
    json_t *alone = NULL, *with_rec = NULL, *with_new = NULL;
    BayesHistory h = {.rungs = R.r, .n_rungs = R.n};
    assert_int_equal(bayes_mf_propose(space, &s, 20, 1, &h, &alone, NULL, &err), 0);
    const json_t *pend[1] = {R.r[1].config}; /* x = 0.3, recorded */
    h.pending = pend;
    h.n_pending = 1;
    assert_int_equal(bayes_mf_propose(space, &s, 20, 1, &h, &with_rec, NULL, &err), 0);
    assert_true(json_equal(alone, with_rec));
    pend[0] = alone;
    assert_int_equal(bayes_mf_propose(space, &s, 20, 1, &h, &with_new, NULL, &err), 0);
    double a = json_real_value(json_object_get(alone, "x"));
    double b = json_real_value(json_object_get(with_new, "x"));
    if (!(fabs(a - b) > 0.01))
        fail_msg("with %g pending the proposal is %g", a, b);
    json_decref(alone);
    json_decref(with_rec);
    json_decref(with_new);
    for (int i = 0; i < R.n; i++)
        json_decref(R.owned[i]);
    space_free(space);
}

static void test_bad_records(void **state)
{
    (void)state;
    Space *space = parse_space(SPACE1);
    SearcherSpec s = {.type = SEARCHER_BAYES, .seed = 3, .n_initial = 4};
    json_t *c = json_pack("{s:f}", "x", 0.5), *out = NULL;
    BayesRungRecord r[1] = {{c, 0, 1.0, 0}};
    BayesHistory h = {.rungs = r, .n_rungs = 1};
    RungError err;
    assert_int_equal(bayes_mf_propose(space, &s, 20, 1, &h, &out, NULL, &err),
                     RUNG_E_INVALID_ARGUMENT);
    r[0] = (BayesRungRecord){NULL, 1, 1.0, 0};
    assert_int_equal(bayes_mf_propose(space, &s, 20, 1, &h, &out, NULL, &err),
                     RUNG_E_INVALID_ARGUMENT);
    h.rungs = NULL;
    assert_int_equal(bayes_mf_propose(space, &s, 20, 1, &h, &out, NULL, &err),
                     RUNG_E_INVALID_ARGUMENT);
    assert_null(out);
    json_decref(c);
    space_free(space);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level_rule),
        cmocka_unit_test(test_follows_level),
        cmocka_unit_test(test_believers),
        cmocka_unit_test(test_bad_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
