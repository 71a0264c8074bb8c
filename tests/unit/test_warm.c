/* Unit tests of server/warm.c (warm_start's trials: which are taken and as
 * what, the n_initial they stand for, grid skipping with its trial count,
 * random redraws) and of server/propose.c's part (points_to_evaluate laid
 * over the searcher's configs, and the proposer thread using both). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "propose.h"
#include "spec.h"
#include "warm.h"

static json_t *load(const char *text)
{
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (j == NULL)
        fail_msg("bad JSON in test: %s: %s", text, jerr.text);
    return j;
}

/* spec_parse of text plus an external trainable. */
static void parse(const char *text, Spec *spec)
{
    json_t *j = load(text);
    json_object_set_new(j, "trainable", json_pack("{s:s}", "type", "external"));
    RungError err;
    rung_error_clear(&err);
    if (spec_parse(j, 42, spec, &err) != 0)
        fail_msg("spec rejected: %s", err.message);
    json_decref(j);
}

/* Adds a trial given as JSON texts (last may be NULL). */
static bool add(Warm *w, const Spec *spec, TrialState state, const char *config, const char *last)
{
    json_t *c = load(config);
    json_t *l = last ? load(last) : NULL;
    bool taken = warm_add(w, spec, state, c, l);
    json_decref(c);
    json_decref(l);
    return taken;
}

static void assert_json(const json_t *v, const char *text)
{
    json_t *want = load(text);
    char *got = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!json_equal((json_t *)v, want))
        fail_msg("got %s, want %s", got, text);
    /* Equal, and in the same key order. */
    char *w = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
    assert_string_equal(got, w);
    free(got);
    free(w);
    json_decref(want);
}

/* Which trials are taken, their configs restricted to the new space in its
 * order, and their losses in the new metric and mode. */
static void test_what_is_taken(void **state)
{
    (void)state;
    Spec spec;
    parse("{\"metric\": \"acc\", \"mode\": \"max\", \"searcher\": {\"type\": \"bayes\"},"
          " \"search_space\": {\"b\": {\"type\": \"uniform\", \"low\": 0, \"high\": 10},"
          " \"a\": {\"type\": \"choice\", \"values\": [\"p\", \"q\"]}}}",
          &spec);
    Warm *w = warm_new(&spec, 7);
    assert_int_equal(warm_source(w), 7);
    /* Taken: completed and stopped with the metric, failed without. */
    assert_true(add(w, &spec, TRIAL_COMPLETED, "{\"z\": 1, \"a\": \"p\", \"b\": 2}",
                    "{\"acc\": 0.9, \"loss\": 3}"));
    assert_true(add(w, &spec, TRIAL_STOPPED, "{\"a\": \"q\", \"b\": 2.5}", "{\"acc\": \"NaN\"}"));
    assert_true(add(w, &spec, TRIAL_FAILED, "{\"a\": \"q\", \"b\": 3.5}", NULL));
    /* Skipped: no metric, a value outside the new domains, a parameter
     * missing, a trial not finished or canceled. */
    assert_false(add(w, &spec, TRIAL_COMPLETED, "{\"a\": \"p\", \"b\": 1}", "{\"loss\": 1}"));
    assert_false(add(w, &spec, TRIAL_COMPLETED, "{\"a\": \"p\", \"b\": 1}", NULL));
    assert_false(add(w, &spec, TRIAL_COMPLETED, "{\"a\": \"r\", \"b\": 1}", "{\"acc\": 1}"));
    assert_false(add(w, &spec, TRIAL_COMPLETED, "{\"a\": \"p\", \"b\": 11}", "{\"acc\": 1}"));
    assert_false(add(w, &spec, TRIAL_COMPLETED, "{\"a\": \"p\"}", "{\"acc\": 1}"));
    assert_false(add(w, &spec, TRIAL_CANCELED, "{\"a\": \"p\", \"b\": 1}", "{\"acc\": 1}"));
    assert_false(add(w, &spec, TRIAL_RUNNING, "{\"a\": \"p\", \"b\": 1}", "{\"acc\": 1}"));
    RungError err;
    assert_int_equal(warm_seal(w, &spec, &err), 0);
    assert_false(add(w, &spec, TRIAL_FAILED, "{\"a\": \"q\", \"b\": 3.5}", NULL));

    assert_int_equal(warm_count(w), 3);
    const BayesObservation *o = warm_observations(w);
    /* The new space's order (b, a); b an integer made a real. */
    assert_json(o[0].config, "{\"b\": 2.0, \"a\": \"p\"}");
    assert_true(o[0].loss == -0.9); /* mode max: negated */
    assert_json(o[1].config, "{\"b\": 2.5, \"a\": \"q\"}");
    assert_true(isinf(o[1].loss) && o[1].loss > 0);
    assert_true(isinf(o[2].loss) && o[2].loss > 0);

    /* n_initial: max(5, 2 * 1) = 5; the three warm trials count. */
    assert_int_equal(spec.searcher.n_initial, 5);
    assert_int_equal(warm_n_initial(w, &spec.searcher), 2);
    assert_int_equal(warm_n_initial(NULL, &spec.searcher), 5);
    SearcherSpec few = spec.searcher;
    few.n_initial = 3;
    assert_int_equal(warm_n_initial(w, &few), 0);
    /* References. */
    assert_ptr_equal(warm_ref(w), w);
    warm_free(w);
    assert_int_equal(warm_count(w), 3);
    warm_free(w);
    warm_free(NULL);
    spec_close(&spec);
}

static const char *const GRID =
    "{\"metric\": \"loss\", \"mode\": \"min\", \"searcher\": {\"type\": \"grid\"},"
    " \"num_samples\": 2, \"search_space\": {\"x\": {\"type\": \"grid\", \"values\": [1, 2, 3]},"
    " \"y\": {\"type\": \"choice\", \"values\": [\"a\", \"b\"]}, \"k\": 0}}";

/* The grid searcher skips the tried combinations, in every repetition, and
 * has that many fewer trials. */
static void test_grid_skips(void **state)
{
    (void)state;
    Spec spec;
    parse(GRID, &spec);
    assert_int_equal(spec.total_trials, 12);
    Warm *w = warm_new(&spec, 1);
    const char *m = "{\"loss\": 1}";
    assert_true(add(w, &spec, TRIAL_COMPLETED, "{\"x\": 1, \"y\": \"b\", \"k\": 0}", m));
    assert_true(add(w, &spec, TRIAL_FAILED, "{\"x\": 3, \"y\": \"a\", \"k\": 0}", NULL));
    assert_true(add(w, &spec, TRIAL_COMPLETED, "{\"x\": 1, \"y\": \"b\", \"k\": 0}", m));
    RungError err;
    assert_int_equal(warm_seal(w, &spec, &err), 0);
    assert_int_equal(spec.total_trials, 8); /* (6 - 2) x 2 */
    assert_int_equal(warm_total_trials(w, &spec), 8);
    spec.num_samples = 3; /* as PATCH would */
    assert_int_equal(warm_total_trials(w, &spec), 12);
    assert_int_equal(warm_total_trials(NULL, &spec), spec.total_trials);
    const char *want[] = {"{\"x\": 1, \"y\": \"a\", \"k\": 0}",
                          "{\"x\": 2, \"y\": \"a\", \"k\": 0}",
                          "{\"x\": 2, \"y\": \"b\", \"k\": 0}",
                          "{\"x\": 3, \"y\": \"b\", \"k\": 0}"};
    for (int64_t n = 0; n < 8; n++) {
        json_t *c = warm_config(w, spec.space, &spec.searcher, n);
        assert_json(c, want[n % 4]);
        json_decref(c);
    }
    warm_free(w);
    spec_close(&spec);
}

static void test_grid_refusals(void **state)
{
    (void)state;
    Spec spec;
    parse(GRID, &spec);
    Warm *w = warm_new(&spec, 9);
    const char *xs[] = {"1", "2", "3"}, *ys[] = {"\"a\"", "\"b\""};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) {
            char c[64];
            snprintf(c, sizeof c, "{\"x\": %s, \"y\": %s, \"k\": 0}", xs[i], ys[j]);
            assert_true(add(w, &spec, TRIAL_COMPLETED, c, "{\"loss\": 0}"));
        }
    RungError err;
    assert_int_equal(warm_seal(w, &spec, &err), RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "warm_start.experiment");
    assert_non_null(strstr(err.message, "experiment 9"));
    warm_free(w);
    spec_close(&spec);

    /* Fewer trials than points_to_evaluate. */
    parse("{\"metric\": \"loss\", \"mode\": \"min\", \"searcher\": {\"type\": \"grid\"},"
          " \"search_space\": {\"x\": {\"type\": \"grid\", \"values\": [1, 2, 3]}},"
          " \"points_to_evaluate\": [{}, {}, {\"x\": 2}]}",
          &spec);
    w = warm_new(&spec, 9);
    assert_true(add(w, &spec, TRIAL_COMPLETED, "{\"x\": 2}", "{\"loss\": 0}"));
    assert_int_equal(warm_seal(w, &spec, &err), RUNG_E_INVALID_SPEC);
    assert_string_equal(err.field, "points_to_evaluate");
    warm_free(w);
    spec_close(&spec);
}

/* Random search draws again where the draw was tried: never a tried config
 * while untried ones are likely to come up, the same configs every time,
 * and the draws of the untried trials unchanged. */
static void test_random_redraws(void **state)
{
    (void)state;
    for (int quasi = 0; quasi < 2; quasi++) {
        Spec spec;
        parse(quasi ? "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 50,"
                      " \"searcher\": {\"seed\": 3, \"quasi\": true},"
                      " \"search_space\": {\"a\": {\"type\": \"choice\", \"values\": [1, 2, 3]},"
                      " \"b\": {\"type\": \"randint\", \"low\": 0, \"high\": 3}}}"
                    : "{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 50,"
                      " \"searcher\": {\"seed\": 3},"
                      " \"search_space\": {\"a\": {\"type\": \"choice\", \"values\": [1, 2, 3]},"
                      " \"b\": {\"type\": \"randint\", \"low\": 0, \"high\": 3}}}",
              &spec);
        /* Tried: the configs of trials 0..5 (some may repeat), of 9. */
        Warm *w = warm_new(&spec, 2);
        json_t *tried[6], *metrics = load("{\"loss\": 1}");
        for (int n = 0; n < 6; n++) {
            tried[n] = sampler_config(spec.space, &spec.searcher, n);
            assert_true(warm_add(w, &spec, TRIAL_COMPLETED, tried[n], metrics));
        }
        json_decref(metrics);
        RungError err;
        assert_int_equal(warm_seal(w, &spec, &err), 0);
        assert_int_equal(spec.total_trials, 50); /* random: unchanged */
        int redrawn = 0;
        for (int64_t n = 0; n < 50; n++) {
            json_t *plain = sampler_config(spec.space, &spec.searcher, n);
            json_t *c = warm_config(w, spec.space, &spec.searcher, n);
            json_t *again = warm_config(w, spec.space, &spec.searcher, n);
            assert_true(json_equal(c, again));
            bool was_tried = false;
            for (int i = 0; i < 6; i++) {
                assert_false(json_equal(c, tried[i]));
                was_tried = was_tried || json_equal(plain, tried[i]);
            }
            if (was_tried)
                redrawn++;
            else
                assert_true(json_equal(c, plain));
            json_decref(plain);
            json_decref(c);
            json_decref(again);
        }
        assert_true(redrawn >= 6); /* trials 0..5 at least */
        for (int i = 0; i < 6; i++)
            json_decref(tried[i]);
        warm_free(w);
        spec_close(&spec);
    }
}

/* Every config tried: the redraws end, and a config still comes. */
static void test_random_all_tried(void **state)
{
    (void)state;
    Spec spec;
    parse("{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 4,"
          " \"search_space\": {\"a\": {\"type\": \"choice\", \"values\": [1, 2]}}}",
          &spec);
    Warm *w = warm_new(&spec, 2);
    assert_true(add(w, &spec, TRIAL_COMPLETED, "{\"a\": 1}", "{\"loss\": 0}"));
    assert_true(add(w, &spec, TRIAL_COMPLETED, "{\"a\": 2}", "{\"loss\": 0}"));
    RungError err;
    assert_int_equal(warm_seal(w, &spec, &err), 0);
    for (int64_t n = 0; n < 4; n++) {
        json_t *c = warm_config(w, spec.space, &spec.searcher, n);
        assert_non_null(c);
        json_decref(c);
    }
    warm_free(w);
    spec_close(&spec);
}

/* propose_lay_over: the point's values over the config, in its order. */
static void test_lay_over(void **state)
{
    (void)state;
    Spec spec;
    parse("{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 3,"
          " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 4},"
          " \"n\": {\"type\": \"randint\", \"low\": 0, \"high\": 9}, \"k\": \"c\"}}",
          &spec);
    json_t *point = load("{\"n\": 7, \"x\": 2}");
    json_t *c = propose_lay_over(spec.space, load("{\"x\": 0.5, \"n\": 3, \"k\": \"c\"}"), point);
    assert_json(c, "{\"x\": 2.0, \"n\": 7, \"k\": \"c\"}");
    json_decref(c);
    json_decref(point);
    json_t *empty = load("{}");
    json_t *base = load("{\"x\": 0.5, \"n\": 3, \"k\": \"c\"}");
    c = propose_lay_over(spec.space, json_incref(base), empty);
    assert_ptr_equal(c, base);
    json_decref(c);
    json_decref(base);
    assert_null(propose_lay_over(spec.space, NULL, empty));
    json_decref(empty);
    spec_close(&spec);
}

/* ---- the proposer thread ---- */

typedef struct Got {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    Proposals *p;
    int explores; /* pb2 explores that came back: none is asked for here */
} Got;

static void on_done(void *ctx, Proposals *p)
{
    Got *g = ctx;
    pthread_mutex_lock(&g->mu);
    g->p = p;
    pthread_cond_signal(&g->cond);
    pthread_mutex_unlock(&g->mu);
}

static Proposals *ask(Proposer *pr, Got *g, const Spec *spec, const SearcherSpec *searcher,
                      Warm *warm, int64_t first, int64_t count, ProposeHistory *history)
{
    proposer_request(pr, 1, json_object_get(spec->json, "search_space"), searcher, spec->points,
                     warm, first, count, history);
    pthread_mutex_lock(&g->mu);
    while (g->p == NULL)
        pthread_cond_wait(&g->cond, &g->mu);
    Proposals *p = g->p;
    g->p = NULL;
    pthread_mutex_unlock(&g->mu);
    assert_int_equal(p->first, first);
    assert_int_equal(p->count, count);
    return p;
}

/* This test asks for no pb2 explore: one coming back is counted, and
 * the test fails on it. */
static void on_explored(void *ctx, PbtExplore *x)
{
    Got *g = ctx;
    pbt_explore_free(x);
    pthread_mutex_lock(&g->mu);
    g->explores++;
    pthread_mutex_unlock(&g->mu);
}

/* Points first, in order, over the warm-skipping grid; bayes takes them
 * too, and proposes from its model once the warm trials are n_initial. */
static void test_proposer(void **state)
{
    (void)state;
    Got g = {.p = NULL};
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cond, NULL);
    Proposer *pr = proposer_start(on_done, on_explored, &g);
    assert_non_null(pr);

    Spec spec;
    parse("{\"metric\": \"loss\", \"mode\": \"min\", \"searcher\": {\"type\": \"grid\"},"
          " \"search_space\": {\"x\": {\"type\": \"grid\", \"values\": [1, 2, 3]},"
          " \"y\": {\"type\": \"choice\", \"values\": [\"a\", \"b\"]}},"
          " \"points_to_evaluate\": [{\"y\": \"b\"}, {\"x\": 1, \"y\": \"a\"}]}",
          &spec);
    Warm *w = warm_new(&spec, 1);
    assert_true(add(w, &spec, TRIAL_COMPLETED, "{\"x\": 1, \"y\": \"a\"}", "{\"loss\": 0}"));
    RungError err;
    assert_int_equal(warm_seal(w, &spec, &err), 0);
    assert_int_equal(spec.total_trials, 5);
    Proposals *p = ask(pr, &g, &spec, &spec.searcher, w, 0, 5, NULL);
    /* Untried, in Ray's order (x before y, so x fastest): (2,a) (3,a)
     * (1,b) (2,b) (3,b); points over the first two. */
    assert_json(p->configs[0], "{\"x\": 2, \"y\": \"b\"}");
    assert_json(p->configs[1], "{\"x\": 1, \"y\": \"a\"}");
    assert_json(p->configs[2], "{\"x\": 1, \"y\": \"b\"}");
    assert_json(p->configs[4], "{\"x\": 3, \"y\": \"b\"}");
    proposals_free(p);
    /* From trial 1 on, only the second point applies. */
    p = ask(pr, &g, &spec, &spec.searcher, w, 1, 2, NULL);
    assert_json(p->configs[0], "{\"x\": 1, \"y\": \"a\"}");
    assert_json(p->configs[1], "{\"x\": 1, \"y\": \"b\"}");
    proposals_free(p);
    warm_free(w);
    spec_close(&spec);

    /* bayes with 8 warm observations and n_initial 4: trial 0 comes from
     * the model (not Sobol point 0), and the point's value is laid over. */
    parse("{\"metric\": \"loss\", \"mode\": \"min\", \"num_samples\": 3,"
          " \"searcher\": {\"type\": \"bayes\", \"seed\": 5, \"n_initial\": 4},"
          " \"search_space\": {\"x\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
          " \"y\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1}},"
          " \"points_to_evaluate\": [{\"y\": 0.25}]}",
          &spec);
    w = warm_new(&spec, 1);
    for (int i = 0; i < 8; i++) {
        char c[96], m[64];
        double x = (i + 0.5) / 8, y = ((i * 3) % 8 + 0.5) / 8;
        snprintf(c, sizeof c, "{\"x\": %.17g, \"y\": %.17g}", x, y);
        snprintf(m, sizeof m, "{\"loss\": %.17g}", (x - 0.3) * (x - 0.3) + (y - 0.6) * (y - 0.6));
        assert_true(add(w, &spec, TRIAL_COMPLETED, c, m));
    }
    assert_int_equal(warm_seal(w, &spec, &err), 0);
    SearcherSpec adjusted = spec.searcher;
    adjusted.n_initial = warm_n_initial(w, &adjusted);
    assert_int_equal(adjusted.n_initial, 0);
    ProposeHistory *hist = calloc(1, sizeof *hist);
    hist->obs = calloc(8, sizeof *hist->obs);
    for (int i = 0; i < 8; i++) {
        hist->obs[i] = warm_observations(w)[i];
        json_incref((json_t *)hist->obs[i].config);
    }
    hist->n_obs = 8;
    p = ask(pr, &g, &spec, &adjusted, w, 0, 1, hist);
    assert_non_null(p->configs[0]);
    json_t *sobol = sampler_config(spec.space, &spec.searcher, 0);
    assert_false(json_equal(json_object_get(p->configs[0], "x"), json_object_get(sobol, "x")));
    assert_true(json_real_value(json_object_get(p->configs[0], "y")) == 0.25);
    json_decref(sobol);
    proposals_free(p);
    warm_free(w);
    spec_close(&spec);

    proposer_stop(pr);
    assert_int_equal(g.explores, 0);
    pthread_mutex_destroy(&g.mu);
    pthread_cond_destroy(&g.cond);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_what_is_taken),    cmocka_unit_test(test_grid_skips),
        cmocka_unit_test(test_grid_refusals),    cmocka_unit_test(test_random_redraws),
        cmocka_unit_test(test_random_all_tried), cmocka_unit_test(test_lay_over),
        cmocka_unit_test(test_proposer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
