/* Conditional-space quality: Rung's random and bayes searchers on the
 * tree-structured function of Jenatton et al. (2017) (docs/searchers.md,
 * bench/conditional.sh). The space is examples/jenatton-bayes.json's:
 * a choice of two branches (x1), each with a choice of two leaves (x2 or
 * x3), each leaf one variable in [-1, 1], each branch a shift r8 or r9 in
 * [0, 1]; f* = 0.1.
 *
 * Usage: conditional SEEDS EVALS. Prints one JSON object per searcher:
 * {"searcher": ..., "evals": E, "regret": [[best so far - f*, per
 * evaluation] per seed]}. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bayes.h"
#include "sampler.h"

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

/* The function of a flat config; -1 when a key is missing. */
static double jenatton(const json_t *c)
{
    if (json_integer_value(json_object_get(c, "tree.x1")) == 0) {
        const json_t *x2 = json_object_get(c, "tree.left.x2");
        if (x2 == NULL)
            return -1.0;
        bool left = json_integer_value(x2) == 0;
        double x = num(c, left ? "tree.left.x4" : "tree.left.x5");
        return x * x + (left ? 0.1 : 0.2) + num(c, "tree.r8");
    }
    const json_t *x3 = json_object_get(c, "tree.right.x3");
    if (x3 == NULL)
        return -1.0;
    bool left = json_integer_value(x3) == 0;
    double x = num(c, left ? "tree.right.x6" : "tree.right.x7");
    return x * x + (left ? 0.3 : 0.4) + num(c, "tree.r9");
}

int main(int argc, char **argv)
{
    int seeds = argc > 1 ? atoi(argv[1]) : 20;
    int evals = argc > 2 ? atoi(argv[2]) : 100;
    if (seeds < 1 || evals < 1) {
        fprintf(stderr, "usage: conditional SEEDS EVALS\n");
        return 2;
    }
    json_t *space_json = json_loads(SPACE, 0, NULL);
    Space *space = NULL;
    RungError err;
    if (space_json == NULL || space_parse(space_json, &space, &err) != 0) {
        fprintf(stderr, "conditional: space: %s\n", err.message);
        return 1;
    }
    const char *searchers[] = {"random", "bayes"};
    for (int k = 0; k < 2; k++) {
        printf("{\"searcher\": \"rung-%s\", \"evals\": %d, \"regret\": [", searchers[k], evals);
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
                } else {
                    c = sampler_config(space, &spec, n);
                }
                double f = c ? jenatton(c) : -1.0;
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
