/* Conditional spaces on a real trainer: Rung's bayes and random searchers
 * on examples/fmnist-conditional.json's space (an optimizer choice, a
 * network choice of 1, 2 or 3 hidden layers with per-layer widths,
 * dropout), each config trained by the rung-train program on Fashion-MNIST
 * (bench/conditional_fmnist.sh; bench/optuna_conditional_fmnist.py is the
 * peer). The searchers run in-process through the sampler API, as
 * bench/conditional.c does; each evaluation runs
 *
 *     rung-train --config '{...the config..., "seed": 0, "threads": 1}'
 *
 * and takes the val_loss of its last `@rung` line. A run that fails, or
 * whose val_loss is not finite, is a failed trial (+inf to bayes, as
 * rungd reports it; never the best).
 *
 * Usage: conditional_fmnist RUNG_TRAIN SPEC.json SEEDS EVALS TRAIN_SAMPLES EPOCHS
 * SPEC's search_space is searched with its constants epochs and
 * train_samples replaced by EPOCHS and TRAIN_SAMPLES, and bayes takes its
 * searcher.n_initial. Prints one JSON object per searcher:
 * {"searcher", "evals", "seconds", "best": [[best val_loss so far, per
 * evaluation] per seed], "failed": N}. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bayes.h"
#include "sampler.h"

extern char **environ;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs train with the config c (plus seed 0 and one thread); the last
 * report's val_loss, or +inf when the run failed or it is not finite. */
static double evaluate(const char *train, const json_t *c)
{
    json_t *cfg = json_deep_copy(c);
    json_object_set_new(cfg, "seed", json_integer(0));
    json_object_set_new(cfg, "threads", json_integer(1));
    char *text = json_dumps(cfg, JSON_COMPACT);
    json_decref(cfg);
    int fds[2];
    if (text == NULL || pipe(fds) != 0) {
        perror("conditional_fmnist: pipe");
        exit(1);
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    char *argv[] = {(char *)train, "--config", text, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, train, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        fprintf(stderr, "conditional_fmnist: %s: %s\n", train, strerror(rc));
        exit(1);
    }
    FILE *out = fdopen(fds[0], "r");
    char line[4096], last[4096] = "";
    double loss = INFINITY;
    while (fgets(line, sizeof line, out) != NULL) {
        snprintf(last, sizeof last, "%s", line);
        const char *v = strncmp(line, "@rung ", 6) == 0 ? strstr(line, "\"val_loss\": ") : NULL;
        if (v != NULL)
            loss = strtod(v + strlen("\"val_loss\": "), NULL);
    }
    fclose(out);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "conditional_fmnist: %s failed (%s): %s", text,
                WIFEXITED(status) ? "exit status" : "signal", last);
        loss = INFINITY;
    }
    free(text);
    return isfinite(loss) ? loss : INFINITY;
}

/* Replaces the constant key of space with the integer value. */
static void set_constant(json_t *space, const char *key, long long value)
{
    if (json_object_get(space, key) == NULL || json_is_object(json_object_get(space, key))) {
        fprintf(stderr, "conditional_fmnist: the space has no constant %s\n", key);
        exit(2);
    }
    json_object_set_new(space, key, json_integer(value));
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: conditional_fmnist RUNG_TRAIN SPEC.json SEEDS EVALS "
                        "TRAIN_SAMPLES EPOCHS\n");
        return 2;
    }
    const char *train = argv[1];
    int seeds = atoi(argv[3]), evals = atoi(argv[4]);
    long long train_samples = atoll(argv[5]), epochs = atoll(argv[6]);
    if (seeds < 1 || evals < 1 || train_samples < 1 || epochs < 1) {
        fprintf(stderr, "conditional_fmnist: SEEDS, EVALS, TRAIN_SAMPLES, EPOCHS must be >= 1\n");
        return 2;
    }
    json_error_t jerr;
    json_t *spec = json_load_file(argv[2], 0, &jerr);
    json_t *space_json = spec ? json_object_get(spec, "search_space") : NULL;
    if (space_json == NULL) {
        fprintf(stderr, "conditional_fmnist: %s: no search_space (%s)\n", argv[2], jerr.text);
        return 2;
    }
    set_constant(space_json, "epochs", epochs);
    set_constant(space_json, "train_samples", train_samples);
    json_t *n_initial = json_object_get(json_object_get(spec, "searcher"), "n_initial");
    Space *space = NULL;
    RungError err;
    if (space_parse(space_json, &space, &err) != 0) {
        fprintf(stderr, "conditional_fmnist: space: %s\n", err.message);
        return 1;
    }
    const char *searchers[] = {"random", "bayes"};
    for (int k = 0; k < 2; k++) {
        double t0 = now_s();
        int failed = 0;
        json_t *rows = json_array();
        for (int seed = 0; seed < seeds; seed++) {
            json_t *sj = json_pack("{s:s, s:i}", "type", searchers[k], "seed", seed);
            if (k == 1 && n_initial != NULL)
                json_object_set(sj, "n_initial", n_initial);
            SearcherSpec ss;
            if (searcher_parse(sj, space, &ss, &err) != 0) {
                fprintf(stderr, "conditional_fmnist: searcher: %s\n", err.message);
                return 1;
            }
            json_decref(sj);
            json_t **configs = calloc((size_t)evals, sizeof *configs);
            BayesObservation *obs = calloc((size_t)evals, sizeof *obs);
            json_t *row = json_array();
            double best = INFINITY;
            for (int n = 0; n < evals; n++) {
                json_t *c = NULL;
                if (k == 1) {
                    BayesHistory h = {.obs = obs, .n_obs = n};
                    if (bayes_propose(space, &ss, n, 1, &h, &c, &err) != 0) {
                        fprintf(stderr, "conditional_fmnist: bayes seed %d trial %d: %s\n", seed, n,
                                err.message);
                        return 1;
                    }
                } else {
                    c = sampler_config(space, &ss, n);
                }
                double f = evaluate(train, c);
                failed += !isfinite(f);
                configs[n] = c;
                obs[n] = (BayesObservation){.config = c, .loss = f};
                if (f < best)
                    best = f;
                json_array_append_new(row, isfinite(best) ? json_real(best) : json_null());
            }
            json_array_append_new(rows, row);
            for (int n = 0; n < evals; n++)
                json_decref(configs[n]);
            free(configs);
            free(obs);
            fprintf(stderr, "conditional_fmnist: rung-%s seed %d: best %.5f (%.0f s so far)\n",
                    searchers[k], seed, best, now_s() - t0);
        }
        json_t *o = json_pack("{s:s+, s:i, s:f, s:o, s:i}", "searcher", "rung-", searchers[k],
                              "evals", evals, "seconds", now_s() - t0, "best", rows, "failed",
                              failed);
        char *s = json_dumps(o, JSON_COMPACT);
        printf("%s\n", s);
        fflush(stdout);
        free(s);
        json_decref(o);
    }
    space_free(space);
    json_decref(spec);
    return 0;
}
