/* warm_start's trials for the searchers; see warm.h. */
#include "warm.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

struct Warm {
    atomic_int refs;
    int64_t source;
    SearcherType type;
    bool sealed;
    BayesObservation *obs; /* configs owned */
    int64_t n_obs, cap_obs;
    /* random: the tried configs as canonical JSON text (warm_key), in an
     * open-addressing table of cap_set slots (a power of two, at most half
     * full); NULL slots are free. */
    char **set;
    uint64_t *set_hash;
    int64_t n_set, cap_set;
    /* grid: the tried combinations of the grid searcher's enumeration,
     * ascending and distinct once sealed, and the enumeration's size. */
    int64_t *combos;
    int64_t n_combos, cap_combos;
    int64_t grid;
};

Warm *warm_new(const Spec *spec, int64_t source)
{
    Warm *w = calloc(1, sizeof *w);
    if (w == NULL)
        abort();
    atomic_init(&w->refs, 1);
    w->source = source;
    w->type = spec->searcher.type;
    return w;
}

Warm *warm_ref(Warm *w)
{
    if (w != NULL)
        atomic_fetch_add(&w->refs, 1);
    return w;
}

void warm_free(Warm *w)
{
    if (w == NULL || atomic_fetch_sub(&w->refs, 1) != 1)
        return;
    for (int64_t i = 0; i < w->n_obs; i++)
        json_decref((json_t *)w->obs[i].config);
    free(w->obs);
    for (int64_t i = 0; i < w->cap_set; i++)
        free(w->set[i]);
    free(w->set);
    free(w->set_hash);
    free(w->combos);
    free(w);
}

int64_t warm_source(const Warm *w)
{
    return w->source;
}

int64_t warm_count(const Warm *w)
{
    return w->n_obs;
}

const BayesObservation *warm_observations(const Warm *w)
{
    return w->obs;
}

/* ---- the set of tried configs (random) ---- */

/* A config as text that two configs share exactly when they are JSON-equal
 * (keys sorted, so objects among grid values compare whatever their key
 * order; jansson prints a real with the digits that read back the same
 * double, and 1 and 1.0 differently, as json_equal tells them apart). */
static char *warm_key(const json_t *config)
{
    return json_dumps(config, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

/* FNV-1a, 64 bits. */
static uint64_t text_hash(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
    return h;
}

/* The slot of key (hash h): where it is, or the free slot it would take. */
static int64_t set_slot(const Warm *w, const char *key, uint64_t h)
{
    uint64_t mask = (uint64_t)w->cap_set - 1;
    for (uint64_t i = h & mask;; i = (i + 1) & mask)
        if (w->set[i] == NULL || (w->set_hash[i] == h && strcmp(w->set[i], key) == 0))
            return (int64_t)i;
}

/* Adds key (stolen) unless it is there. */
static void set_add(Warm *w, char *key)
{
    if (2 * (w->n_set + 1) > w->cap_set) {
        int64_t old_cap = w->cap_set;
        char **old = w->set;
        uint64_t *old_hash = w->set_hash;
        w->cap_set = old_cap ? 2 * old_cap : 64;
        w->set = calloc((size_t)w->cap_set, sizeof *w->set);
        w->set_hash = calloc((size_t)w->cap_set, sizeof *w->set_hash);
        if (w->set == NULL || w->set_hash == NULL)
            abort();
        for (int64_t i = 0; i < old_cap; i++)
            if (old[i] != NULL) {
                int64_t s = set_slot(w, old[i], old_hash[i]);
                w->set[s] = old[i];
                w->set_hash[s] = old_hash[i];
            }
        free(old);
        free(old_hash);
    }
    uint64_t h = text_hash(key);
    int64_t s = set_slot(w, key, h);
    if (w->set[s] != NULL) {
        free(key);
        return;
    }
    w->set[s] = key;
    w->set_hash[s] = h;
    w->n_set++;
}

static bool set_has(const Warm *w, const json_t *config)
{
    if (w->n_set == 0)
        return false;
    char *key = warm_key(config);
    if (key == NULL)
        abort();
    int64_t s = set_slot(w, key, text_hash(key));
    bool has = w->set[s] != NULL;
    free(key);
    return has;
}

/* ---- building ---- */

bool warm_add(Warm *w, const Spec *spec, TrialState state, const json_t *config, const json_t *last)
{
    if (w->sealed || !json_is_object(config))
        return false;
    double loss;
    if (state == TRIAL_FAILED) {
        loss = INFINITY;
    } else if (state == TRIAL_COMPLETED || state == TRIAL_STOPPED) {
        double v;
        if (last == NULL || core_objective(spec, last, &v) != 1)
            return false;
        loss = isfinite(v) ? spec_loss(spec, v) : INFINITY;
    } else {
        return false;
    }
    /* The config as the new space has it: its parameters (of the branches
     * it took), in its order, each a value its domain can take. */
    json_t *c = space_conform(spec->space, config);
    if (c == NULL)
        return false;
    /* The other objectives and the constraints as core_trial_observation
     * has them: the new experiment's, read from the source's last report. */
    BayesObservation o = {.config = c, .loss = loss};
    double l[SPEC_MAX_OBJECTIVES];
    bool ok = state != TRIAL_FAILED && spec_losses(spec, last, l);
    for (int k = 1; k < spec->n_objectives; k++)
        o.more[k - 1] = ok && isfinite(l[k]) ? l[k] : INFINITY;
    for (int k = 0; k < BAYES_MAX_CONSTRAINTS; k++)
        o.cons[k] = NAN;
    if (state != TRIAL_FAILED)
        spec_constraint_values(spec, last, o.cons);
    rung_grow((void **)&w->obs, &w->cap_obs, w->n_obs, sizeof *w->obs);
    w->obs[w->n_obs++] = o;
    if (w->type == SEARCHER_RANDOM) {
        char *key = warm_key(c);
        if (key == NULL)
            abort();
        set_add(w, key);
    } else if (w->type == SEARCHER_GRID) {
        int64_t combo = sampler_grid_index(spec->space, c, spec->searcher.grid_order);
        if (combo >= 0) {
            rung_grow((void **)&w->combos, &w->cap_combos, w->n_combos, sizeof *w->combos);
            w->combos[w->n_combos++] = combo;
        }
    }
    return true;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t warm_total_trials(const Warm *w, const Spec *spec)
{
    if (w == NULL || w->type != SEARCHER_GRID || w->grid <= 0)
        return spec->total_trials;
    return (w->grid - w->n_combos) * spec->num_samples;
}

int warm_seal(Warm *w, Spec *spec, RungError *err)
{
    w->sealed = true;
    if (w->type != SEARCHER_GRID)
        return 0;
    if (w->n_combos > 0)
        qsort(w->combos, (size_t)w->n_combos, sizeof *w->combos, cmp_i64);
    int64_t n = 0;
    for (int64_t i = 0; i < w->n_combos; i++)
        if (n == 0 || w->combos[i] != w->combos[n - 1])
            w->combos[n++] = w->combos[i];
    w->n_combos = n;
    /* The enumeration's size, as spec_parse counted it for one sample. */
    int rc = sampler_total_trials(spec->space, &spec->searcher, 1, &w->grid, err);
    if (rc != 0)
        return rc;
    if (w->n_combos >= w->grid)
        return rung_error_set(err, RUNG_E_INVALID_SPEC, "warm_start.experiment",
                              "warm_start.experiment: experiment %lld tried every one of the "
                              "%lld combinations the grid searcher enumerates",
                              (long long)w->source, (long long)w->grid);
    /* (G - T) * num_samples <= G * num_samples, which spec_parse bounded. */
    spec->total_trials = warm_total_trials(w, spec);
    if (spec->points != NULL && (int64_t)json_array_size(spec->points) > spec->total_trials)
        return rung_error_set(err, RUNG_E_INVALID_SPEC, "points_to_evaluate",
                              "points_to_evaluate: %zu points, but the experiment has %lld "
                              "trials (the grid's combinations that experiment %lld did not "
                              "try, times num_samples)",
                              json_array_size(spec->points), (long long)spec->total_trials,
                              (long long)w->source);
    return 0;
}

/* ---- proposing ---- */

int64_t warm_n_initial(const Warm *w, const SearcherSpec *searcher)
{
    int64_t n = searcher->n_initial;
    if (w == NULL)
        return n;
    return w->n_obs >= n ? 0 : n - w->n_obs;
}

/* The untried combination of rank r (0-based, r < grid - n_combos): r plus
 * the number j of tried combinations below it, the smallest j with
 * combos[j] - j > r (combos[j] - j untried ones lie below combos[j]). */
static int64_t untried(const Warm *w, int64_t r)
{
    int64_t lo = 0, hi = w->n_combos;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (w->combos[mid] - mid <= r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return r + lo;
}

json_t *warm_config(const Warm *w, const Space *space, const SearcherSpec *searcher, int64_t number)
{
    if (w == NULL || number < 0)
        return sampler_config(space, searcher, number);
    if (searcher->type == SEARCHER_GRID && w->type == SEARCHER_GRID && w->grid > 0) {
        int64_t left = w->grid - w->n_combos;
        if (left < 1)
            return NULL;
        return sampler_config(space, searcher, untried(w, number % left));
    }
    json_t *c = sampler_config(space, searcher, number);
    if (searcher->type != SEARCHER_RANDOM || w->type != SEARCHER_RANDOM)
        return c;
    for (int64_t k = 1; c != NULL && k <= WARM_MAX_REDRAWS && set_has(w, c); k++) {
        json_decref(c);
        c = sampler_redraw(space, searcher, number, k);
    }
    return c;
}
