/* Parsing and validation of a search space (docs/api.md, "Search space").
 *
 * Every parameter is checked here, once, with the JSON path of the offending
 * field in the error, so that decoding and enumerating later can be plain
 * arithmetic that never fails on bad input. The bounds follow Ray Tune. */
#include "sampler_internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonv.h"

#define INVALID RUNG_E_INVALID_SPEC

/* Longest "type" string we look at; longer ones are unknown anyway. */
#define SPACE_MAX_TYPE 32

/* Keys each kind of domain object may have; any other is "unknown field". */
static const char *const KEYS_RANGE[] = {"type", "low", "high", "grid_points", NULL};
static const char *const KEYS_QRANGE[] = {"type", "low", "high", "q", "grid_points", NULL};
static const char *const KEYS_NORMAL[] = {"type", "mean", "sd", "grid_points", NULL};
static const char *const KEYS_QNORMAL[] = {"type", "mean", "sd", "q", "grid_points", NULL};
static const char *const KEYS_VALUES[] = {"type", "values", NULL};

static const struct {
    const char *name;
    SpaceKind kind;
    const char *const *keys;
} DOMAINS[] = {
    {"uniform", SPACE_UNIFORM, KEYS_RANGE},       {"quniform", SPACE_QUNIFORM, KEYS_QRANGE},
    {"loguniform", SPACE_LOGUNIFORM, KEYS_RANGE}, {"qloguniform", SPACE_QLOGUNIFORM, KEYS_QRANGE},
    {"randint", SPACE_RANDINT, KEYS_RANGE},       {"qrandint", SPACE_QRANDINT, KEYS_QRANGE},
    {"lograndint", SPACE_LOGRANDINT, KEYS_RANGE}, {"qlograndint", SPACE_QLOGRANDINT, KEYS_QRANGE},
    {"normal", SPACE_NORMAL, KEYS_NORMAL},        {"qnormal", SPACE_QNORMAL, KEYS_QNORMAL},
    {"choice", SPACE_CHOICE, KEYS_VALUES},        {"grid", SPACE_GRID, KEYS_VALUES},
};
#define N_DOMAINS (sizeof DOMAINS / sizeof DOMAINS[0])

static bool is_alpha_(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

/* docs/api.md: [A-Za-z_][A-Za-z0-9_.-]{0,63}. Plain ASCII tests, not <ctype.h>,
 * so that the locale can never widen what a name may hold. */
static bool name_ok(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > SPACE_MAX_NAME || !is_alpha_(name[0]))
        return false;
    for (size_t i = 1; i < len; i++) {
        char c = name[i];
        if (!is_alpha_(c) && !(c >= '0' && c <= '9') && c != '.' && c != '-')
            return false;
    }
    return true;
}

/* Floor and ceiling of a / b for b > 0, exact for any sign of a. */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && a < 0)
        q--;
    return q;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return -floor_div(-a, b);
}

static int out_of_memory(RungError *err)
{
    return rung_error_set(err, RUNG_E_INTERNAL, NULL, "out of memory");
}

/* "grid_points", shared by every numeric domain; builds the points. */
static int parse_grid_points(const json_t *spec, const char *path, SpaceParam *p, RungError *err)
{
    int rc = jsonv_int(spec, path, "grid_points", JSONV_OPTIONAL, 1, SPACE_MAX_GRID_POINTS,
                       &p->grid_points, INVALID, err);
    if (rc != 0)
        return rc;
    if (p->grid_points > 0 && space__make_points(p) != 0)
        return out_of_memory(err);
    return 0;
}

/* uniform, quniform, loguniform, qloguniform. */
static int parse_float(const json_t *spec, const char *path, SpaceParam *p, RungError *err)
{
    bool is_log = p->kind == SPACE_LOGUNIFORM || p->kind == SPACE_QLOGUNIFORM;
    bool is_quant = p->kind == SPACE_QUNIFORM || p->kind == SPACE_QLOGUNIFORM;
    char field[RUNG_FIELD_MAX];
    int rc = jsonv_number(spec, path, "low", JSONV_REQUIRED, &p->low, INVALID, err);
    if (rc == 0)
        rc = jsonv_number(spec, path, "high", JSONV_REQUIRED, &p->high, INVALID, err);
    if (rc == 0 && is_quant)
        rc = jsonv_number(spec, path, "q", JSONV_REQUIRED, &p->q, INVALID, err);
    if (rc != 0)
        return rc;
    const char *type = is_log ? (is_quant ? "qloguniform" : "loguniform") : "";
    if (is_log && !(p->low > 0.0)) {
        jsonv_path(field, sizeof field, path, "low");
        return rung_error_set(err, INVALID, field, "%s: low must be > 0 for %s", path, type);
    }
    jsonv_path(field, sizeof field, path, "high");
    if (!(p->low < p->high))
        return rung_error_set(err, INVALID, field, "%s: high must be > low", path);
    /* low + u * (high - low) must not overflow. */
    if (!isfinite(p->high - p->low))
        return rung_error_set(err, INVALID, field, "%s: high - low must be finite", path);
    if (is_log) {
        p->log_low = log(p->low);
        p->log_high = log(p->high);
        /* Two huge neighbours can share a logarithm; the cube needs a range. */
        if (!(p->log_low < p->log_high))
            return rung_error_set(err, INVALID, field, "%s: high is too close to low", path);
    }
    if (is_quant) {
        jsonv_path(field, sizeof field, path, "q");
        if (!(p->q > 0.0))
            return rung_error_set(err, INVALID, field, "%s: q must be > 0", path);
        if (fabs(p->low / p->q) > SPACE_QUANT_LIMIT || fabs(p->high / p->q) > SPACE_QUANT_LIMIT)
            return rung_error_set(err, INVALID, field,
                                  "%s: q is too small for [low, high] (more than 2^50 steps)",
                                  path);
        /* A bound that is a multiple of q up to rounding (0.3 / 0.1 is
         * 2.9999999999999996) counts as one. */
        p->kmin = ceil(p->low / p->q - 1e-9);
        p->kmax = floor(p->high / p->q + 1e-9);
        if (p->kmin > p->kmax)
            return rung_error_set(err, INVALID, field, "%s: no multiple of q in [low, high]", path);
    }
    return parse_grid_points(spec, path, p, err);
}

/* normal and qnormal: N(mean, sd^2), qnormal's rounded to a multiple of q
 * (Ray's randn and qrandn). */
static int parse_normal(const json_t *spec, const char *path, SpaceParam *p, RungError *err)
{
    char field[RUNG_FIELD_MAX];
    int rc = jsonv_number(spec, path, "mean", JSONV_REQUIRED, &p->mean, INVALID, err);
    if (rc == 0)
        rc = jsonv_number(spec, path, "sd", JSONV_REQUIRED, &p->sd, INVALID, err);
    if (rc == 0 && p->kind == SPACE_QNORMAL)
        rc = jsonv_number(spec, path, "q", JSONV_REQUIRED, &p->q, INVALID, err);
    if (rc != 0)
        return rc;
    jsonv_path(field, sizeof field, path, "sd");
    if (!(p->sd > 0.0))
        return rung_error_set(err, INVALID, field, "%s: sd must be > 0", field);
    /* The farthest values decoding gives (SPACE_NORMAL_Z sd away) must be
     * finite doubles, so that no config holds an infinity. */
    double reach = SPACE_NORMAL_Z * p->sd;
    if (!isfinite(fabs(p->mean) + reach))
        return rung_error_set(err, INVALID, field,
                              "%s: mean +- %g sd is beyond the range of a double", field,
                              SPACE_NORMAL_Z);
    p->low = p->mean - reach;
    p->high = p->mean + reach;
    if (p->kind == SPACE_QNORMAL) {
        jsonv_path(field, sizeof field, path, "q");
        if (!(p->q > 0.0))
            return rung_error_set(err, INVALID, field, "%s: q must be > 0", field);
        if (fabs(p->low / p->q) > SPACE_QUANT_LIMIT || fabs(p->high / p->q) > SPACE_QUANT_LIMIT)
            return rung_error_set(err, INVALID, field,
                                  "%s: q is too small for mean and sd (more than 2^50 steps)",
                                  field);
        /* The multiples the tails round to, all of them reachable, so that
         * space__quantize's clamping never leaves a non-multiple. */
        p->kmin = floor(p->low / p->q);
        p->kmax = ceil(p->high / p->q);
        p->low = p->kmin * p->q;
        p->high = p->kmax * p->q;
    }
    return parse_grid_points(spec, path, p, err);
}

/* randint, qrandint, lograndint, qlograndint. */
static int parse_int(const json_t *spec, const char *path, SpaceParam *p, RungError *err)
{
    char field[RUNG_FIELD_MAX];
    int rc = jsonv_int(spec, path, "low", JSONV_REQUIRED, -SPACE_INT_LIMIT, SPACE_INT_LIMIT,
                       &p->ilow, INVALID, err);
    if (rc == 0)
        rc = jsonv_int(spec, path, "high", JSONV_REQUIRED, -SPACE_INT_LIMIT, SPACE_INT_LIMIT,
                       &p->ihigh, INVALID, err);
    bool quant = p->kind == SPACE_QRANDINT || p->kind == SPACE_QLOGRANDINT;
    bool is_log = p->kind == SPACE_LOGRANDINT || p->kind == SPACE_QLOGRANDINT;
    if (rc == 0 && quant)
        rc = jsonv_int(spec, path, "q", JSONV_REQUIRED, 1, SPACE_INT_LIMIT, &p->iq, INVALID, err);
    if (rc != 0)
        return rc;
    if (is_log && p->ilow < 1) {
        jsonv_path(field, sizeof field, path, "low");
        return rung_error_set(err, INVALID, field, "%s: low must be >= 1 for %s", path,
                              p->kind == SPACE_LOGRANDINT ? "lograndint" : "qlograndint");
    }
    jsonv_path(field, sizeof field, path, "high");
    if (quant) {
        /* Ray's qrandint and qlograndint include high. */
        if (p->ihigh < p->ilow)
            return rung_error_set(err, INVALID, field, "%s: high must be >= low", path);
        p->ik0 = ceil_div(p->ilow, p->iq);
        int64_t k1 = floor_div(p->ihigh, p->iq);
        if (k1 < p->ik0) {
            jsonv_path(field, sizeof field, path, "q");
            return rung_error_set(err, INVALID, field, "%s: no multiple of q in [low, high]", path);
        }
        p->count = k1 - p->ik0 + 1;
    } else {
        if (p->ihigh <= p->ilow)
            return rung_error_set(err, INVALID, field, "%s: high must be > low (high is excluded)",
                                  path);
        p->count = p->ihigh - p->ilow;
    }
    if (is_log) {
        p->log_low = log((double)p->ilow);
        p->log_high = log((double)p->ihigh);
    }
    return parse_grid_points(spec, path, p, err);
}

/* choice (numbers, strings, booleans) and grid (any JSON values). */
static int parse_values(const json_t *spec, const char *path, SpaceParam *p, RungError *err)
{
    char field[RUNG_FIELD_MAX];
    jsonv_path(field, sizeof field, path, "values");
    const json_t *values = json_object_get(spec, "values");
    if (values == NULL || json_is_null(values))
        return rung_error_set(err, INVALID, field, "%s: required", field);
    if (!json_is_array(values))
        return rung_error_set(err, INVALID, field, "%s: must be an array", field);
    size_t n = json_array_size(values);
    if (n == 0)
        return rung_error_set(err, INVALID, field, "%s: must not be empty", field);
    if (n > SPACE_MAX_VALUES)
        return rung_error_set(err, INVALID, field, "%s: more than %d values", field,
                              SPACE_MAX_VALUES);
    if (p->kind == SPACE_CHOICE) {
        /* One object among the values makes a conditional choice. */
        for (size_t i = 0; i < n; i++)
            if (json_is_object(json_array_get(values, i)))
                p->cond = true;
        for (size_t i = 0; i < n; i++) {
            const json_t *v = json_array_get(values, i);
            char item[RUNG_FIELD_MAX + 24]; /* room for "[index]" */
            snprintf(item, sizeof item, "%s[%zu]", field, i);
            if (p->cond && (!json_is_object(v) || json_object_size(v) == 0))
                return rung_error_set(err, INVALID, item,
                                      "%s: a choice whose values are sub-spaces takes only "
                                      "non-empty objects",
                                      item);
            if (!p->cond && !json_is_number(v) && !json_is_string(v) && !json_is_boolean(v)) {
                return rung_error_set(err, INVALID, item,
                                      "%s: must be a number, a string, a boolean or a "
                                      "sub-space (an object)",
                                      item);
            }
        }
    }
    /* A deep copy: the space must not change when the caller's JSON does,
     * nor share reference counts with it across threads. */
    p->values = json_deep_copy(values);
    if (p->values == NULL)
        return out_of_memory(err);
    p->count = (int64_t)n;
    return 0;
}

/* Parses the domain (or constant) spec at `path` into p, named name. */
static int parse_param(const char *name, const char *path, const json_t *spec, SpaceParam *p,
                       RungError *err)
{
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->field, sizeof p->field, "%s", path);
    p->cube = -1;

    /* Ray passes anything that is not a domain through unchanged. */
    if (!json_is_object(spec)) {
        p->kind = SPACE_CONST;
        p->count = 1;
        p->values = json_deep_copy(spec);
        return p->values == NULL ? out_of_memory(err) : 0;
    }

    const char *type = NULL;
    int rc = jsonv_string(spec, path, "type", JSONV_REQUIRED, SPACE_MAX_TYPE, &type, INVALID, err);
    if (rc != 0)
        return rc;
    size_t d = 0;
    while (d < N_DOMAINS && strcmp(DOMAINS[d].name, type) != 0)
        d++;
    if (d == N_DOMAINS) {
        char field[RUNG_FIELD_MAX];
        jsonv_path(field, sizeof field, path, "type");
        return rung_error_set(err, INVALID, field,
                              "%s: unknown type \"%s\" (uniform, quniform, loguniform, "
                              "qloguniform, randint, qrandint, lograndint, qlograndint, "
                              "normal, qnormal, choice or grid)",
                              field, type);
    }
    p->kind = DOMAINS[d].kind;
    rc = jsonv_only_keys(spec, path, DOMAINS[d].keys, INVALID, err);
    if (rc != 0)
        return rc;
    switch (p->kind) {
    case SPACE_UNIFORM:
    case SPACE_QUNIFORM:
    case SPACE_LOGUNIFORM:
    case SPACE_QLOGUNIFORM:
        return parse_float(spec, path, p, err);
    case SPACE_RANDINT:
    case SPACE_QRANDINT:
    case SPACE_LOGRANDINT:
    case SPACE_QLOGRANDINT:
        return parse_int(spec, path, p, err);
    case SPACE_NORMAL:
    case SPACE_QNORMAL:
        return parse_normal(spec, path, p, err);
    default:
        return parse_values(spec, path, p, err);
    }
}

static bool is_sub_space(const json_t *spec)
{
    return json_is_object(spec) && json_object_get(spec, "type") == NULL;
}

bool space_has_domain(const json_t *sub_space)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)sub_space, key, v) {
        if (json_is_object(v) && (json_object_get(v, "type") != NULL || space_has_domain(v)))
            return true;
    }
    return false;
}

/* The conditional choices above params[i], innermost first: whether i and
 * j can be active at once (no choice holds them in different branches). */
static bool exclusive(const Space *s, int i, int j)
{
    for (int a = i; s->params[a].parent >= 0; a = s->params[a].parent)
        for (int b = j; s->params[b].parent >= 0; b = s->params[b].parent)
            if (s->params[a].parent == s->params[b].parent &&
                s->params[a].branch != s->params[b].branch)
                return true;
    return false;
}

/* Parses the members of one (sub-)space, the object obj at `path`, whose
 * config keys start with `prefix` (empty at the top; `sprefix` the same
 * path as a sortkey), held by branch `branch` of conditional choice
 * `parent` (-1: always active). */
static int parse_scope(Space *s, const json_t *obj, const char *path, const char *prefix,
                       const char *sprefix, int parent, int branch, int depth, RungError *err)
{
    if (depth > SPACE_MAX_DEPTH)
        return rung_error_set(err, INVALID, path, "%s: sub-spaces nested deeper than %d levels",
                              path, SPACE_MAX_DEPTH);
    const char *key;
    json_t *spec;
    /* jansson keeps insertion order, which is the order of the spec. */
    json_object_foreach((json_t *)obj, key, spec) {
        char field[RUNG_FIELD_MAX];
        jsonv_path(field, sizeof field, path, key);
        if (!name_ok(key))
            return rung_error_set(err, INVALID, field,
                                  "%s: invalid parameter name (must match "
                                  "[A-Za-z_][A-Za-z0-9_.-]{0,63})",
                                  field);
        char name[SPACE_MAX_PATH + 2], sname[SPACE_MAX_PATH + 2];
        snprintf(name, sizeof name, "%s%s%s", prefix, prefix[0] ? "." : "", key);
        snprintf(sname, sizeof sname, "%s%s%s", sprefix, sprefix[0] ? "\1" : "", key);
        if (strlen(name) > SPACE_MAX_PATH)
            return rung_error_set(err, INVALID, field,
                                  "%s: the parameter's path %.*s... is longer than %d bytes", field,
                                  40, name, SPACE_MAX_PATH);
        int rc;
        if (is_sub_space(spec)) {
            /* Such an object was a constant once (spec_load keeps it one):
             * a sub-space must sample something. */
            if (!space_has_domain(spec))
                return rung_error_set(err, INVALID, field,
                                      "%s: a sub-space without any domain; for a constant "
                                      "object use {\"type\": \"grid\", \"values\": [{...}]}",
                                      field);
            rc = parse_scope(s, spec, field, name, sname, parent, branch, depth + 1, err);
            if (rc != 0)
                return rc;
            continue;
        }
        if (s->nparams == SPACE_MAX_PARAMS)
            return rung_error_set(err, INVALID, "search_space",
                                  "search_space: more than %d parameters", SPACE_MAX_PARAMS);
        int index = s->nparams++;
        SpaceParam *p = &s->params[index];
        p->parent = parent;
        p->branch = branch;
        rc = parse_param(name, field, spec, p, err);
        if (rc != 0)
            return rc;
        /* sname is as long as name, which fits (checked above). */
        size_t slen = strlen(sname) < SPACE_MAX_PATH ? strlen(sname) : SPACE_MAX_PATH;
        memcpy(p->sortkey, sname, slen);
        p->sortkey[slen] = '\0';
        if (p->kind == SPACE_GRID && parent >= 0)
            return rung_error_set(err, INVALID, field,
                                  "%s: a grid cannot sit inside a branch of a conditional "
                                  "choice (the grid searcher enumerates the branches' domains)",
                                  field);
        if (p->kind == SPACE_GRID) {
            /* grid_size <= SAMPLER_MAX_TRIALS and count <= SPACE_MAX_VALUES,
             * so the product cannot overflow before the check. */
            s->grid_size *= p->count;
            if (s->grid_size > SAMPLER_MAX_TRIALS) {
                char vf[RUNG_FIELD_MAX];
                jsonv_path(vf, sizeof vf, field, "values");
                return rung_error_set(err, INVALID, vf,
                                      "%s: the grids have more than %lld combinations", field,
                                      SAMPLER_MAX_TRIALS);
            }
        }
        if (!p->cond)
            continue;
        s->conditional = true;
        for (int64_t b = 0; b < p->count; b++) {
            char bf[RUNG_FIELD_MAX + 32]; /* room for ".values[index]" */
            snprintf(bf, sizeof bf, "%s.values[%lld]", field, (long long)b);
            /* p may move no more: params is allocated once, full size. */
            rc = parse_scope(s, json_array_get(s->params[index].values, (size_t)b), bf, name,
                             s->params[index].sortkey, index, (int)b, depth + 1, err);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

/* The params of s sorted by sortkey (Ray's grid order), ties in spec order;
 * an insertion sort: at most SPACE_MAX_PARAMS of them, once per parse. */
static void sort_params(Space *s)
{
    for (int i = 0; i < s->nparams; i++) {
        int j = i;
        while (j > 0 && strcmp(s->params[s->sorted[j - 1]].sortkey, s->params[i].sortkey) > 0) {
            s->sorted[j] = s->sorted[j - 1];
            j--;
        }
        s->sorted[j] = i;
    }
}

int space_parse(const json_t *search_space, Space **out, RungError *err)
{
    *out = NULL;
    int rc = jsonv_object(search_space, "search_space", INVALID, err);
    if (rc != 0)
        return rc;
    Space *space = calloc(1, sizeof *space);
    /* Full size at once (a few hundred kilobytes at most): parsing a
     * branch appends while its choice's slot is held. */
    SpaceParam *params = calloc(SPACE_MAX_PARAMS, sizeof *params);
    int *keys = calloc(SPACE_MAX_PARAMS, sizeof *keys);
    int *sorted = calloc(SPACE_MAX_PARAMS, sizeof *sorted);
    if (space == NULL || params == NULL || keys == NULL || sorted == NULL) {
        free(space);
        free(params);
        free(keys);
        free(sorted);
        return out_of_memory(err);
    }
    space->params = params;
    space->keys = keys;
    space->sorted = sorted;
    space->grid_size = 1;
    rc = parse_scope(space, search_space, "search_space", "", "", -1, 0, 0, err);
    if (rc == 0)
        sort_params(space);
    for (int i = 0; rc == 0 && i < space->nparams; i++) {
        SpaceParam *p = &space->params[i];
        if (p->kind != SPACE_GRID && p->kind != SPACE_CONST)
            p->cube = space->dims++;
        if (p->cond)
            continue;
        int first = -1;
        for (int k = 0; k < space->nkeys && first < 0; k++)
            if (strcmp(space->params[space->keys[k]].name, p->name) == 0)
                first = space->keys[k];
        if (first < 0) {
            space->keys[space->nkeys++] = i;
            continue;
        }
        /* Branches of one choice may share names; anything else would
         * give one config key two values. */
        for (int j = first; j < i && rc == 0; j++)
            if (!space->params[j].cond && strcmp(space->params[j].name, p->name) == 0 &&
                !exclusive(space, i, j))
                rc = rung_error_set(err, INVALID, p->field,
                                    "%s: the parameter %s is already defined (at %s)", p->field,
                                    p->name, space->params[j].field);
    }
    if (rc != 0) {
        space_free(space);
        return rc;
    }
    *out = space;
    return 0;
}

void space_free(Space *space)
{
    if (space == NULL)
        return;
    /* calloc left unparsed slots zeroed, so a half-built space frees too. */
    for (int i = 0; i < space->nparams; i++) {
        free(space->params[i].points);
        json_decref(space->params[i].values);
    }
    free(space->params);
    free(space->keys);
    free(space->sorted);
    free(space);
}

int space_cube_dims(const Space *space)
{
    return space->dims;
}

int64_t space_grid_size(const Space *space)
{
    return space->grid_size;
}

int space_param_count(const Space *space)
{
    return space->nkeys;
}

const char *space_param_name(const Space *space, int i)
{
    if (i < 0 || i >= space->nkeys)
        return NULL;
    return space->params[space->keys[i]].name;
}

bool space_conditional(const Space *space)
{
    return space->conditional;
}

bool space_has_param(const Space *space, const char *name)
{
    for (int k = 0; k < space->nkeys; k++)
        if (strcmp(space->params[space->keys[k]].name, name) == 0)
            return true;
    return false;
}

/* A short form of v for an error message: "5", "\"adam\"", "an object". */
static void describe(const json_t *v, char *buf, size_t size)
{
    if (json_is_object(v) || json_is_array(v)) {
        snprintf(buf, size, "%s", json_is_object(v) ? "an object" : "an array");
        return;
    }
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (text == NULL) {
        snprintf(buf, size, "the value");
        return;
    }
    if (strlen(text) > 40)
        snprintf(buf, size, "%.*s...", (int)jsonv_utf8_cut(text, strlen(text), 40), text);
    else
        snprintf(buf, size, "%s", text);
    free(text);
}

/* space_check_value for the one parameter p. */
static int check_param(const SpaceParam *p, const json_t *value, const char *field, RungError *err)
{
    const char *name = p->name;
    char what[64];
    describe(value, what, sizeof what);
    switch (p->kind) {
    case SPACE_CONST:
        if (!json_equal((json_t *)value, p->values))
            return rung_error_set(err, INVALID, field, "%s: %s is not the constant search_space.%s",
                                  field, what, name);
        return 0;
    case SPACE_CHOICE:
    case SPACE_GRID:
        for (size_t i = 0; i < json_array_size(p->values); i++)
            if (json_equal((json_t *)value, json_array_get(p->values, i)))
                return 0;
        return rung_error_set(err, INVALID, field,
                              "%s: %s is not one of the values of search_space.%s", field, what,
                              name);
    case SPACE_UNIFORM:
    case SPACE_QUNIFORM:
    case SPACE_LOGUNIFORM:
    case SPACE_QLOGUNIFORM: {
        if (!json_is_number(value))
            return rung_error_set(err, INVALID, field, "%s: must be a number, not %s", field, what);
        double x = json_number_value(value);
        if (!(x >= p->low && x <= p->high))
            return rung_error_set(err, INVALID, field, "%s: %s is outside [%.17g, %.17g]", field,
                                  what, p->low, p->high);
        return 0;
    }
    case SPACE_NORMAL:
    case SPACE_QNORMAL:
        /* Any finite number, like a quniform one (not only a multiple of
         * q): a normal has no bounds. */
        if (!json_is_number(value) || !isfinite(json_number_value(value)))
            return rung_error_set(err, INVALID, field, "%s: must be a finite number, not %s", field,
                                  what);
        return 0;
    default: { /* the integer domains */
        if (!json_is_integer(value))
            return rung_error_set(err, INVALID, field, "%s: must be an integer, not %s", field,
                                  what);
        int64_t x = (int64_t)json_integer_value(value);
        bool quant = p->kind == SPACE_QRANDINT || p->kind == SPACE_QLOGRANDINT;
        bool high_in = quant;
        if (x < p->ilow || x > p->ihigh || (!high_in && x == p->ihigh))
            return rung_error_set(err, INVALID, field, "%s: %s is outside [%lld, %lld%c", field,
                                  what, (long long)p->ilow, (long long)p->ihigh,
                                  high_in ? ']' : ')');
        if (quant && x % p->iq != 0)
            return rung_error_set(err, INVALID, field, "%s: %s is not a multiple of q (%lld)",
                                  field, what, (long long)p->iq);
        return 0;
    }
    }
}

bool space__value_ok(const SpaceParam *p, const json_t *v)
{
    return v != NULL && !p->cond && check_param(p, v, "", NULL) == 0;
}

int space_check_value(const Space *space, const char *name, const json_t *value, const char *field,
                      RungError *err)
{
    /* Branches may share a name with different domains: any will do. */
    const SpaceParam *first = NULL;
    for (int i = 0; i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        if (p->cond || strcmp(p->name, name) != 0)
            continue;
        if (space__value_ok(p, value))
            return 0;
        if (first == NULL)
            first = p;
    }
    if (first == NULL)
        return rung_error_set(err, INVALID, field, "%s: names no parameter of search_space", field);
    return check_param(first, value, field, err);
}

json_t *space_config_value(const Space *space, const char *name, const json_t *value)
{
    const SpaceParam *p = NULL;
    for (int i = 0; i < space->nparams; i++) {
        const SpaceParam *q = &space->params[i];
        if (q->cond || strcmp(q->name, name) != 0)
            continue;
        if (p == NULL || space__value_ok(q, value))
            p = q;
        if (space__value_ok(q, value))
            break;
    }
    if (p == NULL || value == NULL)
        return NULL;
    if (space__is_float(p) && json_is_integer(value))
        return json_real((double)json_integer_value(value));
    return json_incref((json_t *)value);
}

/* Whether every key of point that some parameter of branch b of choice c
 * (at any depth) has is a value one of them can take, and how many such
 * keys there are (*named); keys of c's other branches only make b unfit. */
static bool branch_takes(const Space *space, int c, int b, const json_t *point, int *named)
{
    *named = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)point, key, v) {
        bool in_b = false, ok = false, in_other = false;
        for (int i = c + 1; i < space->nparams; i++) {
            const SpaceParam *p = &space->params[i];
            if (p->cond || strcmp(p->name, key) != 0)
                continue;
            /* The branch of c above i, if c is above i at all. */
            int a = i;
            while (space->params[a].parent > c)
                a = space->params[a].parent;
            if (space->params[a].parent != c)
                continue;
            if (space->params[a].branch == b) {
                in_b = true;
                ok = ok || space__value_ok(p, v);
            } else {
                in_other = true;
            }
        }
        if (in_b && !ok)
            return false;
        if (in_other && !in_b)
            return false;
        *named += in_b;
    }
    return true;
}

/* The branches of a point laid over a config: at each active conditional
 * choice, the config's branch (sel as space__resolve left it, -1 for
 * none) when the point fits it, else the first branch that fits the
 * point; fills active. -1 when no branch fits. */
static int point_branches(const Space *space, const json_t *point, bool *active, int *sel)
{
    for (int i = 0; i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        active[i] = p->parent < 0 || (active[p->parent] && sel[p->parent] == p->branch);
        if (!p->cond)
            continue;
        if (!active[i]) {
            sel[i] = -1;
            continue;
        }
        int named, pick = -1;
        if (sel[i] >= 0 && branch_takes(space, i, sel[i], point, &named))
            pick = sel[i];
        for (int b = 0; pick < 0 && b < p->count; b++)
            if (branch_takes(space, i, b, point, &named))
                pick = b;
        if (pick < 0)
            return -1;
        sel[i] = pick;
    }
    return 0;
}

int space_check_point(const Space *space, const json_t *point, const char *field, RungError *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)point, key, v) {
        char f[RUNG_FIELD_MAX];
        jsonv_path(f, sizeof f, field, key);
        int rc = space_check_value(space, key, v, f, err);
        if (rc != 0)
            return rc;
    }
    bool active[SPACE_MAX_PARAMS];
    int sel[SPACE_MAX_PARAMS];
    for (int i = 0; i < space->nparams; i++)
        sel[i] = -1;
    if (point_branches(space, point, active, sel) == 0) {
        /* Every key must be an active parameter that takes its value. */
        json_object_foreach((json_t *)point, key, v) {
            bool ok = false;
            for (int i = 0; i < space->nparams && !ok; i++)
                ok = active[i] && strcmp(space->params[i].name, key) == 0 &&
                     space__value_ok(&space->params[i], v);
            if (!ok)
                goto conflict;
        }
        return 0;
    }
conflict:
    return rung_error_set(err, INVALID, field,
                          "%s: names parameters of different branches of a conditional choice",
                          field);
}

json_t *space_conform(const Space *space, const json_t *config)
{
    bool active[SPACE_MAX_PARAMS];
    int sel[SPACE_MAX_PARAMS];
    if (!json_is_object(config) || space__resolve(space, config, active, sel) != 0)
        return NULL;
    json_t *out = json_object();
    for (int i = 0; out != NULL && i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        if (!active[i] || p->cond)
            continue;
        const json_t *v = json_object_get(config, p->name);
        if (!space__value_ok(p, v)) {
            json_decref(out);
            return NULL;
        }
        json_t *c = json_is_integer(v) && p->count == 0 && p->kind != SPACE_CONST
                        ? json_real((double)json_integer_value(v))
                        : json_incref((json_t *)v);
        /* json_object_set_new steals c, also when it fails. */
        if (c == NULL || json_object_set_new(out, p->name, c) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

json_t *space_lay_over(const Space *space, const json_t *config, const json_t *point)
{
    bool active[SPACE_MAX_PARAMS];
    int sel[SPACE_MAX_PARAMS];
    if (space__resolve(space, config, active, sel) != 0)
        for (int i = 0; i < space->nparams; i++)
            sel[i] = -1;
    if (point_branches(space, point, active, sel) != 0)
        return NULL;
    json_t *out = json_object();
    for (int i = 0; out != NULL && i < space->nparams; i++) {
        const SpaceParam *p = &space->params[i];
        if (!active[i] || p->cond)
            continue;
        const json_t *over = json_object_get(point, p->name);
        const json_t *had = json_object_get(config, p->name);
        json_t *v;
        if (over != NULL && space__value_ok(p, over))
            v = space_config_value(space, p->name, over);
        else if (had != NULL && space__value_ok(p, had))
            v = json_incref((json_t *)had);
        else if (p->kind == SPACE_CONST)
            v = json_deep_copy(p->values);
        else if (p->kind == SPACE_GRID)
            v = space__enum_value(p, 0);
        else
            v = space__decode_value(p, 0.5);
        if (v == NULL || json_object_set_new(out, p->name, v) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}
