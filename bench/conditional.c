/* Conditional-space quality: Rung's random, bayes and tpe searchers on the
 * tree-structured function of Jenatton et al. (2017) (docs/searchers.md,
 * bench/conditional.sh). The space is examples/jenatton-bayes.json's:
 * a choice of two branches (x1), each with a choice of two leaves (x2 or
 * x3), each leaf one variable in [-1, 1], each branch a shift r8 or r9 in
 * [0, 1]; f* = 0.1.
 *
 * Two problems on that space:
 * - jenatton: the function as published, f = x4^2 + 0.1 + r8 on the best
 *   leaf; its optimum lies at the centre of the leaf's variable (x4 = 0)
 *   and at a bound of the shift (r8 = 0).
 * - jenatton-shifted: every optimum moved off the centre and the bounds:
 *   each leaf's quadratic is centred at an off-centre point (x4 0.37,
 *   x5 -0.55, x6 0.71, x7 -0.23) and each shift enters as a quadratic
 *   with an interior minimum ((r8 - 0.3)^2, (r9 - 0.65)^2); the leaf
 *   constants are those of jenatton, so f* = 0.1 again (x1 = 0, x2 = 0,
 *   x4 = 0.37, r8 = 0.3).
 *
 * Usage: conditional SEEDS EVALS [PROBLEM] (jenatton by default). Prints
 * one JSON object per searcher: {"searcher": ..., "problem": ..., "evals":
 * E, "regret": [[best so far - f*, per evaluation] per seed]}. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bayes.h"
#include "sampler.h"
#include "tpe.h"

#define F_MIN 0.1

static const char *SPACE =
    "{\"tree\": {\"type\": \"choice\", \"values\": ["
    " {\"x1\": 0, \"r8\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
    "  \"left\": {\"type\": \"choice\", \"values\": ["
    "   {\"x2\": 0, \"x4\": {\"type\": \"uniform\", \"low\": -1, \"high\": 1}},"
    "   {\"x2\": 1, \"x5\": {\"type\": \"uniform\", \"low\": -1, \"high\": 1}}]}},"
    " {\"x1\": 1, \"r9\": {\"type\": \"uniform\", \"low\": 0, \"high\": 1},"
    "  \"right\": {\"type\": \"choice\", \"values\": ["
    "   {\"x3\": 0, \"x6\": {\"type\": \"uniform\", \"low\": -1, \"high\": 1}},"
    "   {\"x3\": 1, \"x7\": {\"type\": \"uniform\", \"low\": -1, \"high\": 1}}]}}]}}";

static double num(const json_t *c, const char *key)
{
    return json_number_value(json_object_get(c, key));
}

/* Where jenatton-shifted's leaves (x4 .. x7) and shifts (r8, r9) have
 * their minima. */
static const double LEAF_AT[4] = {0.37, -0.55, 0.71, -0.23};
static const double SHIFT_AT[2] = {0.3, 0.65};
/* Each leaf's constant, in both problems. */
static const double LEAF_BASE[4] = {0.1, 0.2, 0.3, 0.4};

/* The function of a flat config (shifted: jenatton-shifted); -1 when a
 * key is missing. */
static double jenatton(const json_t *c, bool shifted)
{
    int leaf; /* 0 .. 3: x4 .. x7 */
    double x, r;
    if (json_integer_value(json_object_get(c, "tree.x1")) == 0) {
        const json_t *x2 = json_object_get(c, "tree.left.x2");
        if (x2 == NULL)
            return -1.0;
        leaf = json_integer_value(x2) == 0 ? 0 : 1;
        x = num(c, leaf == 0 ? "tree.left.x4" : "tree.left.x5");
        r = num(c, "tree.r8");
    } else {
        const json_t *x3 = json_object_get(c, "tree.right.x3");
        if (x3 == NULL)
            return -1.0;
        leaf = json_integer_value(x3) == 0 ? 2 : 3;
        x = num(c, leaf == 2 ? "tree.right.x6" : "tree.right.x7");
        r = num(c, "tree.r9");
    }
    double base = LEAF_BASE[leaf];
    if (!shifted)
        return x * x + base + r;
    double dx = x - LEAF_AT[leaf], dr = r - SHIFT_AT[leaf / 2];
    return dx * dx + base + dr * dr;
}

int main(int argc, char **argv)
{
    int seeds = argc > 1 ? atoi(argv[1]) : 20;
    int evals = argc > 2 ? atoi(argv[2]) : 100;
    const char *problem = argc > 3 ? argv[3] : "jenatton";
    bool shifted = strcmp(problem, "jenatton-shifted") == 0;
    if (seeds < 1 || evals < 1 || (!shifted && strcmp(problem, "jenatton") != 0)) {
        fprintf(stderr, "usage: conditional SEEDS EVALS [jenatton|jenatton-shifted]\n");
        return 2;
    }
    json_t *space_json = json_loads(SPACE, 0, NULL);
    Space *space = NULL;
    RungError err;
    if (space_json == NULL || space_parse(space_json, &space, &err) != 0) {
        fprintf(stderr, "conditional: space: %s\n", err.message);
        return 1;
    }
    const char *searchers[] = {"random", "bayes", "tpe"};
    for (int k = 0; k < 3; k++) {
        printf("{\"searcher\": \"rung-%s\", \"problem\": \"%s\", \"evals\": %d, \"regret\": [",
               searchers[k], problem, evals);
        for (int seed = 0; seed < seeds; seed++) {
            char text[96];
            snprintf(text, sizeof text, "{\"type\": \"%s\", \"seed\": %d}", searchers[k], seed);
            json_t *sj = json_loads(text, 0, NULL);
            SearcherSpec spec;
            if (searcher_parse(sj, space, &spec, &err) != 0) {
                fprintf(stderr, "conditional: searcher: %s\n", err.message);
                return 1;
            }
            json_decref(sj);
            json_t **configs = calloc((size_t)evals, sizeof *configs);
            BayesObservation *obs = calloc((size_t)evals, sizeof *obs);
            double best = 1e300;
            printf("%s[", seed ? ", " : "");
            for (int n = 0; n < evals; n++) {
                json_t *c = NULL;
                if (k == 1) {
                    BayesHistory h = {.obs = obs, .n_obs = n};
                    if (bayes_propose(space, &spec, n, 1, &h, &c, &err) != 0) {
                        fprintf(stderr, "conditional: bayes seed %d trial %d: %s\n", seed, n,
                                err.message);
                        return 1;
                    }
                } else if (k == 2) {
                    BayesHistory h = {.obs = obs, .n_obs = n};
                    if (tpe_propose(space, &spec, n, 1, &h, &c, &err) != 0) {
                        fprintf(stderr, "conditional: tpe seed %d trial %d: %s\n", seed, n,
                                err.message);
                        return 1;
                    }
                } else {
                    c = sampler_config(space, &spec, n);
                }
                double f = c ? jenatton(c, shifted) : -1.0;
                if (f < 0.0) {
                    fprintf(stderr, "conditional: seed %d trial %d: a config of no leaf\n", seed,
                            n);
                    return 1;
                }
                configs[n] = c;
                obs[n] = (BayesObservation){.config = c, .loss = f};
                if (f < best)
                    best = f;
                printf("%s%.6g", n ? ", " : "", best - F_MIN);
            }
            printf("]");
            for (int n = 0; n < evals; n++)
                json_decref(configs[n]);
            free(configs);
            free(obs);
            fflush(stdout);
        }
        printf("]}\n");
    }
    space_free(space);
    json_decref(space_json);
    return 0;
}
